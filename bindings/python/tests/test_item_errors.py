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
    # Without it the first failure fails the run.
    with pytest.raises(libaf.ProviderError, match="refused"):
        p(qs)
    time.sleep(0.1)  # let the cancelled run's answers finish
