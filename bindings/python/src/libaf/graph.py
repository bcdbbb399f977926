"""Saved-graph (.afg) bytes: verification and the readable JSON form."""

from __future__ import annotations

import ctypes
import json
from typing import Any

from . import _lib
from ._lib import lib
from .context import Context, current
from .errors import check

__all__ = ["graph_verify", "graph_to_json", "graph_from_json"]


def graph_verify(data: bytes, ctx: Context | None = None) -> dict[str, Any]:
    """Runs every loader check on .afg bytes; returns the summary (versions,
    producer, sizes, equations, primitives, host functions)."""
    data = bytes(data)
    b = _lib.Bytes()
    check(current(ctx)._using(lib.af_graph_verify, data, len(data), ctypes.byref(b)))
    summary: dict[str, Any] = json.loads(_lib.take_bytes(b))
    return summary


def graph_to_json(data: bytes, ctx: Context | None = None) -> str:
    """The readable JSON form of .afg bytes (checked first); exact round trip."""
    data = bytes(data)
    b = _lib.Bytes()
    check(current(ctx)._using(lib.af_graph_to_json, data, len(data), ctypes.byref(b)))
    return _lib.take_bytes(b).decode("utf-8")


def graph_from_json(text: str, ctx: Context | None = None) -> bytes:
    """.afg bytes from the JSON form (checked like loaded bytes)."""
    data = _lib.utf8(text, "text")
    b = _lib.Bytes()
    check(current(ctx)._using(lib.af_graph_from_json, data, len(data), ctypes.byref(b)))
    return _lib.take_bytes(b)
