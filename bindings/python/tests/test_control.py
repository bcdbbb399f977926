"""switch and while_loop with Python callables traced into branches."""

from __future__ import annotations

import pytest

import libaf


def _route(ctx: libaf.Context) -> libaf.Ir:
    def program(kind: libaf.Value, text: libaf.Value) -> libaf.Value:
        return libaf.switch(
            kind,
            {
                "shout": lambda t: libaf.concat(t, "!"),
                "ask": lambda t: libaf.concat(t, "?"),
            },
            text,
        )

    return libaf.trace(program, "k", "t", ctx=ctx)


def test_switch_runs_the_named_branch(ctx: libaf.Context) -> None:
    ir = _route(ctx)
    assert "switch" in ir.prims
    assert ir("shout", "hi", ctx=ctx).to_py() == "hi!"
    assert ir("ask", "hi", ctx=ctx).to_py() == "hi?"
    with pytest.raises(libaf.NotFound, match="ask"):  # the message lists the branches
        ir("other", "hi", ctx=ctx)


def test_switch_accepts_traced_irs_and_runs_outside_a_trace(ctx: libaf.Context) -> None:
    upper = libaf.trace(lambda t: libaf.concat(t, "!"), "x", ctx=ctx)
    assert libaf.switch("a", {"a": upper, "b": lambda t: t}, "x", ctx=ctx).to_py() == "x!"


def test_switch_branches_must_agree(ctx: libaf.Context) -> None:
    with pytest.raises(libaf.InvalidArgument):
        libaf.switch("a", {"a": lambda t: t, "b": lambda t: [t]}, "x", ctx=ctx)
    with pytest.raises(TypeError, match="branch 'a'"):
        libaf.switch("a", {"a": 3}, "x", ctx=ctx)
    with pytest.raises(TypeError, match="mapping"):
        libaf.switch("a", [lambda t: t], "x", ctx=ctx)


def test_exception_in_a_branch_is_the_cause(ctx: libaf.Context) -> None:
    def bad(t: libaf.Value) -> libaf.Value:
        raise KeyError("in a branch")

    with pytest.raises(libaf.Error) as e:
        libaf.trace(lambda k, t: libaf.switch(k, {"a": bad}, t), "k", "t", ctx=ctx)
    cause = e.value
    while cause.__cause__ is not None:
        cause = cause.__cause__
    assert isinstance(cause, KeyError)


def test_while_loop_with_python_callables(ctx: libaf.Context) -> None:
    def program(s: libaf.Value) -> libaf.Value:
        return libaf.while_loop(
            lambda st: libaf.match(st["done"], "no"),
            lambda st: {"text": libaf.concat(st["text"], "a"), "done": st["done"]},
            {"text": s, "done": "no"},
            max_iters=3,
        )

    ir = libaf.trace(program, "x", ctx=ctx)
    assert "while_loop" in ir.prims
    assert ir("b", ctx=ctx).to_py() == {"text": "baaa", "done": "no"}


def test_while_loop_rejects_bad_arguments(ctx: libaf.Context) -> None:
    with pytest.raises(ValueError, match="max_iters"):
        libaf.while_loop(lambda s: True, lambda s: s, "x", max_iters=-1, ctx=ctx)
    with pytest.raises(libaf.InvalidArgument):  # cond must return a bool
        libaf.while_loop(lambda s: s, lambda s: s, "x", max_iters=2, ctx=ctx)
    with pytest.raises(libaf.InvalidArgument):  # body must keep the state's kinds
        libaf.while_loop(lambda s: libaf.match(s, "x"), lambda s: [s], "x", max_iters=2, ctx=ctx)


def test_branch_closing_over_an_outer_traced_value_names_the_fix(ctx: libaf.Context) -> None:
    def program(k: libaf.Value, x: libaf.Value) -> libaf.Value:
        return libaf.switch(k, {"a": lambda t: libaf.concat(t, x)}, "literal")  # x is not an operand

    with pytest.raises(libaf.InvalidArgument) as e:  # the operation's own error escapes both traces
        libaf.trace(program, "k", "x", ctx=ctx)
    assert "pass it to this trace as an input" in str(e.value)
