"""The asyncio API: Program.acall and Context.aeval await libaf without
blocking the running loop, coroutine tools and providers run on the
awaiting caller's loop, cancelling the awaiting task stops the run."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Awaitable, TypeVar

import pytest

import libaf
from libaf import _loops

MSG = [{"role": "user", "content": "hi"}]
T = TypeVar("T")


def batched_echo(ctx: libaf.Context, latency_ms: int) -> libaf.Program:
    ctx.route("*", libaf.Provider.echo(latency_ms=latency_ms))

    def one(x: libaf.Value) -> libaf.Value:
        return libaf.lm_call([{"role": "user", "content": libaf.format("q {}", x)}], "m")

    return libaf.trace(one, "x", ctx=ctx).batch([True]).compile(ctx)


async def ticking(awaitable: Awaitable[T]) -> tuple[T, int]:
    """awaitable's result, and how many 10 ms ticks the loop ran meanwhile."""
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    t = asyncio.create_task(ticker())
    try:
        return await awaitable, ticks
    finally:
        t.cancel()


def idle(provider: libaf.Provider) -> bool:
    deadline = time.monotonic() + 2
    while provider.stats()["in_flight"] and time.monotonic() < deadline:
        time.sleep(0.01)
    return provider.stats()["in_flight"] == 0


def test_acall_does_not_block_the_loop(ctx: libaf.Context) -> None:
    program = batched_echo(ctx, 200)
    out, ticks = asyncio.run(ticking(program.acall(["a", "b"])))
    assert out.to_py() == ["m|q a", "m|q b"]
    assert ticks >= 5, "the loop stood still while the run was awaited"
    assert program.call_async == program.acall  # the older name stays


def test_cancelling_the_task_cancels_the_run(ctx: libaf.Context) -> None:
    echo = libaf.Provider.echo(latency_ms=10_000)
    program = batched_echo(ctx, 0)
    ctx.route("*", echo)

    async def main() -> None:
        task = asyncio.create_task(program.acall(["a", "b"]))
        await asyncio.sleep(0.1)
        assert echo.stats()["in_flight"] == 2
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert idle(echo), "the run's LM requests were not aborted"


def test_aeval_awaits_promises_without_blocking() -> None:
    with libaf.Context(lazy=True) as lazy:
        lazy.route("*", libaf.Provider.echo(latency_ms=200))
        a = libaf.lm_call(MSG, "a")
        b = libaf.lm_call(MSG, "b")
        assert not a.ready

        _, ticks = asyncio.run(ticking(lazy.aeval(a, b)))
        assert a.ready and b.ready
        assert (a.to_py(), b.to_py()) == ("a|hi", "b|hi")
        assert ticks >= 5
        with pytest.raises(TypeError, match="aeval"):
            asyncio.run(lazy.aeval("not a value"))  # type: ignore[arg-type]


def test_cancelling_aeval_stops_the_evaluation() -> None:
    with libaf.Context(lazy=True) as lazy:
        lazy.route("*", libaf.Provider.echo(latency_ms=10_000))
        slow = libaf.lm_call(MSG, "slow")

        async def main() -> None:
            task = asyncio.create_task(lazy.aeval(slow))
            await asyncio.sleep(0.1)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        start = time.monotonic()
        asyncio.run(main())
        with pytest.raises(libaf.Cancelled):
            slow.to_py()  # the stopped evaluation's error, also later
        assert time.monotonic() - start < 2.0
        assert lazy.stats()["lazy"]["cancelled"] >= 1


def test_acall_awaits_promise_inputs(ctx: libaf.Context) -> None:
    program = batched_echo(ctx, 0)
    with libaf.Context(lazy=True) as lazy:
        lazy.route("*", libaf.Provider.echo(latency_ms=100))
        word = libaf.lm_call(MSG, "p")
        assert not word.ready

        async def main() -> list[str]:
            out = await program.acall([word, "b"], ctx=ctx)
            return out.to_py()

        assert asyncio.run(main()) == ["m|q p|hi", "m|q b"]


def test_coroutine_tools_and_providers_run_on_the_awaiting_loop(ctx: libaf.Context) -> None:
    seen: dict[str, object] = {}

    async def tool(x: libaf.Value) -> str:
        seen["tool"] = asyncio.get_running_loop()
        await asyncio.sleep(0.01)
        return f"tool:{x}"

    async def provider(req: libaf.LmRequest) -> str:
        seen["provider"] = asyncio.get_running_loop()
        await asyncio.sleep(0.01)
        return "answer"

    ctx.register_function("t", tool, "str")
    ctx.route("*", libaf.Provider.host(provider))

    def body(x: libaf.Value) -> libaf.Value:
        said = libaf.lm_call([{"role": "user", "content": x}], "m")
        return libaf.host_call("t", said)

    program = libaf.trace(body, "x", ctx=ctx).compile(ctx)

    async def main() -> tuple[str, asyncio.AbstractEventLoop]:
        out = await program.acall("hello")
        return out.to_py(), asyncio.get_running_loop()

    out, loop = asyncio.run(main())
    assert out == "tool:answer"
    assert seen["tool"] is loop and seen["provider"] is loop
    assert not _loops._awaiting  # nothing left registered

    # A synchronous run (no awaiting loop) runs them on libaf's own loop.
    seen.clear()
    assert program("x").to_py() == "tool:answer"
    assert seen["tool"] is _loops.background_loop()


def test_a_loop_blocked_in_a_sync_call_is_not_used(ctx: libaf.Context) -> None:
    """A coroutine tool must not be sent to a loop whose thread waits,
    synchronously, for the run that needs the tool (that would never end)."""

    async def tool(x: libaf.Value) -> str:
        await asyncio.sleep(0)
        return f"t:{x}"

    ctx.register_function("t", tool, "str")
    ctx.route("*", libaf.Provider.echo(latency_ms=300))
    program = libaf.trace(lambda x: libaf.host_call("t", x), "x", ctx=ctx).compile(ctx)
    slow = libaf.trace(lambda x: libaf.lm_call([{"role": "user", "content": x}], "m"), "x", ctx=ctx).compile(ctx)

    async def main() -> str:
        pending = asyncio.create_task(slow.acall("keep the loop awaiting"))
        await asyncio.sleep(0.05)
        result: list[str] = []

        def sync_in_loop_thread() -> None:
            result.append(program("x").to_py())  # blocks this loop's thread

        sync_in_loop_thread()
        await pending
        return result[0]

    done = threading.Event()
    out: list[str] = []

    def run() -> None:
        out.append(asyncio.run(main()))
        done.set()

    threading.Thread(target=run, daemon=True).start()
    assert done.wait(10), "the coroutine tool was sent to the blocked loop"
    assert out == ["t:x"]


def test_progress_true_draws_a_line_without_tqdm(ctx: libaf.Context, capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_tqdm(name: str, *args: object, **kwargs: object) -> object:
        if name.startswith("tqdm"):
            raise ImportError("no tqdm here")
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", no_tqdm)
    program = batched_echo(ctx, 20)
    assert program(["a", "b", "c"], progress=True).to_py() == ["m|q a", "m|q b", "m|q c"]

    async def main() -> list[str]:
        out = await program.acall(["d", "e"], progress=True)
        return out.to_py()

    assert asyncio.run(main()) == ["m|q d", "m|q e"]
    err = capsys.readouterr().err
    assert "libaf: 3 LM calls, equations 3/3" in err, err
    assert "libaf: 2 LM calls, equations 3/3" in err, err
    with pytest.raises(TypeError, match="progress must be a callable"):
        program(["a"], progress="yes")


def test_progress_true_uses_tqdm_when_installed(ctx: libaf.Context, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("tqdm")
    program = batched_echo(ctx, 10)
    assert program(["a", "b", "c", "d"], progress=True).to_py()[3] == "m|q d"
    err = capsys.readouterr().err
    assert "4 LM calls" in err and "equations 3/3" in err, err


def test_cancel_scope_stops_eager_calls_of_its_thread(ctx: libaf.Context) -> None:
    echo = libaf.Provider.echo(latency_ms=5000)
    ctx.route("*", echo)
    token = libaf.CancelToken()
    threading.Timer(0.1, token.trigger).start()
    start = time.monotonic()
    with ctx.cancel_scope(token):
        with pytest.raises(libaf.Cancelled, match="cancel scope"):
            libaf.lm_call(MSG, "m", ctx=ctx)
    assert time.monotonic() - start < 2.0
    # Out of the scope the context works as before.
    ctx.route("*", libaf.Provider.echo())
    assert libaf.lm_call(MSG, "m", ctx=ctx).to_py() == "m|hi"
    with pytest.raises(TypeError, match="CancelToken"):
        with ctx.cancel_scope("no"):  # type: ignore[arg-type]
            pass


def test_ir_acall(ctx: libaf.Context) -> None:
    ctx.route("*", libaf.Provider.echo(latency_ms=50))
    ir = libaf.trace(lambda x: libaf.lm_call([{"role": "user", "content": x}], "m"), "x", ctx=ctx)

    async def main() -> str:
        out = await ir.acall("q", ctx=ctx)
        return out.to_py()

    assert asyncio.run(main()) == "m|q"
