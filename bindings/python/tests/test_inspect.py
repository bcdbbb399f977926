"""Inspection and graph queries: ancestors/descendants against a naive
reference, a valid topological order, a slice that runs, the dry-run cost."""

from __future__ import annotations

import json

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


def test_deep_queries_are_bounded_in_bytes(ctx: libaf.Context) -> None:
    # route(k, t) = switch(k, {shout: t + "!", ask: t + "?"}) + "."
    def program(k: libaf.Value, t: libaf.Value) -> libaf.Value:
        out = libaf.switch(k, {"shout": lambda x: libaf.concat(x, "!"), "ask": lambda x: libaf.concat(x, "?")}, t)
        return libaf.concat(out, ".")

    ir = libaf.trace(program, "k", "t", ctx=ctx)
    last = ir.eqn_count - 1
    want = ir.ancestors(last, deep=True)
    assert want["nested"]  # the branches' equations, under the switch
    # The answer is compact JSON: its exact length is the limit it needs.
    size = len(json.dumps(want, separators=(",", ":")).encode("utf-8"))
    assert ir.ancestors(last, deep=True, max_bytes=size) == want
    with pytest.raises(libaf.InvalidArgument, match="over the limit of 1") as e:
        ir.ancestors(last, deep=True, max_bytes=1)
    assert e.value.code == 1 and e.value.name == "INVALID_ARGUMENT"
    with pytest.raises(libaf.InvalidArgument, match=f"would be {size} bytes, over the limit of {size - 1}"):
        ir.ancestors(last, deep=True, max_bytes=size - 1)
    first = ir.prims.index("switch")
    down = ir.descendants(first, deep=True)
    assert ir.descendants(first, deep=True, max_bytes=10**6) == down
    with pytest.raises(libaf.InvalidArgument, match="over the limit"):
        ir.descendants(first, deep=True, max_bytes=1)
    for bad in (0, -1, 2**64, 1.5, True):
        with pytest.raises(ValueError, match="max_bytes"):
            ir.ancestors(last, deep=True, max_bytes=bad)


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


def _named(ctx: libaf.Context) -> libaf.Ir:
    # named(q) = lm(q, m1) inside the name scopes triage, ask.
    def program(q: libaf.Value) -> libaf.Value:
        with libaf.named("triage"), libaf.named("ask"):
            return libaf.lm_call([{"role": "user", "content": q}], "m1")

    return libaf.trace(program, "q", ctx=ctx)


def test_name_paths_are_recorded_shown_and_name_errors(ctx: libaf.Context) -> None:
    ir = _named(ctx)
    assert '@name="triage/ask"' in ir.to_text()
    assert ir.eqn(0)["name_path"] == ["triage", "ask"]
    with pytest.raises(libaf.NotFound, match="in triage/ask: "):  # no route for m1
        ir("hi", ctx=ctx)
    with pytest.raises(libaf.InvalidArgument, match="inside a trace"):
        with libaf.named("x", ctx=ctx):
            pass
    def bad(q: libaf.Value) -> libaf.Value:
        with libaf.named("a/b"):
            return q

    with pytest.raises(libaf.Error, match="one name per level"):  # the trace fails with it
        libaf.trace(bad, "q", ctx=ctx)


def test_run_summaries_add_up_echo_usage(ctx: libaf.Context) -> None:
    echo = libaf.Provider.echo()
    ctx.route("*", echo)
    p = _named(ctx).compile(ctx)
    run = p.start("hi there", ctx=ctx, summary=True)
    assert run.wait().to_py() == "m1|hi there"
    s = run.summary()
    # Echo counts words: "hi there" in (2), "m1|hi there" out (2).
    want = {"calls": 1, "failed": 0, "prompt_tokens": 2, "completion_tokens": 2, "retries": 0}
    assert {k: s["total"][k] for k in want} == want
    assert {k: s["models"]["m1"][k] for k in want} == want
    assert s["wall_ms"] >= 0 and s["total"]["in_flight_ms"] >= 0
    assert echo.stats()["prompt_tokens"] == s["total"]["prompt_tokens"]
    with pytest.raises(libaf.InvalidArgument, match="summary"):
        p.start("hi", ctx=ctx).summary()
    # A failed run has a summary too.
    bare = libaf.Context()
    failed = p.start("hi", ctx=bare, summary=True)
    with pytest.raises(libaf.NotFound):
        failed.wait()
    assert failed.summary()["total"]["calls"] == 0
