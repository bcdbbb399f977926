"""A program traced in Python is byte-identical to the same program traced
in C: each golden graph here was saved by libaf from a C trace, and the
Python trace of the same program must give the same .afg bytes."""

from __future__ import annotations

import pytest
from conftest import GOLDEN, hello

import libaf


def trees_and_tags(name: libaf.Value, opts: libaf.Value) -> dict:
    text = libaf.format("{greeting}, {0}! x{times}", name, greeting=opts["greeting"], times=opts["times"])
    same = libaf.match(name, "Ada")
    with libaf.tag("golden"):
        marked = libaf.checkpoint(text, "text", "golden")
        with libaf.tag("inner"):
            frozen = libaf.stop_gradient(marked)
    return {"text": libaf.depends(frozen, same), "same": same, "none": None, "const": 1.5}


def control_flow(key: libaf.Value, text: libaf.Value) -> dict:
    switched = libaf.switch(
        key, {"loud": lambda t: libaf.concat(t, "!"), "quiet": lambda t: libaf.format("({})", t)}, text
    )
    looped = libaf.while_loop(lambda s: libaf.match(s, s), lambda s: libaf.concat(s, "."), text, max_iters=3)
    return {"switched": switched, "looped": looped}


CASES = {
    "hello": (hello, ["x"]),
    "trees_and_tags": (trees_and_tags, ["x", {"greeting": "g", "times": 1}]),
    "control_flow": (control_flow, ["k", "t"]),
}


@pytest.mark.parametrize("name", CASES)
def test_python_trace_matches_the_golden_bytes(name: str) -> None:
    fn, examples = CASES[name]
    ir = libaf.trace(fn, *examples)
    golden = (GOLDEN / f"{name}.afg").read_bytes()
    assert ir.to_bytes() == golden, f"{name}:\n{ir}\n{libaf.graph_to_json(golden)}"
