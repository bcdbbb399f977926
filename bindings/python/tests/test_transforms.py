"""Transforms: IR -> IR rewrites whose results run, print and save."""

from __future__ import annotations

import pytest

import libaf


def _fmt(ctx: libaf.Context) -> libaf.Ir:
    """f(x, y) = format("<{}|{a}>", x, a=y)"""
    return libaf.trace(lambda x, y: libaf.format("<{}|{a}>", x, a=y), "x", "y", ctx=ctx)


def test_pullback_gives_the_cotangent_to_every_input(ctx: libaf.Context) -> None:
    pb = _fmt(ctx).pullback(ctx=ctx)
    assert pb(["p", "q"], "g", ctx=ctx).to_py() == ["<p|q>", ["g", "g"]]


def test_pushforward(ctx: libaf.Context) -> None:
    pf = _fmt(ctx).pushforward(ctx=ctx)
    assert pf(["p", "q"], ["dp", "dq"], ctx=ctx).to_py() == ["<p|q>", "<dp|dq>"]


def test_batch(ctx: libaf.Context) -> None:
    ir = _fmt(ctx)
    assert ir.batch(ctx=ctx)(["a", "b"], ["x", "y"], ctx=ctx).to_py() == ["<a|x>", "<b|y>"]
    shared = ir.batch([True, False], ctx=ctx)
    assert shared(["a", "b"], "s", ctx=ctx).to_py() == ["<a|s>", "<b|s>"]
    with pytest.raises(libaf.InvalidArgument, match="empty"):
        shared([], "s", ctx=ctx)


def test_dce_cse_sched_validate(ctx: libaf.Context) -> None:
    ir = libaf.trace(lambda x: [x + x, x + x, libaf.format("{}", x)], "x", ctx=ctx)
    assert ir.prims == ["concat", "concat", "format"]
    ir.validate()
    cse = ir.cse(ctx=ctx)
    assert cse.prims == ["concat", "format"]
    assert cse("z", ctx=ctx).to_py() == ["zz", "zz", "z"]
    assert ir.cse(merge_nondeterministic=True, ctx=ctx).eqn_count == 2
    dce = ir.dce([False, False, True], ctx=ctx)
    assert dce.prims == ["format"]
    assert dce("z", ctx=ctx).to_py() == [None, None, "z"]
    with pytest.raises(libaf.NotFound):
        ir.eqn_sched(0)  # not scheduled
    s = ir.sched(ctx=ctx)
    level, priority = s.eqn_sched(0)
    assert level == 0 and priority > 0
    assert "@level=0" in str(s)
    with pytest.raises(libaf.InvalidArgument):
        s.eqn_sched(99)
    with pytest.raises(libaf.InvalidArgument):
        ir.dce([1], ctx=ctx)


def test_transforms_compose_and_compare(ctx: libaf.Context) -> None:
    ir = _fmt(ctx)
    twice = ir.batch(ctx=ctx).pullback(ctx=ctx)
    assert twice == ir.batch(ctx=ctx).pullback(ctx=ctx)
    assert hash(twice) == hash(ir.batch(ctx=ctx).pullback(ctx=ctx))
    assert twice != ir
    assert "digraph" in ir.to_dot()


def test_host_tool_on_the_differentiated_path_is_rejected(ctx: libaf.Context) -> None:
    ctx.register_function("t.id", lambda s: s, "str")
    ir = libaf.trace(lambda x: ctx.host_call("t.id", x), "x", ctx=ctx)
    with pytest.raises(libaf.InvalidArgument):
        ir.pullback(ctx=ctx)
