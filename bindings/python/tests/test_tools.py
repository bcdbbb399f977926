"""Tool calling: libaf.lm_tool_call (af_lm_tool_call) and libaf.tool_results
(af_tool_results). Eager on the echo provider (which calls each tool once, in
order, with its smallest arguments, then answers "<model>|<last message>"),
traced, the agent loop (while_loop over a scan of switches on host tools)
traced, saved, loaded and rerun, a host provider answering tool calls, a lazy
context, and the errors; the README's agent loop, run as written."""

from __future__ import annotations

import contextlib
import io
import json

import pytest
from conftest import REPO

import libaf

MSG = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "1 + 2? capital of France?"}]
TOOLS = [
    {"name": "add", "description": "The sum of two integers.",
     "parameters": {"a": {"type": "int", "min": 1}, "b": {"type": "int", "min": 2}}},
    {"name": "lookup", "parameters": {"key": {"type": "enum", "values": ["capital_of_france", "boiling_point"]}}},
]
FACTS = {"capital_of_france": "Paris", "boiling_point": "100 C"}
KEYS = ["arguments", "called", "names", "text", "turn"]


@pytest.fixture
def echo_ctx(ctx: libaf.Context) -> libaf.Context:
    ctx.route("m", libaf.Provider.echo())
    return ctx


def _register_tools(ctx: libaf.Context, calls: list) -> None:
    def add(args: libaf.Value) -> str:
        calls.append(("add", str(args)))
        a = json.loads(str(args))
        return str(a["a"] + a["b"])

    def lookup(args: libaf.Value) -> str:
        calls.append(("lookup", str(args)))
        return FACTS[json.loads(str(args))["key"]]

    ctx.register_function("add", add, "str")
    ctx.register_function("lookup", lookup, "str")


def test_eager_conversation_on_echo(echo_ctx: libaf.Context) -> None:
    ctx = echo_ctx
    r1 = libaf.lm_tool_call(MSG, "", "m", TOOLS, ctx=ctx)
    assert isinstance(r1, libaf.Value)
    r1 = r1.to_py()
    assert sorted(r1) == KEYS
    assert r1["called"] is True and r1["text"] == "" and r1["names"] == ["add"]
    assert [json.loads(a) for a in r1["arguments"]] == [{"a": 1, "b": 2}]
    turn = json.loads(r1["turn"])
    assert turn["role"] == "assistant"
    assert [(c["id"], c["name"]) for c in turn["tool_calls"]] == [("call_0", "add")]

    h1 = libaf.tool_results("", r1["turn"], ["3"], ctx=ctx)
    assert h1.kind == libaf.Kind.STR
    msgs = json.loads(h1.to_py())
    assert len(msgs) == 2 and msgs[0] == turn
    assert msgs[1]["role"] == "tool" and msgs[1]["tool_call_id"] == "call_0" and msgs[1]["content"] == "3"

    r2 = libaf.lm_tool_call(MSG, h1, "m", TOOLS, ctx=ctx).to_py()  # a Value history is fine too
    assert r2["called"] is True and r2["names"] == ["lookup"]
    assert [json.loads(a) for a in r2["arguments"]] == [{"key": "capital_of_france"}]
    assert json.loads(r2["turn"])["tool_calls"][0]["id"] == "call_1"
    h2 = libaf.tool_results(h1, r2["turn"], ["Paris"], ctx=ctx).to_py()
    assert len(json.loads(h2)) == 4

    r3 = libaf.lm_tool_call(MSG, h2, "m", TOOLS, ctx=ctx).to_py()
    assert r3["called"] is False and r3["names"] == [] and r3["arguments"] == []
    assert r3["text"] == "m|Paris"  # the last message: the last tool's result
    h3 = json.loads(libaf.tool_results(h2, r3["turn"], [], ctx=ctx).to_py())
    assert len(h3) == 5 and h3[-1]["role"] == "assistant" and h3[-1]["content"] == "m|Paris"
    # "[]" is no history, as "" is.
    assert libaf.lm_tool_call(MSG, "[]", "m", TOOLS, ctx=ctx).to_py() == r1


def test_sampling_params_and_a_tool_without_arguments(echo_ctx: libaf.Context) -> None:
    ctx = echo_ctx
    tools = [{"name": "now"}]
    r = libaf.lm_tool_call(MSG, "", "m", tools, params={"temperature": 0, "max_tokens": 32}, ctx=ctx).to_py()
    assert r["names"] == ["now"] and [json.loads(a) for a in r["arguments"]] == [{}]
    with pytest.raises(libaf.InvalidArgument):
        libaf.lm_tool_call(MSG, "", "m", tools, params={"temperature": 9}, ctx=ctx)


def test_traced_records_both_and_agrees_with_eager(echo_ctx: libaf.Context) -> None:
    ctx = echo_ctx

    def turn(question: libaf.Value, history: libaf.Value, result: libaf.Value) -> libaf.Value:
        msgs = [{"role": "user", "content": question}]
        r = libaf.lm_tool_call(msgs, history, "m", TOOLS)
        return {"r": r, "history": libaf.tool_results(history, r["turn"], [result])}

    ir = libaf.trace(turn, "q", "", "x", ctx=ctx)
    assert "lm_tool_call" in ir.prims and "tool_results" in ir.prims
    out = ir("q", "", "3", ctx=ctx).to_py()
    eager = libaf.lm_tool_call([{"role": "user", "content": "q"}], "", "m", TOOLS, ctx=ctx).to_py()
    assert out["r"] == eager
    assert out["history"] == libaf.tool_results("", eager["turn"], ["3"], ctx=ctx).to_py()
    loaded = libaf.Ir.from_bytes(ir.to_bytes(), ctx=ctx)
    assert loaded == ir
    assert loaded("q", "", "3", ctx=ctx).to_py() == out


def _agent(ctx: libaf.Context, max_iters: int = 4) -> libaf.Ir:
    def run_tool(carry: libaf.Value, call: libaf.Value) -> list:
        result = libaf.switch(call["name"], {
            "add": lambda args: libaf.host_call("add", args),
            "lookup": lambda args: libaf.host_call("lookup", args),
        }, call["arguments"])
        return [carry, result]

    def step(state: libaf.Value) -> dict:
        r = libaf.lm_tool_call(MSG, state["history"], "m", TOOLS)
        calls = {"name": r["names"], "arguments": r["arguments"]}
        _, results = libaf.scan(run_tool, "", calls, item={"name": "add", "arguments": "{}"})
        history = libaf.tool_results(state["history"], r["turn"], results)
        return {"history": history, "called": r["called"], "text": r["text"]}

    def agent(history: libaf.Value) -> libaf.Value:
        start = {"history": history, "called": True, "text": ""}
        return libaf.while_loop(lambda s: s["called"], step, start, max_iters=max_iters)

    return libaf.trace(agent, "", ctx=ctx)


def test_the_agent_loop_traced_saved_loaded_and_rerun(ctx: libaf.Context) -> None:
    echo = libaf.Provider.echo()
    ctx.route("m", echo)
    calls: list = []
    _register_tools(ctx, calls)
    ir = _agent(ctx)
    assert ir.prims == ["while_loop"]
    out = ir("", ctx=ctx).to_py()
    assert out["called"] is False and out["text"] == "m|Paris"
    assert echo.stats()["finished"] == 3  # three LM calls: add, lookup, the answer
    history = json.loads(out["history"])
    assert [m["role"] for m in history] == ["assistant", "tool", "assistant", "tool", "assistant"]
    assert [m["content"] for m in history if m["role"] == "tool"] == ["3", "Paris"]
    assert [c[0] for c in calls] == ["add", "lookup"]
    assert [json.loads(c[1]) for c in calls] == [{"a": 1, "b": 2}, {"key": "capital_of_france"}]

    # Saved and loaded (bytes, then compiled): the same result.
    loaded = libaf.Ir.from_bytes(ir.to_bytes(), ctx=ctx)
    assert loaded == ir
    assert loaded("", ctx=ctx).to_py() == out
    assert libaf.Program.compile(loaded, ctx=ctx)("", ctx=ctx).to_py() == out
    assert echo.stats()["finished"] == 9
    # From a history where the model already called add: lookup, then the answer.
    resumed = ir(json.dumps(history[:2]), ctx=ctx).to_py()
    assert resumed == out


def test_max_iters_bounds_the_steps(echo_ctx: libaf.Context) -> None:
    ctx = echo_ctx
    _register_tools(ctx, [])
    out = _agent(ctx, max_iters=1)("", ctx=ctx).to_py()
    assert out["called"] is True and out["text"] == ""  # stopped after the call of add
    assert len(json.loads(out["history"])) == 2


def test_a_host_provider_sees_the_tools_and_answers_calls(ctx: libaf.Context) -> None:
    seen: list = []

    def provider(req: libaf.LmRequest) -> object:
        seen.append(req)
        assert [t["name"] for t in req.tools] == ["add", "lookup"]
        if not any(m.get("tool_calls") for m in req.messages):
            return {"content": "let me add", "tool_calls": [
                {"id": "x1", "name": "add", "arguments": {"a": 20, "b": 22}},
                {"id": "x2", "name": "lookup", "arguments": '{"key": "boiling_point"}'}]}
        return json.dumps({"content": "done: " + req.messages[-1]["content"], "tool_calls": []})

    ctx.route("host", libaf.Provider.host(provider))
    r = libaf.lm_tool_call(MSG, "", "host", TOOLS, ctx=ctx).to_py()
    assert r["called"] is True and r["text"] == "let me add" and r["names"] == ["add", "lookup"]
    assert [json.loads(a) for a in r["arguments"]] == [{"a": 20, "b": 22}, {"key": "boiling_point"}]
    h = libaf.tool_results("", r["turn"], ["42", "100 C"], ctx=ctx)
    r2 = libaf.lm_tool_call(MSG, h, "host", TOOLS, ctx=ctx).to_py()
    assert r2 == {"arguments": [], "called": False, "names": [], "text": "done: 100 C", "turn": r2["turn"]}
    assert seen[0].schema is None and seen[1].tools is not None


def test_a_call_of_an_unknown_tool_is_a_schema_error(ctx: libaf.Context) -> None:
    p = libaf.Provider.host(lambda req: {"content": None, "tool_calls": [{"id": "1", "name": "rm", "arguments": {}}]})
    p.set_options(schema_retries=0)
    ctx.route("bad", p)
    with pytest.raises(libaf.SchemaError, match="rm"):
        libaf.lm_tool_call(MSG, "", "bad", TOOLS, ctx=ctx)


def test_on_a_lazy_context_both_are_promises() -> None:
    with libaf.Context(lazy=True) as lc:
        lc.route("m", libaf.Provider.echo())
        r = libaf.lm_tool_call(MSG, "", "m", TOOLS, ctx=lc)
        h = libaf.tool_results("", r["turn"], ["3"], ctx=lc)
        assert not h.ready
        assert [m["role"] for m in json.loads(h.to_py())] == ["assistant", "tool"]
        assert r["names"].to_py() == ["add"]


def test_errors(echo_ctx: libaf.Context) -> None:
    ctx = echo_ctx
    r = libaf.lm_tool_call(MSG, "", "m", TOOLS, ctx=ctx).to_py()
    # Not one result per call: InvalidArgument (a ValueError), eager or traced.
    for results in ([], ["3", "4"]):
        with pytest.raises(libaf.InvalidArgument) as e:
            libaf.tool_results("", r["turn"], results, ctx=ctx)
        assert isinstance(e.value, ValueError)
    ir = libaf.trace(lambda h, t, res: libaf.tool_results(h, t, res), "", "{}", ["x"], lists=[False, False, True],
                     ctx=ctx)
    assert ir("", r["turn"], ["3"], ctx=ctx).kind == libaf.Kind.STR
    with pytest.raises(libaf.InvalidArgument):
        ir("", r["turn"], ["3", "4"], ctx=ctx)
    # A malformed history or turn.
    with pytest.raises(libaf.InvalidArgument):
        libaf.tool_results("not json", r["turn"], ["3"], ctx=ctx)
    with pytest.raises(libaf.InvalidArgument):
        libaf.tool_results("", "not json", [], ctx=ctx)
    with pytest.raises(libaf.InvalidArgument):
        libaf.lm_tool_call(MSG, "not json", "m", TOOLS, ctx=ctx)
    # Bad tools: duplicate names, a bad name, parameters that are not a container.
    for tools in ([TOOLS[0], TOOLS[0]], [{"name": "no spaces"}], [{"name": "t", "parameters": {"type": "int"}}]):
        with pytest.raises(libaf.InvalidArgument):
            libaf.lm_tool_call(MSG, "", "m", tools, ctx=ctx)
    with pytest.raises(libaf.NotFound, match="nowhere"):
        libaf.lm_tool_call(MSG, "", "nowhere", TOOLS, ctx=ctx)


def test_the_readme_agent_loop_runs_as_written() -> None:
    readme = (REPO / "bindings" / "python" / "README.md").read_text()
    section = readme.split("### An agent loop: a model calling tools")[1]
    block = section.split("```python\n")[1].split("```")[0]
    printed = io.StringIO()
    scope: dict = {}
    with contextlib.redirect_stdout(printed):
        exec(block, scope)  # noqa: S102 - the README's own code
    out = scope["out"]
    assert out["text"] == "agent|Paris" and out["called"] is False
    assert printed.getvalue().splitlines() == [
        "agent|Paris",
        "['assistant', 'tool', 'assistant', 'tool', 'assistant']",
        "['while_loop']",
    ]
    tool_msgs = [m for m in json.loads(out["history"]) if m["role"] == "tool"]
    assert [(m["name"], m["content"]) for m in tool_msgs] == [("add", "3"), ("lookup", "Paris")]
