"""Saved graphs: files, bytes, the JSON form, and the loader's checks."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import hello

import libaf


def test_save_and_load_a_file(ctx: libaf.Context, tmp_path: Path) -> None:
    ir = libaf.trace(hello, "x", ctx=ctx)
    path = tmp_path / "hello.afg"
    ir.save(path)
    back = libaf.Ir.load(path, ctx=ctx)
    assert back == ir
    assert back("World", ctx=ctx).to_py() == "Hello, World!?"


def test_bytes_are_deterministic_and_round_trip(ctx: libaf.Context) -> None:
    a = libaf.trace(hello, "x", ctx=ctx).to_bytes()
    assert a == libaf.trace(hello, "x", ctx=ctx).to_bytes()
    assert a[:8] == b"\x89AFG\r\n\x1a\n"
    assert libaf.Ir.from_bytes(a, ctx=ctx).to_bytes() == a


def test_json_form_round_trips_and_verify_summarizes(ctx: libaf.Context) -> None:
    a = libaf.trace(hello, "x", ctx=ctx).to_bytes()
    text = libaf.graph_to_json(a, ctx=ctx)
    assert '"prim":"format"' in text
    assert libaf.graph_from_json(text, ctx=ctx) == a
    summary = libaf.graph_verify(a, ctx=ctx)
    assert summary["producer"].startswith("libaf")


def test_damaged_bytes_are_format_errors(ctx: libaf.Context, tmp_path: Path) -> None:
    a = bytearray(libaf.trace(hello, "x", ctx=ctx).to_bytes())
    a[-3] ^= 0xFF
    with pytest.raises(libaf.FormatError):
        libaf.Ir.from_bytes(bytes(a), ctx=ctx)
    with pytest.raises(libaf.FormatError):
        libaf.graph_verify(b"not a graph", ctx=ctx)
    with pytest.raises(libaf.IOError):
        libaf.Ir.load(tmp_path / "missing.afg", ctx=ctx)
    with pytest.raises(libaf.FormatError):
        libaf.graph_from_json('{"afg": 1}', ctx=ctx)


def test_program_save_and_load(ctx: libaf.Context, tmp_path: Path) -> None:
    program = libaf.trace(hello, "x", ctx=ctx).compile(ctx)
    path = tmp_path / "hello.program.afg"
    program.save(path)
    back = libaf.Program.load(path, ctx=ctx)
    assert back("P").to_py() == "Hello, P!?"
    assert libaf.Ir.load(path, ctx=ctx)("Q", ctx=ctx).to_py() == "Hello, Q!?"
