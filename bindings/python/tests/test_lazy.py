"""Lazy contexts: promises evaluate on read, eval() runs independent LM
calls together, a dropped promise never runs, a loop compiles once."""

from __future__ import annotations

import time

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
