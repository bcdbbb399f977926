"""Inspection and graph queries: ancestors/descendants against a naive
reference, a valid topological order, a slice that runs, the dry-run cost."""

from __future__ import annotations

import pytest

import libaf


def _chain(ctx: libaf.Context) -> libaf.Ir:
    # chain(q) = {a: lm(q, m1), b: lm(a, m2), c: q + q}
    def program(q: libaf.Value) -> dict:
        a = libaf.lm_call([{"role": "user", "content": q}], "m1")
        b = libaf.lm_call([{"role": "user", "content": a}], "m2")
        return {"a": a, "b": b, "c": libaf.concat(q, q)}

    return libaf.trace(program, "q", ctx=ctx)


def test_queries_match_a_naive_reference(ctx: libaf.Context) -> None:
    ir = _chain(ctx)
    n = ir.eqn_count
    # Direct deps from each equation's input vars and their producers.
    direct = {i: set() for i in range(n)}
    for i in range(n):
        for atom in ir.eqn(i)["in"]:
            if "var" in atom and ir.var(atom["var"])["producer"] is not None:
                direct[i].add(ir.var(atom["var"])["producer"])
    reach = {i: set(direct[i]) for i in range(n)}
    changed = True
    while changed:
        changed = False
        for i in range(n):
            more = set().union(*(reach[k] for k in reach[i])) - reach[i]
            if more:
                reach[i] |= more
                changed = True
    for i in range(n):
        assert ir.ancestors(i)["eqns"] == sorted(reach[i])
        assert ir.descendants(i)["eqns"] == sorted(k for k in range(n) if i in reach[k])
    order = ir.inspect()["topological_order"]
    assert sorted(order) == list(range(n))
    for i in range(n):
        for k in direct[i]:
            assert order.index(k) < order.index(i)
    with pytest.raises(libaf.InvalidArgument, match="out of range"):
        ir.eqn(99)
    with pytest.raises(IndexError):
        ir.eqn(-1)


def test_eqn_describes_literals_and_params(ctx: libaf.Context) -> None:
    ir = _chain(ctx)
    lm = next(e for e in ir.inspect()["eqns"] if e["prim"] == "lm_call")
    assert {"lit": "m1", "kind": "str"} in lm["in"]
    assert lm["params"]["roles"] == ["user"]
    assert [o["path"] for o in ir.inspect()["outputs"]] == ["a", "b", "c"]
    with pytest.raises(libaf.NotFound, match="no sub-IR"):
        ir.sub(lm["index"], "body")


def test_a_slice_of_one_output_runs_and_matches(ctx: libaf.Context) -> None:
    echo = libaf.Provider.echo()
    ctx.route("*", echo)
    ir = _chain(ctx)
    full = ir("hi", ctx=ctx).to_py()
    # Echo's usage: words sent ("hi", then "m1|hi") and replied.
    assert (echo.stats()["prompt_tokens"], echo.stats()["completion_tokens"]) == (2, 2)
    b = ir.slice(["b"], ["0"])
    assert b.eqn_count < ir.eqn_count
    assert b("hi", ctx=ctx).to_py() == [full["b"]]
    assert ir.slice(["c"])("hi", ctx=ctx).to_py() == ["hihi"]
    with pytest.raises(libaf.InvalidArgument, match="not among the chosen inputs"):
        ir.slice(["b"], [])
    with pytest.raises(libaf.InvalidArgument, match="output path"):
        ir.slice(["nope"])


def test_cost_counts_calls_per_model(ctx: libaf.Context) -> None:
    assert _chain(ctx).cost(batch=3) == {
        "batch": 3,
        "total": {"calls": 6, "models": {"m1": 3, "m2": 3}},
        "critical_path": {"calls": 2, "models": {"m1": 1, "m2": 1}},
    }
    with pytest.raises(libaf.InvalidArgument, match="batch"):
        _chain(ctx).cost(batch=0)
