"""Lazy contexts: promises evaluate on read, eval() runs independent LM
calls together, a dropped promise never runs, a loop compiles once,
evaluations stop at their deadline or cancel, a promise keeps its context
alive."""

from __future__ import annotations

import gc
import threading
import time
import weakref

import pytest

import libaf

MSG = [{"role": "user", "content": "hi"}]


def ask(ctx: libaf.Context, q: str) -> libaf.Value:
    return libaf.lm_call([{"role": "user", "content": q}], "m", ctx=ctx)


def test_a_promise_evaluates_when_read() -> None:
    with libaf.Context(lazy=True) as ctx:
        h = libaf.format("Hello {}", "py", ctx=ctx)
        assert h.kind == libaf.Kind.STR
        assert not h.ready
        assert h.to_py() == "Hello py"
        assert h.ready
        assert ctx.stats()["lazy"]["evaluated"] == 1


def test_eval_runs_ten_calls_together() -> None:
    with libaf.Context(lazy=True) as ctx:
        echo = libaf.Provider.echo(latency_ms=200)
        ctx.route("*", echo)
        outs = [ask(ctx, f"q{i}") for i in range(10)]
        t0 = time.monotonic()
        ctx.eval(*outs)
        took = time.monotonic() - t0
        assert took < 1.5, f"10 calls of 200 ms took {took:.2f} s"
        assert outs[2].to_py() == "m|q2"
        assert echo.stats()["peak_in_flight"] == 10


def test_a_dropped_promise_makes_no_call() -> None:
    with libaf.Context(lazy=True) as ctx:
        echo = libaf.Provider.echo()
        ctx.route("*", echo)
        dropped = ask(ctx, "never")
        del dropped
        kept = ask(ctx, "kept")
        assert kept.to_py() == "m|kept"
        assert echo.stats()["submitted"] == 1
        assert ctx.stats()["lazy"]["dropped"] == 1


def test_a_loop_compiles_once_and_bad_input_is_refused() -> None:
    with libaf.Context(lazy=True, plan_cache={"max_entries": 8}) as ctx:
        for i in range(30):
            assert libaf.concat("n", str(i), ctx=ctx).to_py() == f"n{i}"
        cache = ctx.stats()["plan_cache"]
        assert (cache["misses"], cache["hits"]) == (1, 29)
        with libaf.Context(lazy=True) as other:
            foreign = libaf.format("{}", "x", ctx=other)
            with pytest.raises(libaf.InvalidArgument, match="another lazy context"):
                libaf.format("{}", foreign, ctx=ctx)
            with pytest.raises(libaf.InvalidArgument):
                ctx.eval(foreign)
    with pytest.raises(libaf.InvalidArgument, match="max_entries"):
        libaf.Context(lazy=True, plan_cache={"max_entries": 0})


def test_eval_with_a_timeout_stops_and_its_promises_raise_it() -> None:
    with libaf.Context(lazy=True) as ctx:
        ctx.route("*", libaf.Provider.echo(latency_ms=3000))
        p = ask(ctx, "slow")
        t0 = time.monotonic()
        with pytest.raises(libaf.Timeout):
            ctx.eval(p, timeout=0.1)
        took = time.monotonic() - t0
        assert took < 2, f"eval(timeout=0.1) took {took:.2f} s"
        with pytest.raises(libaf.Timeout, match="lm_call"):
            p.to_py()
        with pytest.raises(libaf.Timeout):  # later too
            str(p)
        assert ctx.stats()["lazy"]["timed_out"] == 1
        with pytest.raises(ValueError, match="timeout"):
            ctx.eval(ask(ctx, "x"), timeout=0)


def test_eval_cancelled_from_another_thread() -> None:
    with libaf.Context(lazy=True) as ctx:
        ctx.route("*", libaf.Provider.echo(latency_ms=3000))
        p = ask(ctx, "slow")
        token = libaf.CancelToken()
        timer = threading.Timer(0.1, token.trigger)
        timer.start()
        t0 = time.monotonic()
        with pytest.raises(libaf.Cancelled):
            ctx.eval(p, cancel=token)
        assert time.monotonic() - t0 < 2
        timer.join()
        with pytest.raises(libaf.Cancelled):
            p.to_py()
        with pytest.raises(TypeError, match="CancelToken"):
            ctx.eval(p, cancel=object())


def test_the_context_eval_timeout_bounds_a_plain_read() -> None:
    with libaf.Context(lazy=True, eval_timeout=0.1) as ctx:
        ctx.route("*", libaf.Provider.echo(latency_ms=3000))
        p = ask(ctx, "slow")
        t0 = time.monotonic()
        with pytest.raises(libaf.Timeout, match="lm_call"):
            p.to_py()
        assert time.monotonic() - t0 < 2
        # The deadline is per evaluation: a fast one is not affected.
        assert libaf.format("{}!", "ok", ctx=ctx).to_py() == "ok!"
    for bad in (0, -1, "1"):
        with pytest.raises(ValueError, match="eval_timeout"):
            libaf.Context(lazy=True, eval_timeout=bad)


def test_a_promise_keeps_its_context_alive() -> None:
    v = libaf.format("Hello {}", "py", ctx=libaf.Context(lazy=True))
    gc.collect()
    assert v.to_py() == "Hello py"

    def promises() -> tuple[libaf.Value, libaf.Value, weakref.ref]:
        ctx = libaf.Context(lazy=True)
        ctx.route("*", libaf.Provider.echo())
        pair = libaf.trace(lambda q: [libaf.concat(q, "1"), libaf.concat(q, "2")], "q")(ask(ctx, "a"), ctx=ctx)
        return ask(ctx, "b"), pair[1], weakref.ref(ctx)

    reply, item, ctx_ref = promises()
    # Trees built from promises (of one context, or of several) keep theirs too.
    built = libaf.Value([promises()[0], {"k": promises()[1]}])
    gc.collect()
    assert ctx_ref() is not None
    assert str(reply) == "m|b"
    assert item.to_py() == "m|a2"
    assert built.to_py() == ["m|b", {"k": "m|a2"}]
    # Once its promises are gone, so is the context.
    del reply, item
    gc.collect()
    assert ctx_ref() is None


def test_with_makes_a_context_current_for_its_block() -> None:
    from libaf.context import current, default_context

    with libaf.Context(lazy=True) as ctx:
        assert current() is ctx
        v = libaf.format("a{}", "b")  # no ctx=: recorded on ctx, a promise
        with libaf.Context() as inner:
            assert current() is inner
        assert current() is ctx
        assert ctx.stats()["lazy"]["recorded"] >= 1
        assert v.to_py() == "ab"
    assert current() is default_context()
