"""Compiled programs: call, run options, futures, asyncio."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path

import pytest
from conftest import hello

import libaf

ASK = [{"role": "user", "content": "{}"}]


def _ask(ctx: libaf.Context, model: str = "m") -> libaf.Program:
    """One LM call on the input: echo answers "<model>|<input>"."""

    def program(q: libaf.Value) -> libaf.Value:
        return libaf.lm_call([{"role": "user", "content": q}], model)

    return libaf.trace(program, "q", ctx=ctx).compile(ctx)


class Gate:
    """A host provider that holds every request until released, and records
    whether libaf reported it cancelled."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        self.saw_cancel = threading.Event()

    def __call__(self, req: libaf.LmRequest) -> str:
        self.started.set()
        while not self.release.wait(0.01):
            if req.cancelled:
                self.saw_cancel.set()
                raise libaf.Cancelled("gate: the run went away")
        return "released"


def test_compile_and_call(ctx: libaf.Context) -> None:
    program = libaf.trace(hello, "x", ctx=ctx).compile(ctx)
    assert program("A").to_py() == "Hello, A!?"
    assert program.call("B").to_py() == "Hello, B!?"
    with pytest.raises(libaf.InvalidArgument):
        program(1)
    with pytest.raises(libaf.InvalidArgument):
        program()
    with pytest.raises(TypeError):
        libaf.Program.compile("not an ir", ctx)
    with pytest.raises(TypeError):
        libaf.Program()


def test_a_saved_program_compiles_nothing_when_loaded_and_run(ctx: libaf.Context, tmp_path: Path) -> None:
    program = libaf.trace(hello, "x", ctx=ctx).compile(ctx)
    assert ctx.stats()["programs"]["compiles"] == 1
    program.save(tmp_path / "hello.afg")
    fresh = libaf.Context()
    loaded = libaf.Program.load(tmp_path / "hello.afg", fresh)
    for name in ("A", "B", "C"):
        assert loaded.call(name, ctx=fresh).to_py() == f"Hello, {name}!?"
    assert fresh.stats()["programs"]["compiles"] == 0


def test_keep_going_turns_failures_into_values(ctx: libaf.Context) -> None:
    def program(q: libaf.Value) -> list:
        return [libaf.lm_call([{"role": "user", "content": q}], "no-route"), libaf.concat(q, "!")]

    p = libaf.trace(program, "q", ctx=ctx).compile(ctx)
    with pytest.raises(libaf.NotFound, match="no-route"):
        p("x")
    out = p("x", keep_going=True).to_py()
    assert out[1] == "x!"
    assert out[0]["error"]["name"] == "NOT_FOUND" and out[0]["error"]["code"] == 2


def test_timeout_progress_and_profile(ctx: libaf.Context, tmp_path: Path) -> None:
    gate = Gate()
    ctx.route("slow", libaf.Provider.host(gate))
    with pytest.raises(libaf.Timeout):
        _ask(ctx, "slow")("q", timeout=0.05)
    assert gate.saw_cancel.wait(5)

    ctx.route("m", libaf.Provider.echo())
    seen: list[tuple[int, int]] = []
    profile = tmp_path / "profile.json"
    out = _ask(ctx)("q", progress=lambda d, t: seen.append((d, t)), profile_path=profile)
    assert out.to_py() == "m|q"
    assert seen and seen[-1][0] == seen[-1][1]
    assert "traceEvents" in json.loads(profile.read_text()) or json.loads(profile.read_text())
    f = _ask(ctx).start("q", profile=True)
    assert f.wait().to_py() == "m|q" and f.ready()
    assert "lm_call" in f.profile()
    with pytest.raises(libaf.InvalidArgument):
        _ask(ctx).start("q").profile()  # no profile was asked for
    with pytest.raises(TypeError):
        _ask(ctx)("q", options=libaf.RunOptions(), keep_going=True)


def test_profile_event_marks_the_profile_of_the_calling_run(ctx: libaf.Context, tmp_path: Path) -> None:
    def marked(s: libaf.Value) -> str:
        libaf.profile_event("my-marker", {"k": 1})
        return f"{s}!"

    ctx.register_function("t.marked", marked, "str")
    program = libaf.trace(lambda x: libaf.host_call("t.marked", x), "x", ctx=ctx).compile(ctx)

    f = program.start("hi", profile=True)
    assert f.wait().to_py() == "hi!"
    profile = f.profile()
    assert "my-marker" in profile and '"ph":"i"' in profile
    event = next(e for e in json.loads(profile)["traceEvents"] if e.get("name") == "my-marker")
    assert event["ph"] == "i" and event["cat"] == "host" and event["args"]["args"] == {"k": 1}

    path = tmp_path / "profile.json"
    assert program("yo", profile_path=path).to_py() == "yo!"
    text = path.read_text()
    assert "my-marker" in text and '"ph":"i"' in text

    # A run without a profile, an eager call, no run at all: nothing happens.
    assert program("no").to_py() == "no!"
    assert ctx.host_call("t.marked", "e").to_py() == "e!"
    libaf.profile_event("outside")
    libaf.profile_event("outside", {"k": [1, 2]})

    with pytest.raises(libaf.InvalidArgument):
        libaf.profile_event("")
    with pytest.raises(libaf.InvalidArgument):
        libaf.profile_event("m", [1])  # type: ignore[arg-type]
    with pytest.raises(libaf.InvalidArgument):
        libaf.profile_event("m", "not an object")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        libaf.profile_event(None)  # type: ignore[arg-type]

    # Inside a tool the error fails the call, with the InvalidArgument as its cause.
    def bad(s: libaf.Value) -> str:
        libaf.profile_event("m", [1])  # type: ignore[arg-type]
        return "unreachable"

    ctx.register_function("t.bad_marker", bad, "str")
    bad_program = libaf.trace(lambda x: libaf.host_call("t.bad_marker", x), "x", ctx=ctx).compile(ctx)
    with pytest.raises(libaf.CallbackError) as e:
        bad_program("x", profile=True)
    assert isinstance(e.value.__cause__, libaf.InvalidArgument)


def test_max_value_bytes_bounds_what_one_equation_builds(ctx: libaf.Context) -> None:
    # 1000 copies of a 5-byte input: 5000 bytes, over a budget of 100.
    program = libaf.trace(lambda x: libaf.format("{0}" * 1000, x), "x", ctx=ctx).compile(ctx)
    with pytest.raises(libaf.OutOfMemory, match="max_value_bytes") as e:
        program("hello", max_value_bytes=100)
    assert e.value.code == 11 and e.value.name == "OUT_OF_MEMORY"
    assert "format" in str(e.value)  # names the primitive
    with pytest.raises(MemoryError):  # the Python base it is caught by
        program.call("hello", options=libaf.RunOptions(max_value_bytes=100))

    async def over_budget() -> None:
        await program.call_async("hello", max_value_bytes=100)

    with pytest.raises(libaf.OutOfMemory, match="max_value_bytes"):
        asyncio.run(over_budget())
    # The default budget (1 GiB), and one large enough, let it through.
    assert program("hello").to_py() == "hello" * 1000
    assert program("hello", max_value_bytes=5000).to_py() == "hello" * 1000
    assert program.start("hello", max_value_bytes=10**6).wait().to_py() == "hello" * 1000
    for bad in (0, -1, 2**64, 1.5, True):
        with pytest.raises(ValueError, match="max_value_bytes"):
            program("hello", max_value_bytes=bad)


def test_cancel_token_and_future_cancel(ctx: libaf.Context) -> None:
    gate = Gate()
    ctx.route("gate", libaf.Provider.host(gate))
    token = libaf.CancelToken()
    f = _ask(ctx, "gate").start("q", cancel=token)
    assert gate.started.wait(5)
    assert not f.ready()
    token.trigger()
    assert token.triggered
    with pytest.raises(libaf.Cancelled):
        f.wait()
    assert gate.saw_cancel.wait(5)

    gate2 = Gate()
    ctx.route("gate2", libaf.Provider.host(gate2))
    f = _ask(ctx, "gate2").start("q")
    assert gate2.started.wait(5)
    f.cancel()
    with pytest.raises(libaf.Cancelled):
        f.wait()


def test_on_done_runs_once(ctx: libaf.Context) -> None:
    ctx.route("m", libaf.Provider.echo())
    f = _ask(ctx).start("q")
    done = threading.Event()
    f.on_done(done.set)
    assert done.wait(5)
    later: list[int] = []
    f.on_done(lambda: later.append(1))  # already finished: runs at once
    assert later == [1]


def test_call_async_runs_concurrently(ctx: libaf.Context) -> None:
    ctx.route("m", libaf.Provider.echo(latency_ms=50))
    program = _ask(ctx)

    async def main() -> list:
        return await asyncio.gather(*(program.call_async(f"q{i}") for i in range(8)))

    outs = asyncio.run(main())
    assert [o.to_py() for o in outs] == [f"m|q{i}" for i in range(8)]


def test_call_async_errors_are_raised(ctx: libaf.Context) -> None:
    program = _ask(ctx, "unrouted")

    async def main() -> None:
        await program.call_async("q")

    with pytest.raises(libaf.NotFound):
        asyncio.run(main())


def test_cancelling_the_task_cancels_the_run(ctx: libaf.Context) -> None:
    gate = Gate()
    ctx.route("gate", libaf.Provider.host(gate))
    program = _ask(ctx, "gate")

    async def main() -> None:
        task = asyncio.create_task(program.call_async("q"))
        while not gate.started.is_set():
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert gate.saw_cancel.wait(5)  # the in-flight request was told


def test_scopes_collect_inject_memoize(ctx: libaf.Context) -> None:
    ir = libaf.trace(lambda x: libaf.checkpoint(libaf.concat(x, "!"), "k", "c"), "x", ctx=ctx)
    with ctx.collect("c") as got:
        assert ir("a", ctx=ctx).to_py() == "a!"
    assert got == {"k": ["a!"]}
    with ctx.inject("c", {"k": ["injected"]}):
        assert ir("a", ctx=ctx).to_py() == "injected"
    calls: list[str] = []
    # Only a pure tool's calls may be answered from the scope (an effectful
    # one always runs: tests/test_effects.py).
    ctx.register_function("t.count", lambda s: calls.append(str(s)) or "ok", "str", pure=True)
    # A call is answered from the scope once an identical one has finished
    # (two equal calls of one program may run at once, and then both run).
    once = libaf.trace(lambda x: libaf.host_call("t.count", x), "x", ctx=ctx)
    with ctx.memoize():
        once("a", ctx=ctx)
        once("a", ctx=ctx)
    assert calls == ["a"]


def test_program_called_inside_a_trace_is_inlined(ctx: libaf.Context) -> None:
    program = libaf.trace(hello, "x", ctx=ctx).compile(ctx)
    outer = libaf.trace(lambda x: program(libaf.concat(x, "-"), ctx=ctx), "x", ctx=ctx)
    assert outer.prims == ["concat", "format", "concat"]
    assert outer("a", ctx=ctx).to_py() == "Hello, a-!?"


def _waits_in_future(thread_id: int | None) -> bool:
    """Whether that thread is inside libaf's Future.wait."""
    import sys

    frame = sys._current_frames().get(thread_id)
    while frame is not None:
        if frame.f_code.co_name == "wait" and frame.f_code.co_filename.endswith("program.py"):
            return True
        frame = frame.f_back
    return False


def test_ctrl_c_while_waiting_cancels_the_run(ctx: libaf.Context) -> None:
    import os
    import signal

    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")
    gate = Gate()
    ctx.route("gate", libaf.Provider.host(gate))
    program = _ask(ctx, "gate")

    sent = threading.Event()

    def interrupt() -> None:
        if gate.started.wait(30):
            # The request can start before start() has returned to Python:
            # interrupt only once the main thread waits in Future.wait.
            main = threading.main_thread().ident
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and not _waits_in_future(main):
                time.sleep(0.01)
            os.kill(os.getpid(), signal.SIGINT)
            sent.set()
        # If the wait could not be interrupted, let the run end so the test
        # fails on the checks below instead of hanging.
        gate.saw_cancel.wait(3)
        gate.release.set()

    # A process started in the background by a non-interactive shell
    # inherits SIGINT ignored, and Python then leaves it ignored: make it
    # raise KeyboardInterrupt here whatever started the tests.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    threading.Thread(target=interrupt, daemon=True).start()
    interrupted = False
    try:
        program("q")
    except KeyboardInterrupt:
        interrupted = True
    finally:
        signal.signal(signal.SIGINT, previous)
    assert interrupted, (
        f"no KeyboardInterrupt (request started: {gate.started.is_set()}, SIGINT sent: {sent.is_set()})"
    )
    assert gate.saw_cancel.wait(5)
