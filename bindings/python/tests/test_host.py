"""Host tools: Python callables that programs call by name."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from conftest import cause_of

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


def _fan_out(ctx: libaf.Context, name: str) -> libaf.Program:
    """Eight independent calls of tool name."""
    return libaf.trace(lambda x: [libaf.host_call(name, i) for i in range(8)], "x", ctx=ctx).compile(ctx)


def test_async_tools_hold_no_thread_and_overlap(ctx: libaf.Context) -> None:
    in_flight = 0
    peak = 0
    lock = threading.Lock()

    async def slow(i: libaf.Value) -> str:
        nonlocal in_flight, peak
        with lock:
            in_flight += 1
            peak = max(peak, in_flight)
        await asyncio.sleep(0.2)
        with lock:
            in_flight -= 1
        return f"done:{i}"

    ctx.register_function("t.slow", slow, "str")
    program = _fan_out(ctx, "t.slow")
    t0 = time.monotonic()
    out = program("x").to_py()
    elapsed = time.monotonic() - t0
    print(f"8 async 200 ms tools: {elapsed * 1000:.0f} ms")
    assert out == [f"done:{i}" for i in range(8)]
    assert peak == 8
    assert elapsed < 0.8


def test_blocking_tools_run_on_the_host_pool() -> None:
    with libaf.Context(host_threads=8) as ctx:

        def slow(i: libaf.Value) -> str:
            time.sleep(0.2)
            return f"done:{i}"

        ctx.register_function("t.slow", slow, "str", blocking=True)
        t0 = time.monotonic()
        out = _fan_out(ctx, "t.slow")("x").to_py()
        elapsed = time.monotonic() - t0
        print(f"8 blocking 200 ms tools, pool of 8: {elapsed * 1000:.0f} ms")
        assert out == [f"done:{i}" for i in range(8)]
        assert elapsed < 0.8


def test_cancellation_reaches_a_coroutine_tool(ctx: libaf.Context) -> None:
    cancelled = threading.Event()

    async def forever(i: libaf.Value) -> str:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    ctx.register_function("t.forever", forever, "str")
    t0 = time.monotonic()
    with pytest.raises(libaf.Timeout):
        _fan_out(ctx, "t.forever")("x", timeout=0.1)
    assert time.monotonic() - t0 < 2
    assert cancelled.wait(2)


def test_async_tool_wrong_result_names_the_tool(ctx: libaf.Context) -> None:
    async def wrong(i: libaf.Value) -> int:
        return 42

    ctx.register_function("t.wrong", wrong, "str")
    with pytest.raises(libaf.InvalidArgument, match='"t.wrong"'):
        ctx.host_call("t.wrong", 1)
    with pytest.raises(ValueError, match="blocking=True"):
        ctx.register_function("t.both", wrong, "str", blocking=True)


def test_eager_timeout_and_host_wait_bound_a_hung_tool() -> None:
    """eager_timeout bounds an eager tool call; host_wait bounds how long
    closing the context waits for a blocking tool still running."""
    release = threading.Event()

    def hangs(s: libaf.Value) -> libaf.Value:
        release.wait(10)
        return s

    ctx = libaf.Context(eager_timeout=0.1, host_wait=0.1)
    ctx.register_function("t.hangs", hangs, "str", blocking=True)
    t0 = time.monotonic()
    with pytest.raises(libaf.Timeout, match="eager_timeout_ms of 100 ms"):
        ctx.host_call("t.hangs", "x")
    t1 = time.monotonic()
    ctx.close()  # the tool still hangs: its thread is abandoned
    t2 = time.monotonic()
    release.set()
    assert t1 - t0 < 5 and t2 - t1 < 5, (t1 - t0, t2 - t1)
    for bad in (0, -1, "1", True):
        with pytest.raises(ValueError, match="positive seconds"):
            libaf.Context(eager_timeout=bad)  # type: ignore[arg-type]


def test_base_exception_in_a_coroutine_tool_fails_only_its_call(ctx: libaf.Context) -> None:
    """KeyboardInterrupt or SystemExit raised by a coroutine tool is that
    call's error (its cause); the shared event loop goes on serving every
    other coroutine tool and async provider."""

    async def interrupted(s: libaf.Value) -> str:
        raise KeyboardInterrupt

    async def exits(s: libaf.Value) -> str:
        raise SystemExit(3)

    async def fine(s: libaf.Value) -> str:
        await asyncio.sleep(0.001)
        return f"fine {s}"

    ctx.register_function("t.interrupted", interrupted, "str")
    ctx.register_function("t.exits", exits, "str")
    ctx.register_function("t.fine", fine, "str")
    # Timeouts: a dead loop would leave the calls waiting forever.
    ok = libaf.trace(lambda x: libaf.host_call("t.fine", x), "x", ctx=ctx).compile(ctx)
    for name, kind in (("t.interrupted", KeyboardInterrupt), ("t.exits", SystemExit)):
        program = libaf.trace(lambda x, n=name: libaf.host_call(n, x), "x", ctx=ctx).compile(ctx)
        with pytest.raises(libaf.CallbackError) as e:
            program("x", timeout=10)
        assert isinstance(cause_of(e.value, kind), kind)
        assert ok("y", timeout=10).to_py() == "fine y"
    # A new context uses the same loop, still alive.
    other = libaf.Context(eager_timeout=10)
    other.register_function("t.fine", fine, "str")
    assert other.host_call("t.fine", "z").to_py() == "fine z"
