"""Handles and callbacks: what libaf holds is released, misuse raises, and
concurrent use from threads works."""

from __future__ import annotations

import gc
import threading

import pytest
from conftest import hello

import libaf
from libaf import _callbacks


def new_handles(before: set[int]) -> set[int]:
    """Callback handles made since `before` that are still alive (handles
    of earlier tests may be released meanwhile: only new ones count)."""
    gc.collect()
    start = max(before, default=0)
    return {h for h in _callbacks._handles if h > start}


def test_trace_callbacks_are_released() -> None:
    before = set(_callbacks._handles)
    for _ in range(50):
        libaf.trace(hello, "x")
    with pytest.raises(libaf.CallbackError):
        libaf.trace(lambda x: 1 / 0, "x")
    assert not new_handles(before)


def test_provider_and_tool_callbacks_are_released_with_their_context() -> None:
    before = set(_callbacks._handles)
    ctx = libaf.Context()
    provider = libaf.Provider.host(lambda req: "ok")
    ctx.route("*", provider)
    ctx.register_function("t.f", lambda s: s, "str")
    assert len(new_handles(before)) == 2
    assert libaf.lm_call([{"role": "user", "content": "q"}], "m", ctx=ctx).to_py() == "ok"
    ctx.close()
    del provider
    assert not new_handles(before)


def test_progress_callbacks_are_released_after_runs_and_failed_starts(ctx: libaf.Context) -> None:
    program = libaf.trace(hello, "x", ctx=ctx).compile(ctx)
    before = set(_callbacks._handles)
    seen: list[int] = []
    assert program("x", progress=lambda d, t: seen.append(d)).to_py() == "Hello, x!?"
    with pytest.raises(libaf.InvalidArgument):
        program(1, progress=lambda d, t: None)  # the inputs are checked before the run
    # A run's callbacks are released before the caller has its result.
    assert seen and not new_handles(before)


def test_closed_context_is_a_clear_error() -> None:
    ctx = libaf.Context()
    ctx.close()
    ctx.close()  # idempotent
    with pytest.raises(ValueError, match="closed"):
        libaf.concat("a", "b", ctx=ctx)
    with pytest.raises(TypeError, match="libaf.Context"):
        libaf.concat("a", "b", ctx="not a context")


def test_bad_run_options(ctx: libaf.Context) -> None:
    program = libaf.trace(hello, "x", ctx=ctx).compile(ctx)
    with pytest.raises(ValueError, match="timeout"):
        program("x", timeout=-1)
    with pytest.raises(TypeError, match="progress"):
        program("x", progress="no")
    with pytest.raises(TypeError, match="CancelToken"):
        program("x", cancel=object())
    with pytest.raises(TypeError):
        program("x", no_such_option=True)


def test_one_program_from_many_threads(ctx: libaf.Context) -> None:
    program = libaf.trace(hello, "x", ctx=ctx).compile(ctx)
    results: dict[int, str] = {}

    def worker(i: int) -> None:
        for j in range(20):
            results[i * 100 + j] = program(f"{i}.{j}").to_py()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 80
    assert all(v == f"Hello, {k // 100}.{k % 100}!?" for k, v in results.items())


def test_traced_functions_on_several_threads_use_their_own_trace() -> None:
    errors: list[BaseException] = []
    irs: list[libaf.Ir] = []

    def worker() -> None:
        try:
            for _ in range(10):
                irs.append(libaf.trace(hello, "x"))
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(irs) == 40 and all(ir == irs[0] for ir in irs)


EXIT_SCRIPT = """
import time, libaf
libaf.route("*", libaf.Provider.host(lambda r: (time.sleep(0.2), "x")[1]))
libaf.register_function("t", lambda s: s, "str")
p = libaf.trace(lambda q: libaf.lm_call([{"role": "user", "content": libaf.host_call("t", q)}], "m"), "q").compile()
print(p("a").to_py())
other = libaf.Context()
other.register_function("u", lambda s: s, "str")
f = p.start("b")  # still in flight when the interpreter exits
print("exiting")
"""


def test_interpreter_exits_cleanly_with_callbacks_and_runs_in_flight() -> None:
    # Contexts are closed at exit while Python still runs; freeing them
    # during teardown instead ran destroy callbacks into a dying interpreter.
    import os
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-c", EXIT_SCRIPT], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["x", "exiting"]
    assert "Exception ignored" not in r.stderr
