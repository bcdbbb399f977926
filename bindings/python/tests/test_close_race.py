"""Methods racing close() on the same object, from several threads: each use
either completes normally (its result checked) or raises the binding's
closed-handle error; none touches freed memory.

ctypes releases the GIL during every C call, so without a guard a thread
can read an object's handle, enter C with it, and meanwhile another thread
closes the object and frees what the handle points to: a use-after-free,
which crashes the process or (under ASan) is reported. The classes user
code can close while another thread uses them: Context (close(), __exit__;
Walks evaluate on their Context, and runs and programs start on it), and
LmRequest (a host provider's answer consumes it while another thread may
still stream() to it). Values, Irs, Programs, Futures, Providers,
CancelTokens and Walks are freed only by __del__, which cannot run while a
method of theirs holds a reference.

LIBAF_CLOSE_RACE_ROUNDS sets the rounds per case (default 60). Under ASan:

    LD_PRELOAD=$(gcc -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0 \\
    LIBAF_LIBRARY=build-asan/lib/libaf.so PYTHONPATH=src python3 -m pytest tests/test_close_race.py
"""

from __future__ import annotations

import os
import random
import threading
import time
from typing import Any, Callable

import pytest

import libaf

ROUNDS = int(os.environ.get("LIBAF_CLOSE_RACE_ROUNDS", "60"))
READERS = 4
#: Uses per reader per round at most (a reader stops at the closed error).
USES = 400
MSG = [{"role": "user", "content": "q"}]


def closed_context(exc: BaseException) -> bool:
    return isinstance(exc, ValueError) and str(exc) == "this libaf Context is closed"


def race(
    make: Callable[[], Any],
    use: Callable[[Any, int], None],
    close: Callable[[Any], None],
    is_closed: Callable[[BaseException], bool],
    max_delay: float = 0.003,
) -> dict[str, int]:
    """ROUNDS rounds: READERS threads call use(obj, i) in a loop while this
    thread closes obj after a random delay. A use returning is a success
    (use checks its result); raising is_closed's error ends that reader.
    Fails on anything else. Returns how many uses completed and how many
    saw the closed error (both should be > 0 for the race to be real)."""
    failures: list[str] = []
    counts = {"completed": 0, "closed": 0}
    lock = threading.Lock()
    rng = random.Random(1234)
    for r in range(ROUNDS):
        obj = make()
        start = threading.Barrier(READERS + 1)

        def reader() -> None:
            start.wait()
            done = 0
            try:
                for i in range(USES):
                    use(obj, i)
                    done += 1
            except BaseException as exc:  # noqa: BLE001 - classified below
                with lock:
                    if is_closed(exc):
                        counts["closed"] += 1
                    else:
                        failures.append(f"round {r}: {type(exc).__name__}: {exc}")
            with lock:
                counts["completed"] += done

        threads = [threading.Thread(target=reader, daemon=True) for _ in range(READERS)]
        for t in threads:
            t.start()
        start.wait()
        time.sleep(rng.uniform(0, max_delay))
        close(obj)
        close(obj)  # idempotent
        for t in threads:
            t.join(30)
            assert not t.is_alive(), "a use hung after close"
        # After the close every use is the closed error.
        with pytest.raises(BaseException) as after:
            use(obj, 0)
        assert is_closed(after.value), repr(after.value)
    assert not failures, failures[:10]
    assert counts["completed"] > 0 and counts["closed"] > 0, counts
    return counts


def test_eager_context_operations_racing_close() -> None:
    echo = libaf.Provider.echo()
    ir = libaf.trace(lambda q: libaf.concat(q, "!"), "q")
    program = ir.compile()

    def make() -> libaf.Context:
        ctx = libaf.Context()
        ctx.route("*", echo)
        ctx.register_function("t.up", lambda s: s.to_py().upper(), "str", pure=True)
        return ctx

    def use(ctx: libaf.Context, i: int) -> None:
        k = i % 8
        if k == 0:
            assert libaf.concat("a", "b", ctx=ctx).to_py() == "ab"
        elif k == 1:
            assert "plan_cache" in ctx.stats()
        elif k == 2:
            assert libaf.format("{}-{}", "x", i, ctx=ctx).to_py() == f"x-{i}"
        elif k == 3:
            assert libaf.lm_call(MSG, "m", ctx=ctx).to_py() == "m|q"
        elif k == 4:
            assert ctx.host_call("t.up", "abc").to_py() == "ABC"
        elif k == 5:
            assert ir("z", ctx=ctx).to_py() == "z!"
        elif k == 6:
            with ctx.collect("c") as got, ctx.memoize():
                assert libaf.match("a", "a", ctx=ctx).to_py() is True
                assert libaf.checkpoint("v", "k", "c", ctx=ctx).to_py() == "v"
            assert got == {"k": ["v"]}
        else:
            assert libaf.trace(lambda q: libaf.concat(q, "?"), "q", ctx=ctx).eqn_count == 1
            ctx.route("x*", echo)

    race(make, use, lambda ctx: ctx.close(), closed_context)
    del program


def test_program_runs_racing_close() -> None:
    """Starting a run uses the context; a run already started when its
    context is closed is cancelled (close cancels runs in flight)."""
    ir = libaf.trace(lambda q: libaf.lm_call([{"role": "user", "content": q}], "m"), "q")
    echo = libaf.Provider.echo()

    def make() -> tuple[libaf.Context, libaf.Program]:
        ctx = libaf.Context()
        ctx.route("*", echo)
        return ctx, ir.compile(ctx)

    def use(pair: tuple[libaf.Context, libaf.Program], i: int) -> None:
        ctx, program = pair
        if i % 2:
            assert program("x", ctx=ctx).to_py() == "m|x"
        else:
            future = program.start("y", ctx=ctx)
            assert future.wait().to_py() == "m|y"

    def is_closed(exc: BaseException) -> bool:
        return closed_context(exc) or isinstance(exc, libaf.Cancelled)

    race(make, use, lambda pair: pair[0].close(), is_closed)


def test_lazy_context_racing_close() -> None:
    """Recording and evaluating promises racing close: a use completes, or
    is the closed error; a promise of the closed context read then fails as
    libaf says (InvalidArgument: its context was freed; Cancelled: its
    evaluation was)."""

    def use(ctx: libaf.Context, i: int) -> None:
        v = libaf.concat("p", str(i), ctx=ctx)
        if i % 3 == 0:
            ctx.eval(v)
        assert v.to_py() == f"p{i}"

    def is_closed(exc: BaseException) -> bool:
        return closed_context(exc) or isinstance(exc, (libaf.InvalidArgument, libaf.Cancelled))

    race(lambda: libaf.Context(lazy=True), use, lambda ctx: ctx.close(), is_closed)


def test_walk_steps_racing_close() -> None:
    """A walk evaluates its equations on its context: each step racing the
    context's close completes or raises the closed error."""
    ir = libaf.trace(lambda q: libaf.concat(libaf.format("<{}>", q), "!"), "q")

    def use(ctx: libaf.Context, i: int) -> None:
        walk = ir.walk("w", ctx=ctx)
        for step in walk:
            assert step.prim in ("format", "concat")
        assert walk.outputs().to_py() == "<w>!"

    race(libaf.Context, use, lambda ctx: ctx.close(), closed_context)


def test_walk_made_before_close_raises_closed() -> None:
    ir = libaf.trace(lambda q: libaf.concat(q, "!"), "q")
    ctx = libaf.Context()
    walk = ir.walk("w", ctx=ctx)
    assert walk.next_step() is not None
    ctx.close()
    with pytest.raises(ValueError, match="this libaf Context is closed"):
        walk.eval()


def test_context_closed_inside_its_own_calls() -> None:
    """A close from inside a use of the same context (a traced function, a
    scope block) returns at once; the context is freed when the outer call
    ends, and later calls are the closed error."""
    ctx = libaf.Context()

    def body(q: libaf.Value) -> libaf.Value:
        out = libaf.concat(q, "!")
        ctx.close()
        return out

    assert libaf.trace(body, "q", ctx=ctx).eqn_count == 1
    with pytest.raises(ValueError, match="closed"):
        libaf.concat("a", "b", ctx=ctx)

    ctx = libaf.Context()
    with pytest.raises(ValueError, match="closed"):
        with ctx.memoize():
            ctx.close()
            libaf.concat("a", "b", ctx=ctx)
    deadline = time.monotonic() + 5
    while ctx._orphan and time.monotonic() < deadline:  # freed when the block ended
        time.sleep(0.01)
    assert not ctx._orphan and ctx._in_use() == 0


def test_lm_request_streams_racing_the_answer() -> None:
    """A host provider hands its request to threads that stream to it while
    the provider answers: each stream() completes or raises RuntimeError
    ("already answered"); the answer is delivered either way."""
    failures: list[str] = []
    counts = {"streamed": 0, "answered": 0}
    lock = threading.Lock()
    rng = random.Random(99)

    def streamer(req: libaf.LmRequest, start: threading.Barrier) -> None:
        start.wait()
        n = 0
        deadline = time.monotonic() + 10
        try:
            while time.monotonic() < deadline:  # until the answer
                req.stream("x")
                _ = req.cancelled
                n += 1
        except RuntimeError as exc:
            if str(exc) != "the LM request was already answered":
                failures.append(repr(exc))
            else:
                with lock:
                    counts["answered"] += 1
        except BaseException as exc:  # noqa: BLE001
            failures.append(f"{type(exc).__name__}: {exc}")
        with lock:
            counts["streamed"] += n

    threads: list[threading.Thread] = []

    def answer(req: libaf.LmRequest) -> str:
        start = threading.Barrier(READERS + 1)
        mine = [threading.Thread(target=streamer, args=(req, start), daemon=True) for _ in range(READERS)]
        for t in mine:
            t.start()
        threads.extend(mine)
        start.wait()
        time.sleep(rng.uniform(0, 0.002))
        return "ok"

    with libaf.Context() as ctx:
        ctx.route("*", libaf.Provider.host(answer))
        for _ in range(ROUNDS):
            assert libaf.lm_call(MSG, "m", ctx=ctx).to_py() == "ok"
    for t in threads:
        t.join(30)
        assert not t.is_alive()
    assert not failures, failures[:10]
    assert counts["streamed"] > 0 and counts["answered"] == ROUNDS * READERS, counts
