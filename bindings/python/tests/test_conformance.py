"""The shared corpus: every golden graph of tests/conformance/graphs loads
and gives the expected output or error code, as in every other binding. The
context provides what the corpus README asks of a host: host function
golden.shout (s -> s + "!") and models golden-* routed to echo."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import GOLDEN

import libaf

GRAPHS = sorted(p for p in GOLDEN.glob("*.afg") if p.with_suffix(".expected.json").exists())


def test_corpus_is_found() -> None:
    assert len(GRAPHS) >= 3, f"golden graphs not found in {GOLDEN}"


@pytest.fixture(scope="module")
def golden_ctx() -> libaf.Context:
    ctx = libaf.Context()
    ctx.register_function("golden.shout", lambda s: f"{s}!", "str")
    ctx.route("golden-*", libaf.Provider.echo())
    yield ctx
    ctx.close()


@pytest.mark.parametrize("afg", GRAPHS, ids=lambda p: p.stem)
def test_golden_graph(afg: Path, golden_ctx: libaf.Context) -> None:
    ir = libaf.Ir.load(afg, ctx=golden_ctx)
    cases = json.loads(afg.with_suffix(".expected.json").read_text())["cases"]
    assert cases
    for i, case in enumerate(cases):
        inputs = case["inputs"]
        if "error" in case:
            with pytest.raises(libaf.Error) as e:
                ir(*inputs, ctx=golden_ctx)
            assert e.value.code == case["error"], f"case {i}"
        else:
            got = ir(*inputs, ctx=golden_ctx).to_json()
            want = libaf.Value.from_json(json.dumps(case["output"])).to_json()
            assert got == want, f"case {i}"
