"""Host tools: Python callables that programs call by name."""

from __future__ import annotations

import asyncio
import threading

import pytest

import libaf


def test_sync_tool_runs_traced_and_eager(ctx: libaf.Context) -> None:
    threads = set()

    def shout(s: libaf.Value) -> str:
        threads.add(threading.get_ident())
        return str(s).upper() + "!"

    ctx.register_function("t.shout", shout, "str")
    assert ctx.host_call("t.shout", "hi").to_py() == "HI!"
    ir = libaf.trace(lambda x: libaf.host_call("t.shout", x), "x", ctx=ctx)
    assert ir.prims == ["host_call"]
    assert ir.compile(ctx)("abc").to_py() == "ABC!"
    assert threads


def test_tool_decorator_and_structured_results(ctx: libaf.Context) -> None:
    @ctx.tool("t.stats", {"n": "int", "words": ["str", "str"]})
    def stats(s: libaf.Value) -> dict:
        words = str(s).split()
        return {"n": len(words), "words": words[:2]}

    ir = libaf.trace(lambda x: stats(x), "x", ctx=ctx)
    assert ir("a b c", ctx=ctx).to_py() == {"n": 3, "words": ["a", "b"]}


def test_async_tool(ctx: libaf.Context) -> None:
    async def slow_echo(s: libaf.Value) -> str:
        await asyncio.sleep(0.01)
        return f"async {s}"

    ctx.register_function("t.async", slow_echo, "str")
    ir = libaf.trace(lambda x: libaf.host_call("t.async", x), "x", ctx=ctx)
    assert ir.compile(ctx)("y").to_py() == "async y"


def test_exception_in_a_tool_is_the_cause(ctx: libaf.Context) -> None:
    class ToolFailed(RuntimeError):
        pass

    def broken(s: libaf.Value) -> str:
        raise ToolFailed("disk full")

    ctx.register_function("t.broken", broken, "str")
    program = libaf.trace(lambda x: libaf.host_call("t.broken", x), "x", ctx=ctx).compile(ctx)
    with pytest.raises(libaf.CallbackError) as e:
        program("x")
    cause = e.value
    while cause.__cause__ is not None and not isinstance(cause, ToolFailed):
        cause = cause.__cause__
    assert isinstance(cause, ToolFailed) and "disk full" in str(cause)


def test_wrong_result_kind_and_unknown_tool(ctx: libaf.Context) -> None:
    ctx.register_function("t.bad", lambda s: 3, "str")
    with pytest.raises(libaf.InvalidArgument):
        ctx.host_call("t.bad", "x")
    with pytest.raises(libaf.NotFound, match="t.bad"):  # lists the registered names
        ctx.host_call("t.missing", "x")
    with pytest.raises(TypeError):
        ctx.register_function("t.x", "not callable", "str")
    with pytest.raises(libaf.InvalidArgument):
        ctx.register_function("", lambda s: s, "str")
    with pytest.raises(libaf.InvalidArgument):
        ctx.register_function("t.kinds", lambda s: s, "no-such-kind")


def test_replacing_a_tool_releases_the_old_callable(ctx: libaf.Context) -> None:
    from libaf import _callbacks

    before = max(_callbacks._handles, default=0)
    for i in range(5):
        ctx.register_function("t.same", lambda s, i=i: f"{i}", "str")
    assert len([h for h in _callbacks._handles if h > before]) == 1  # only the last one lives
    assert ctx.host_call("t.same", "x").to_py() == "4"
