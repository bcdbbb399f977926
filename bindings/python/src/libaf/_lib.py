"""The raw C API (capi/include/af/af.h) through ctypes.

ctypes rather than cffi: it is in the standard library, so the wheel carries
only libaf.so and pure Python (no compiled extension module, no build-time C
compiler beyond libaf's own), and ctypes releases the GIL around every C call,
which libaf's worker threads need to call back into Python.

The declarations are generated from af.h into _abi.py (capi/abi/afabi.py);
this module loads libaf, applies them, and re-exports them: everything else
uses the function objects and types through here.
"""

from __future__ import annotations

import ctypes
import os
from typing import Any
from ctypes import c_void_p
from pathlib import Path

from ._abi import *  # noqa: F401,F403 (the generated declarations, used as _lib.X)
from ._abi import AF_ABI_VERSION, SIGNATURES


def _find_library() -> str:
    # LIBAF_LIBRARY lets a developer test against a build tree; an installed
    # wheel carries libaf.so beside this file.
    override = os.environ.get("LIBAF_LIBRARY")
    if override:
        return override
    here = Path(__file__).resolve().parent / "libaf.so"
    if here.exists():
        return str(here)
    raise ImportError(
        f"libaf.so not found beside {here.parent}: install the package with "
        "`pip install ./bindings/python`, or set LIBAF_LIBRARY to a built libaf.so"
    )


def _load() -> ctypes.CDLL:
    path = _find_library()
    try:
        return ctypes.CDLL(path)
    except OSError as e:
        raise ImportError(
            f"cannot load libaf from {path}: {e}. Reinstall the package "
            "(`pip install ./bindings/python`) or point LIBAF_LIBRARY at a built libaf.so"
        ) from e


lib = _load()


for _name, (_restype, _argtypes) in SIGNATURES.items():
    _fn = getattr(lib, _name)
    _fn.restype = _restype
    _fn.argtypes = _argtypes


_exiting = False


def release(obj: object, free: object) -> None:
    """Frees obj._ptr with free, once. Once the interpreter has begun to exit
    (context.py closes every context at exit, then calls stop_releasing),
    nothing more is freed: a free could run a destroy callback into an
    interpreter that is being torn down. The process is ending anyway."""
    ptr = getattr(obj, "_ptr", None)
    if ptr and not _exiting:
        obj._ptr = None  # type: ignore[attr-defined]
        free(ptr)  # type: ignore[operator]


def stop_releasing() -> None:
    global _exiting
    _exiting = True


def exiting() -> bool:
    """True once nothing more may be freed (see release)."""
    return _exiting


def take_bytes(b: Bytes) -> bytes:
    """Copies an owned af_bytes_t into Python bytes and frees it."""
    try:
        return ctypes.string_at(b.data, b.len) if b.len else b""
    finally:
        lib.af_bytes_free(ctypes.byref(b))


def handles(items: list[Any]) -> "ctypes.Array[ctypes.c_void_p]":
    """A C array of the raw handles of items (objects with a ._ptr)."""
    arr = (c_void_p * max(len(items), 1))()
    for i, item in enumerate(items):
        arr[i] = item._ptr
    return arr


def utf8(s: str, what: str) -> bytes:
    if not isinstance(s, str):
        raise TypeError(f"{what} must be a str, got {type(s).__name__}")
    return s.encode("utf-8", "surrogatepass")


if lib.af_abi_version() != AF_ABI_VERSION:
    raise ImportError(
        f"libaf ABI {lib.af_abi_version()} does not match this binding's ABI {AF_ABI_VERSION}"
    )
