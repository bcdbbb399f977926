"""Ctrl-C while Python waits for libaf: KeyboardInterrupt comes at once in
every call that may block (programs are covered in test_programs.py), and
only those calls leave the calling thread."""

from __future__ import annotations

import os
import signal
import threading
import time
from typing import Callable, Iterator

import pytest

import libaf
from libaf import _blocking

MSG = [{"role": "user", "content": "hi"}]
SLOW_MS = 5000
#: Generous: the wait wakes every _blocking.SLICE_S (50 ms).
PROMPT_S = 1.0


@pytest.fixture(autouse=True)
def sigint() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")
    # A process started in the background by a non-interactive shell
    # inherits SIGINT ignored, and Python then leaves it ignored: make it
    # raise KeyboardInterrupt here whatever started the tests.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def interrupt(call: Callable[[], object], after: float = 0.2) -> float:
    """Runs call(), sending SIGINT to the process `after` seconds into it;
    the seconds from the signal to the KeyboardInterrupt call raised."""
    sent: list[float] = []

    def send() -> None:
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Timer(after, send)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            call()
        return time.monotonic() - sent[0]
    finally:
        timer.cancel()  # the call ended before: no stray signal later


class Slow:
    """A host provider answering after SLOW_MS, or once released."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def __call__(self, req: libaf.LmRequest) -> str:
        self.release.wait(SLOW_MS / 1000)
        return "late"


def abandoned_call_frees_its_context(ctx: libaf.Context, slow: Slow) -> None:
    """The interrupted call still runs: ctx, closed meanwhile, is freed only
    when it returns."""
    ctx.close()
    assert ctx._orphan  # the free the call still running leaves to its return
    with pytest.raises(ValueError, match="closed"):
        libaf.concat("a", "b", ctx=ctx)
    slow.release.set()
    deadline = time.monotonic() + 5
    while ctx._orphan and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not ctx._orphan and ctx._in_use() == 0


def test_ctrl_c_cancels_an_ir_call() -> None:
    echo = libaf.Provider.echo(latency_ms=SLOW_MS)
    with libaf.Context() as ctx:
        ctx.route("*", echo)
        ir = libaf.trace(lambda q: libaf.lm_call([{"role": "user", "content": q}], "m"), "q", ctx=ctx)
        took = interrupt(lambda: ir("q", ctx=ctx))
        assert took < PROMPT_S, f"KeyboardInterrupt {took:.2f} s after SIGINT"
        assert wait_idle(echo), "the run was not cancelled"
        assert not ctx._orphan and ctx._in_use() == 0  # nothing left running on it


def test_ctrl_c_cancels_an_eager_lm_call() -> None:
    echo = libaf.Provider.echo(latency_ms=SLOW_MS)
    with libaf.Context() as ctx:
        ctx.route("*", echo)
        took = interrupt(lambda: libaf.lm_call(MSG, "m", ctx=ctx))
        assert took < PROMPT_S, f"KeyboardInterrupt {took:.2f} s after SIGINT"
        assert wait_idle(echo), "the LM request was not aborted"


def test_under_another_sigint_handler_the_call_is_abandoned() -> None:
    """A SIGINT handler of the program's own (here one raising
    KeyboardInterrupt) gets no watcher: the call runs on a worker, the
    waiting thread is interrupted, the call is abandoned to its end."""

    def own_handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, own_handler)
    try:
        for call in ("ir", "lm_call"):
            slow = Slow()
            ctx = libaf.Context()
            ctx.route("*", libaf.Provider.host(slow))
            if call == "ir":
                ir = libaf.trace(lambda q: libaf.lm_call([{"role": "user", "content": q}], "m"), "q", ctx=ctx)
                took = interrupt(lambda: ir("q", ctx=ctx))
            else:
                took = interrupt(lambda: libaf.lm_call(MSG, "m", ctx=ctx))
            assert took < PROMPT_S, f"KeyboardInterrupt {took:.2f} s after SIGINT"
            abandoned_call_frees_its_context(ctx, slow)
    finally:
        signal.signal(signal.SIGINT, previous)


def wait_idle(provider: libaf.Provider) -> bool:
    deadline = time.monotonic() + 2
    while provider.stats()["in_flight"] and time.monotonic() < deadline:
        time.sleep(0.01)
    return provider.stats()["in_flight"] == 0


def test_ctrl_c_cancels_a_lazy_read() -> None:
    echo = libaf.Provider.echo(latency_ms=SLOW_MS)
    with libaf.Context(lazy=True) as ctx:
        ctx.route("*", echo)
        p = libaf.lm_call(MSG, "m", ctx=ctx)
        took = interrupt(p.to_py)
        assert took < PROMPT_S, f"KeyboardInterrupt {took:.2f} s after SIGINT"
        assert wait_idle(echo), "the evaluation was not cancelled"
        with pytest.raises(libaf.Cancelled, match="lm_call"):
            str(p)
        # An eager operation given a pending promise evaluates it the same way.
        q = libaf.lm_call(MSG, "m", ctx=ctx)
        with libaf.Context() as eager:
            took = interrupt(lambda: libaf.format("{}!", q, ctx=eager))
        assert took < PROMPT_S, f"KeyboardInterrupt {took:.2f} s after SIGINT"
        assert wait_idle(echo)


def test_ctrl_c_cancels_eval() -> None:
    echo = libaf.Provider.echo(latency_ms=SLOW_MS)
    with libaf.Context(lazy=True) as ctx:
        ctx.route("*", echo)
        p = libaf.lm_call(MSG, "m", ctx=ctx)
        took = interrupt(lambda: ctx.eval(p))
        assert took < PROMPT_S, f"KeyboardInterrupt {took:.2f} s after SIGINT"
        assert wait_idle(echo), "the evaluation was not cancelled"
        with pytest.raises(libaf.Cancelled):
            p.to_py()
        # A token given to eval is the one Ctrl-C triggers.
        token = libaf.CancelToken()
        took = interrupt(lambda: ctx.eval(libaf.lm_call(MSG, "m", ctx=ctx), cancel=token))
        assert took < PROMPT_S and token.triggered


def test_only_calls_that_may_wait_leave_the_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    hops: list[object] = []
    submit = _blocking._submit
    monkeypatch.setattr(_blocking, "_submit", lambda call: (hops.append(call), submit(call)))
    with libaf.Context(lazy=True) as lazy, libaf.Context() as eager:
        lazy.route("*", libaf.Provider.echo())
        eager.route("*", libaf.Provider.echo())
        p = libaf.lm_call(MSG, "m", ctx=lazy)  # recorded
        libaf.concat("a", "b", ctx=eager)
        assert not hops
        # An evaluation takes a cancel token: it stays here, SIGINT's
        # watcher cancels it (unless another SIGINT handler is installed).
        assert p.to_py() == "m|hi"
        assert not hops
        assert p.to_py() == "m|hi" and str(p) == "m|hi" and p.ready  # ready: read here
        assert libaf.concat(p, "!", ctx=eager).to_py() == "m|hi!"
        assert not hops
        # So does an eager LM call, in a cancel scope on its context.
        assert libaf.lm_call(MSG, "m", ctx=eager).to_py() == "m|hi"
        assert not hops
        previous = signal.signal(signal.SIGINT, lambda *_: None)
        try:  # another SIGINT handler: no watcher, so a worker
            assert libaf.lm_call(MSG, "m", ctx=lazy).to_py() == "m|hi"
            assert libaf.lm_call(MSG, "m", ctx=eager).to_py() == "m|hi"
        finally:
            signal.signal(signal.SIGINT, previous)
        # Run scopes belong to their thread: calls in them stay on it.
        with eager.memoize():
            libaf.lm_call(MSG, "m", ctx=eager)
        # So do calls in a trace, and on other threads.
        libaf.trace(lambda q: libaf.lm_call([{"role": "user", "content": q}], "m"), "q", ctx=eager)
        worker = threading.Thread(target=lambda: libaf.lm_call(MSG, "m", ctx=eager))
        worker.start()
        worker.join()
        assert len(hops) == 2
