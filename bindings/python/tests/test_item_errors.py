"""Per-item errors in batched runs (item_errors=True / AF_RUN_ITEM_ERRORS)."""

from __future__ import annotations

import threading
import time

import pytest

import libaf


class FailEveryThird:
    """Host provider: "q<i>" with i % 3 == 0 fails at once; the others are
    answered "ok q<i>" after 30 ms, noting whether libaf cancelled them."""

    def __init__(self) -> None:
        self.cancelled = 0
        self.lock = threading.Lock()

    def __call__(self, req: libaf.LmRequest) -> str:
        content = req.messages[-1]["content"]
        if int(content[1:]) % 3 == 0:
            raise RuntimeError(f"item {content} refused")
        time.sleep(0.03)
        if req.cancelled:
            with self.lock:
                self.cancelled += 1
        return "ok " + content


def _answer_and_mark(ctx: libaf.Context) -> libaf.Program:
    def one(q: libaf.Value) -> list:
        a = libaf.lm_call([{"role": "user", "content": q}], "m")
        return [a, libaf.concat(a, "!")]

    return libaf.trace(one, "q", ctx=ctx).batch(ctx=ctx).compile(ctx)


def test_failing_items_become_error_values_and_the_rest_complete(ctx: libaf.Context) -> None:
    host = FailEveryThird()
    ctx.route("m", libaf.Provider.host(host))
    p = _answer_and_mark(ctx)
    qs = [f"q{i}" for i in range(9)]
    answers, marked = p(qs, item_errors=True).to_py()
    assert len(answers) == len(marked) == 9
    for i in range(9):
        if i % 3 == 0:
            err = answers[i]["error"]
            assert err["code"] == 6 and err["name"] == "PROVIDER"
            assert f"item q{i} refused" in err["message"]
            assert marked[i] == answers[i]  # the later step passes the error on
        else:
            assert answers[i] == f"ok q{i}" and marked[i] == f"ok q{i}!"
    assert host.cancelled == 0
    # to_py(errors=True): each failed item is the exception it stands for.
    answers, marked = p(qs, item_errors=True).to_py(errors=True)
    for i in range(9):
        if i % 3 == 0:
            assert isinstance(answers[i], libaf.ProviderError) and answers[i].code == 6
            assert f"item q{i} refused" in str(answers[i]) and answers[i].message == str(answers[i])
        else:
            assert answers[i] == f"ok q{i}" and marked[i] == f"ok q{i}!"
    failed = [a for a in answers if isinstance(a, libaf.Error)]
    assert len(failed) == 3
    # A dict that merely looks like one in other ways stays a dict.
    look = libaf.to_value({"error": {"code": 6, "name": "PROVIDER"}, "x": 1}).to_py(errors=True)
    assert look == {"error": {"code": 6, "name": "PROVIDER"}, "x": 1}
    # Without it the first failure fails the run.
    with pytest.raises(libaf.ProviderError, match="refused"):
        p(qs)
    time.sleep(0.1)  # let the cancelled run's answers finish


def test_a_failed_item_skips_its_later_lm_calls_and_unrouted_models_fail_their_item(ctx: libaf.Context) -> None:
    host = FailEveryThird()
    ctx.route("m", libaf.Provider.host(host))
    ctx.route("echo", libaf.Provider.echo())
    seen: list[str] = []
    ctx.route("spy", libaf.Provider.host(lambda req: seen.append(req.messages[-1]["content"]) or "spied"))

    def two_calls(q: libaf.Value, model: libaf.Value) -> libaf.Value:
        a = libaf.lm_call([{"role": "user", "content": q}], "m")
        b = libaf.lm_call([{"role": "user", "content": a}], "spy")
        return libaf.lm_call([{"role": "user", "content": b}], model)

    p = libaf.trace(two_calls, "q", "echo", ctx=ctx).batch(ctx=ctx).compile(ctx)
    out = p(["q0", "q1", "q2", "q4"], ["echo", "echo", "nowhere", "echo"], item_errors=True).to_py()
    assert "item q0 refused" in out[0]["error"]["message"]
    assert out[1] == "echo|spied" and out[3] == "echo|spied"
    assert out[2]["error"]["name"] == "NOT_FOUND" and "nowhere" in out[2]["error"]["message"]
    assert sorted(seen) == ["ok q1", "ok q2", "ok q4"]  # q0's later call was never made
    # Every item failing: the run still succeeds, with an error value per item.
    out = p(["q0", "q3"], ["echo", "echo"], item_errors=True).to_py()
    assert [o["error"]["code"] for o in out] == [6, 6]


def test_a_failing_host_tool_fails_only_its_item(ctx: libaf.Context) -> None:
    # No LM call: the batched host_call runs item after item on one thread.
    def lookup(key: libaf.Value) -> str:
        if str(key).startswith("bad"):
            raise KeyError(str(key))
        return str(key).upper()

    ctx.register_function("lookup", lookup, "str")
    p = libaf.trace(lambda k: libaf.host_call("lookup", k) + "!", "k", ctx=ctx).batch(ctx=ctx).compile(ctx)
    out = p(["a", "bad1", "c"], item_errors=True).to_py()
    assert out[0] == "A!" and out[2] == "C!"
    assert out[1]["error"]["name"] == "CALLBACK" and "lookup" in out[1]["error"]["message"]
    with pytest.raises(libaf.CallbackError):
        p(["a", "bad1"])
