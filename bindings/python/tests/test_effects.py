"""Effects: a host tool is effectful unless registered pure=True. An
effectful call runs exactly once per run (never dropped when unused, never
merged with an equal call, never memoized, run unread on a lazy context); a
pure one may be dropped, merged and memoized. Every test below counts calls,
so it fails if the flag were ignored either way."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from typing import Callable

import pytest

import libaf
from libaf import _callbacks


class Calls:
    """The tools "send" (effectful: the default) and "lookup" (pure) on a
    context, counting their calls. Both return their argument with a prefix."""

    def __init__(self, ctx: libaf.Context) -> None:
        self.n: Counter[str] = Counter()
        self._lock = threading.Lock()
        ctx.register_function("send", self._tool("sent"), "str")
        ctx.register_function("lookup", self._tool("found"), "str", pure=True)

    def _tool(self, tag: str) -> Callable[[libaf.Value], str]:
        def fn(s: libaf.Value) -> str:
            with self._lock:
                self.n[tag] += 1
            return f"{tag}:{s}"

        return fn

    @property
    def sent(self) -> int:
        return self.n["sent"]

    @property
    def found(self) -> int:
        return self.n["found"]


def unused_calls(x: libaf.Value) -> libaf.Value:
    """x, calling send(x) and lookup(x) and reading neither."""
    libaf.host_call("send", x)
    libaf.host_call("lookup", x)
    return x


def twice(name: str) -> Callable[[libaf.Value], libaf.Value]:
    """x -> concat(name(x), name(x)): two equal calls."""
    return lambda x: libaf.concat(libaf.host_call(name, x), libaf.host_call(name, x))


def host_eqns(ir: libaf.Ir) -> list[dict]:
    return [ir.eqn(i) for i, p in enumerate(ir.prims) if p == "host_call"]


def test_an_unused_effectful_call_runs_an_unused_pure_one_does_not(ctx: libaf.Context) -> None:
    calls = Calls(ctx)
    ir = libaf.trace(unused_calls, "x", ctx=ctx)
    assert ir("a", ctx=ctx).to_py() == "a"
    assert (calls.sent, calls.found) == (1, 0)
    program = ir.compile(ctx)
    assert program("b").to_py() == "b"
    assert (calls.sent, calls.found) == (2, 0)
    # dce keeps the effectful call only.
    assert [e["params"]["name"] for e in host_eqns(ir.dce(ctx=ctx))] == ["send"]


def test_equal_pure_calls_merge_equal_effectful_calls_do_not(ctx: libaf.Context) -> None:
    calls = Calls(ctx)
    send2 = libaf.trace(twice("send"), "x", ctx=ctx)
    lookup2 = libaf.trace(twice("lookup"), "x", ctx=ctx)
    assert send2.compile(ctx)("a").to_py() == "sent:asent:a"
    assert calls.sent == 2
    assert lookup2.compile(ctx)("a").to_py() == "found:afound:a"
    assert calls.found == 1
    # cse: not even merge_nondeterministic merges effectful calls.
    assert len(host_eqns(send2.cse(merge_nondeterministic=True, ctx=ctx))) == 2
    assert len(host_eqns(lookup2.cse(ctx=ctx))) == 1


def test_memoize_answers_only_pure_calls(ctx: libaf.Context) -> None:
    calls = Calls(ctx)
    send2 = libaf.trace(twice("send"), "x", ctx=ctx).compile(ctx)
    lookup2 = libaf.trace(twice("lookup"), "x", ctx=ctx).compile(ctx)
    with ctx.memoize():
        for _ in range(2):
            assert send2("a").to_py() == "sent:asent:a"
            assert lookup2("a").to_py() == "found:afound:a"
    assert (calls.sent, calls.found) == (4, 1)


def test_lazy_context_runs_a_dropped_effectful_call_at_eval() -> None:
    with libaf.Context(lazy=True) as ctx:
        calls = Calls(ctx)
        dropped = ctx.host_call("send", "a")
        del dropped
        dropped = ctx.host_call("lookup", "a")
        del dropped
        assert (calls.sent, calls.found) == (0, 0)  # recorded, not run
        ctx.eval()
        assert (calls.sent, calls.found) == (1, 0)
        # Evaluated by eval, then read: it ran once.
        kept = ctx.host_call("send", "b")
        ctx.eval()
        assert kept.to_py() == "sent:b"
        assert calls.sent == 2
        # A dropped effectful call also runs at the next evaluation.
        dropped = ctx.host_call("send", "c")
        del dropped
        assert libaf.concat("x", "y", ctx=ctx).to_py() == "xy"
        assert calls.sent == 3


def test_async_and_blocking_tools_registered_pure(ctx: libaf.Context) -> None:
    n: Counter[str] = Counter()
    lock = threading.Lock()

    async def lookup_async(s: libaf.Value) -> str:
        await asyncio.sleep(0.001)
        with lock:
            n["async"] += 1
        return f"async:{s}"

    def lookup_pool(s: libaf.Value) -> str:
        with lock:
            n["blocking"] += 1
        return f"pool:{s}"

    ctx.register_function("lookup_async", lookup_async, "str", pure=True)
    ctx.register_function("lookup_pool", lookup_pool, "str", blocking=True, pure=True)
    ctx.register_function("send_pool", lookup_pool, "str", blocking=True)
    assert ctx.host_call("lookup_async", "q").to_py() == "async:q"
    assert ctx.host_call("lookup_pool", "q").to_py() == "pool:q"
    assert n == {"async": 1, "blocking": 1}
    for name in ("lookup_async", "lookup_pool", "send_pool"):
        ir = libaf.trace(twice(name), "x", ctx=ctx)
        assert host_eqns(ir)[0]["effects"] is (name == "send_pool")
        ir.compile(ctx)("a")
    # The pure ones merged their two equal calls; the effectful one did not.
    assert n == {"async": 2, "blocking": 4}


def test_blocking_with_a_coroutine_function_is_invalid(ctx: libaf.Context) -> None:
    async def lookup(s: libaf.Value) -> str:
        return str(s)

    before = set(_callbacks._handles)
    for pure in (False, True):
        with pytest.raises(libaf.InvalidArgument, match="blocking=True is for plain functions") as e:
            ctx.register_function("t.both", lookup, "str", blocking=True, pure=pure)
        assert "AF_FUNCTION" not in str(e.value) and "af_register" not in str(e.value)
    assert set(_callbacks._handles) == before  # destroy ran: no handle leaked
    with pytest.raises(libaf.NotFound):
        ctx.host_call("t.both", "x")


def test_eqn_json_shows_pure_and_effects(ctx: libaf.Context) -> None:
    Calls(ctx)
    ir = libaf.trace(unused_calls, "x", ctx=ctx)
    send, lookup = host_eqns(ir)
    assert send["params"]["name"] == "send" and send["effects"] is True
    assert "pure" not in send["params"]
    assert lookup["params"]["name"] == "lookup" and lookup["effects"] is False
    assert lookup["params"]["pure"] is True
    # A saved graph keeps the flags it was traced with, whatever is
    # registered under those names when it runs.
    loaded = libaf.Ir.from_bytes(ir.to_bytes(), ctx)
    assert loaded == ir and host_eqns(loaded)[1]["params"]["pure"] is True
    swapped: Counter[str] = Counter()
    ctx.register_function("send", lambda s: swapped.update(["send"]) or "s", "str", pure=True)
    ctx.register_function("lookup", lambda s: swapped.update(["lookup"]) or "l", "str")
    assert loaded.compile(ctx)("a").to_py() == "a"
    assert swapped == {"send": 1}


def test_module_level_helpers_and_the_tool_decorator_take_pure(ctx: libaf.Context) -> None:
    n: Counter[str] = Counter()

    @ctx.tool("t.pure", "str", pure=True)
    def pure_tool(s: libaf.Value) -> str:
        n["method"] += 1
        return str(s)

    @libaf.tool("t.pure_module", "str", ctx=ctx, pure=True)
    def pure_module(s: libaf.Value) -> str:
        n["module"] += 1
        return str(s)

    libaf.register_function("t.pure_fn", lambda s: n.update(["fn"]) or str(s), "str", ctx, blocking=True, pure=True)
    libaf.register_function("t.effect_fn", lambda s: n.update(["effect"]) or str(s), "str", ctx)
    for call in (pure_tool, pure_module, lambda x: libaf.host_call("t.pure_fn", x),
                 lambda x: libaf.host_call("t.effect_fn", x)):
        ir = libaf.trace(lambda x, c=call: libaf.concat(c(x), c(x)), "x", ctx=ctx)
        assert ir.compile(ctx)("a").to_py() == "aa"
    assert n == {"method": 1, "module": 1, "fn": 1, "effect": 2}
