"""Walking an IR one equation at a time."""

from __future__ import annotations

import pytest
from conftest import hello

import libaf


def test_walk_evaluates_each_step(ctx: libaf.Context) -> None:
    ir = libaf.trace(hello, "x", ctx=ctx)
    walk = ir.walk("W", ctx=ctx)
    seen = [(s.index, s.prim, s.inputs.to_py()) for s in walk]
    assert seen == [(0, "format", ["W"]), (1, "concat", ["Hello, W!", "?"])]
    assert walk.outputs().to_py() == "Hello, W!?"


def test_walk_host_supplies_outputs(ctx: libaf.Context) -> None:
    walk = libaf.trace(hello, "x", ctx=ctx).walk("W", ctx=ctx)
    step = walk.next_step()
    assert step is not None and step.prim == "format"
    with pytest.raises(libaf.InvalidArgument):
        walk.outputs()  # equations remain
    with pytest.raises(libaf.InvalidArgument):
        walk.send(42)  # format outputs a str
    walk.send("Bonjour")
    assert walk.run().to_py() == "Bonjour?"


def test_walk_checks_inputs(ctx: libaf.Context) -> None:
    with pytest.raises(libaf.InvalidArgument):
        libaf.trace(hello, "x", ctx=ctx).walk(3, ctx=ctx)
