"""Tracing Python functions: the IR, static inputs, the decorator, and
byte identity with the same program traced in C."""

from __future__ import annotations

import pytest
from conftest import hello

import libaf


def test_trace_returns_the_ir(ctx: libaf.Context) -> None:
    ir = libaf.trace(hello, "x", ctx=ctx)
    assert ir.prims == ["format", "concat"]
    assert ir.input_count == 1 and ir.eqn_count == 2
    assert 'template="Hello, {}!"' in str(ir)
    assert ir("World", ctx=ctx).to_py() == "Hello, World!?"


def test_trees_and_named_arguments(ctx: libaf.Context) -> None:
    def f(person: libaf.Value, n: libaf.Value) -> dict:
        greeting = libaf.format("{greet}, {who}! x{}", n, greet="Hi", who=person["name"], ctx=ctx)
        return {"greeting": greeting, "same": libaf.match(person["name"], "Ada", ctx=ctx), "n": n}

    ir = libaf.trace(f, {"name": "x"}, 1, ctx=ctx)
    out = ir({"name": "Ada"}, 3, ctx=ctx).to_py()
    assert out == {"greeting": "Hi, Ada! x3", "same": True, "n": 3}


def test_static_inputs_become_literals(ctx: libaf.Context) -> None:
    def f(x: libaf.Value, style: libaf.Value) -> libaf.Value:
        # A static input is concrete while tracing: Python may branch on it.
        return libaf.concat(x, "!" if str(style) == "loud" else ".", ctx=ctx)

    loud = libaf.trace(f, "x", "loud", static=[False, True], ctx=ctx)
    assert loud("hi", "loud", ctx=ctx).to_py() == "hi!"
    same = libaf.trace(f, "x", "loud", static={1}, ctx=ctx)
    assert same == loud
    with pytest.raises(libaf.InvalidArgument):
        loud("hi", "quiet", ctx=ctx)  # static leaves must be equal at call time
    with pytest.raises(IndexError):
        libaf.trace(f, "x", "loud", static={5}, ctx=ctx)


def test_decorator_traces_once_per_shape() -> None:
    calls = []

    @libaf.trace
    def greet(name: libaf.Value) -> libaf.Value:
        calls.append(1)
        return libaf.format("Hello, {}!", name)

    assert greet("Ada").to_py() == "Hello, Ada!"
    assert greet("Bob").to_py() == "Hello, Bob!"
    assert len(calls) == 1  # same shape: the compiled program is reused
    assert greet(7).to_py() == "Hello, 7!"
    assert len(calls) == 2  # int input: a new trace
    assert greet.ir("x").prims == ["format"]
    assert greet.__name__ == "greet"


def test_decorator_with_static() -> None:
    @libaf.trace(static=(1,))
    def punct(x: libaf.Value, mark: libaf.Value) -> libaf.Value:
        return x + str(mark)

    assert punct("a", "!").to_py() == "a!"
    assert punct("a", "?").to_py() == "a?"  # a new static value retraces


def test_traced_function_called_inside_a_trace_is_inlined(ctx: libaf.Context) -> None:
    inner = libaf.trace(lambda x: libaf.concat(x, "?"))

    outer = libaf.trace(lambda x: inner(libaf.format("<{}>", x)), "x", ctx=ctx)
    assert outer.prims == ["format", "concat"]
    assert outer("a", ctx=ctx).to_py() == "<a>?"


def test_tags_and_fold(ctx: libaf.Context) -> None:
    def f(x: libaf.Value) -> libaf.Value:
        with libaf.tag("greeting"):
            g = libaf.format("Hello, {}!", x)
        with libaf.fold():
            suffix = libaf.concat("?", "!")
        return libaf.concat(g, suffix)

    ir = libaf.trace(f, "x", ctx=ctx)
    assert ir.prims == ["format", "concat"]  # the folded concat is a literal
    assert "greeting" in str(ir)
    assert ir("A", ctx=ctx).to_py() == "Hello, A!?!"
    with pytest.raises(libaf.InvalidArgument):
        with libaf.tag("outside", ctx=ctx):  # tags need a trace
            pass


def test_bad_traces_raise(ctx: libaf.Context) -> None:
    with pytest.raises(TypeError, match="callable"):
        libaf.trace(42, "x", ctx=ctx)
    with pytest.raises(libaf.Error):
        libaf.trace(lambda x: object(), "x", ctx=ctx)  # output is not a value
    captured = []
    libaf.trace(lambda x: captured.append(x) or x, "x", ctx=ctx)
    with pytest.raises(libaf.InvalidArgument):
        libaf.concat(captured[0], "y", ctx=ctx)  # a placeholder that escaped its trace
    assert not libaf.is_tracing()
    assert libaf.trace(lambda x: libaf.is_tracing(), "x", ctx=ctx)  # a literal output


def test_a_traced_list_of_any_length_calls_a_batched_ir(ctx: libaf.Context) -> None:
    one = libaf.trace(lambda t: libaf.format("Triage: {}", t, ctx=ctx), "t", ctx=ctx)
    each = one.batch(ctx=ctx)
    process_all = libaf.trace(lambda tickets: each(tickets, ctx=ctx), ["an example"], lists={0}, ctx=ctx)
    # The batched equations are recorded once: the program is the batched IR.
    assert process_all == each
    assert process_all(["a"], ctx=ctx).to_py() == ["Triage: a"]
    assert process_all(["a", "b", "c"], ctx=ctx).to_py() == ["Triage: a", "Triage: b", "Triage: c"]
    with pytest.raises(libaf.InvalidArgument, match=r"input\[0\]\[1\]"):
        process_all(["a", 2], ctx=ctx)
    with pytest.raises(libaf.InvalidArgument, match="only a list"):
        libaf.trace(lambda t: t, "not a list", lists=[True], ctx=ctx)

    # The decorator caches per item kind, not per length.
    calls = []

    @libaf.trace(lists=[True], ctx=ctx)
    def triage_all(tickets: libaf.Value) -> libaf.Value:
        calls.append(1)
        return each(tickets, ctx=ctx)

    assert triage_all(["x"]).to_py() == ["Triage: x"]
    assert triage_all(["y", "z"]).to_py() == ["Triage: y", "Triage: z"]
    assert len(calls) == 1
