"""libaf.scan (af_scan): a carry threaded through a list, one output per
item. Eager, reverse, empty; traced over a list input of any length; batch
over documents of different lengths; pullback against the same body unrolled
by hand (as tests/capi/scan_test.c); lazy; errors; the README's cookbook
entry, run as written."""

from __future__ import annotations

import contextlib
import io

import pytest
from conftest import REPO

import libaf


def step(c: libaf.Value, x: libaf.Value) -> list:
    """body(c, x) = [concat(c, x), format("<{}>", x)], scan_test.c's body_fn."""
    return [libaf.concat(c, x), libaf.format("<{}>", x)]


def _program(ctx: libaf.Context, reverse: bool = False) -> libaf.Ir:
    """f(init, xs) = scan(step, init, xs), xs a list of any length."""
    return libaf.trace(lambda i, xs: libaf.scan(step, i, xs, reverse=reverse), "c", ["x"],
                       lists=[False, True], ctx=ctx)


def test_eager_scan_threads_the_carry_and_keeps_ys_by_index(ctx: libaf.Context) -> None:
    body = libaf.trace(step, "c", "x", ctx=ctx)
    for b in (body, step):  # a traced Ir, or a callable traced on (init, the first item)
        out = libaf.scan(b, ">", ["a", "b", "c"], ctx=ctx)
        assert isinstance(out, libaf.Value)
        assert out.to_py() == [">abc", ["<a>", "<b>", "<c>"]]


def test_reverse_runs_last_to_first_with_ys_at_their_indices(ctx: libaf.Context) -> None:
    out = libaf.scan(step, ">", ["a", "b", "c"], reverse=True, ctx=ctx)
    assert out.to_py() == [">cba", ["<a>", "<b>", "<c>"]]


def test_an_empty_list_gives_init_and_empty_ys(ctx: libaf.Context) -> None:
    body = libaf.trace(step, "c", "x", ctx=ctx)
    assert libaf.scan(body, ">", [], ctx=ctx).to_py() == [">", []]
    # A callable body needs an example item when xs has none.
    assert libaf.scan(step, ">", [], item="x", ctx=ctx).to_py() == [">", []]
    with pytest.raises(libaf.InvalidArgument, match="item="):
        libaf.scan(step, ">", [], ctx=ctx)


def test_xs_may_be_a_tree_of_lists(ctx: libaf.Context) -> None:
    def body(c: libaf.Value, qa: libaf.Value) -> list:
        line = libaf.format("{}={};", qa["q"], qa["a"])
        return [libaf.concat(c, line), line]

    xs = {"q": ["1+1", "2+2"], "a": ["2", "4"]}
    assert libaf.scan(body, "", xs, ctx=ctx).to_py() == ["1+1=2;2+2=4;", ["1+1=2;", "2+2=4;"]]
    with pytest.raises(libaf.InvalidArgument, match="one length"):
        libaf.scan(body, "", {"q": ["1+1", "2+2"], "a": ["2"]}, ctx=ctx)


def test_traced_over_a_list_input_of_any_length(ctx: libaf.Context) -> None:
    ir = _program(ctx)
    assert "scan" in ir.prims
    assert ir("", ["a"], ctx=ctx).to_py() == ["a", ["<a>"]]
    assert ir("0", ["a", "b", "c", "d"], ctx=ctx).to_py() == ["0abcd", ["<a>", "<b>", "<c>", "<d>"]]
    assert ir("0", [], ctx=ctx).to_py() == ["0", []]
    assert _program(ctx, reverse=True)("0", ["a", "b"], ctx=ctx).to_py() == ["0ba", ["<a>", "<b>"]]
    # The decorator traces once for lists of every length (it keys by item kind).
    @libaf.trace(lists=[False, True], ctx=ctx)
    def run(i: libaf.Value, xs: libaf.Value) -> libaf.Value:
        return libaf.scan(step, i, xs)

    assert run("", ["a", "b"]).to_py() == ["ab", ["<a>", "<b>"]]
    assert run("", ["a", "b", "c"]).to_py() == ["abc", ["<a>", "<b>", "<c>"]]
    assert len(run._cache) == 1


def test_a_list_of_lists_input_gives_the_body_lists_of_any_length(ctx: libaf.Context) -> None:
    def program(i: libaf.Value, docs: libaf.Value) -> libaf.Value:
        def per_doc(c: libaf.Value, doc: libaf.Value) -> list:
            joined = libaf.scan(lambda a, x: [libaf.concat(a, x), x], "", doc)[0]
            return [libaf.concat(c, joined, "|"), joined]

        return libaf.scan(per_doc, i, docs)

    ir = libaf.trace(program, "", [["x"]], lists=[False, True], ctx=ctx)
    assert ir(">", [["a", "b"], ["c"], []], ctx=ctx).to_py() == [">ab|c||", ["ab", "c", ""]]


def test_batch_over_two_documents_of_different_lengths(ctx: libaf.Context) -> None:
    batched = _program(ctx).batch(ctx=ctx)
    out = batched(["1", "2"], [["a", "b"], ["c"]], ctx=ctx)
    assert out.to_py() == [["1ab", "2c"], [["<a>", "<b>"], ["<c>"]]]


def _unrolled(ctx: libaf.Context) -> libaf.Ir:
    """The scan over three items, unrolled by hand: f(init, a, b, c)."""

    def program(i: libaf.Value, *items: libaf.Value) -> list:
        carry, ys = i, []
        for x in items:
            carry, y = step(carry, x)
            ys.append(y)
        return [carry, ys]

    return libaf.trace(program, "c", "x", "x", "x", ctx=ctx)


def _leaves(tree: object) -> list:
    if isinstance(tree, list):
        return [leaf for item in tree for leaf in _leaves(item)]
    return [tree]


@pytest.mark.parametrize("feedback", [["G", ["y0", None, "y2"]], [None, ["y0", "y1", "y2"]]])
def test_pullback_agrees_with_the_body_unrolled_by_hand(ctx: libaf.Context, feedback: list) -> None:
    scan_pb = _program(ctx).pullback(ctx=ctx)
    unrolled_pb = _unrolled(ctx).pullback(ctx=ctx)
    got = scan_pb(["i", ["a", "b", "c"]], feedback, ctx=ctx).to_py()
    want = unrolled_pb(["i", "a", "b", "c"], feedback, ctx=ctx).to_py()
    assert _leaves(got) == _leaves(want)
    assert got[0] == ["iabc", ["<a>", "<b>", "<c>"]]


def test_pullback_gives_feedback_to_init_and_every_item(ctx: libaf.Context) -> None:
    # The values tests/capi/scan_test.c shows.
    pb = _program(ctx).pullback(ctx=ctx)
    out = pb(["i", ["a", "b", "c"]], ["G", ["y0", None, "y2"]], ctx=ctx).to_py()
    assert out == [["iabc", ["<a>", "<b>", "<c>"]], ["G", ["Gy0", "G", "Gy2"]]]


def test_pushforward_threads_tangents_through_the_carry(ctx: libaf.Context) -> None:
    got = _program(ctx).pushforward(ctx=ctx)(["i", ["a", "b", "c"]], ["di", ["da", None, "dc"]], ctx=ctx)
    want = _unrolled(ctx).pushforward(ctx=ctx)(["i", "a", "b", "c"], ["di", "da", None, "dc"], ctx=ctx)
    assert _leaves(got.to_py()) == _leaves(want.to_py())


def test_the_traced_program_saves_and_loads(ctx: libaf.Context) -> None:
    ir = _program(ctx)
    loaded = libaf.Ir.from_bytes(ir.to_bytes(), ctx=ctx)
    assert loaded == ir
    assert loaded("s", ["x", "y"], ctx=ctx).to_py() == ["sxy", ["<x>", "<y>"]]


def test_on_a_lazy_context_it_is_a_promise() -> None:
    with libaf.Context(lazy=True) as lc:
        body = libaf.trace(step, "c", "x", ctx=lc)
        out = libaf.scan(body, "", ["p", "q"], ctx=lc)
        assert not out.ready
        assert out.to_py() == ["pq", ["<p>", "<q>"]]


def test_errors(ctx: libaf.Context) -> None:
    body = libaf.trace(step, "c", "x", ctx=ctx)
    # xs not a list: libaf's INVALID_ARGUMENT, with an Ir or a callable body.
    with pytest.raises(libaf.InvalidArgument, match="not a list"):
        libaf.scan(body, "", "a", ctx=ctx)
    with pytest.raises(libaf.InvalidArgument, match="not a list"):
        libaf.scan(step, "", "a", ctx=ctx)
    with pytest.raises(libaf.InvalidArgument, match="list<int>"):
        libaf.scan(body, "", [1, 2], ctx=ctx)
    # body takes one input; returns no [carry, y]; changes the carry's kind.
    with pytest.raises(libaf.InvalidArgument, match="two inputs"):
        libaf.scan(libaf.trace(lambda c: c, "c", ctx=ctx), "", ["a"], ctx=ctx)
    with pytest.raises(libaf.InvalidArgument, match=r"\[next carry, y\]"):
        libaf.scan(lambda c, x: x, "", ["a"], ctx=ctx)
    with pytest.raises(libaf.InvalidArgument, match="carry leaf 0"):
        libaf.scan(lambda c, x: [libaf.match(c, x), x], "", ["a"], ctx=ctx)
    with pytest.raises(TypeError, match="body"):
        libaf.scan(3, "", ["a"], ctx=ctx)


def test_a_traced_list_made_by_another_operation_needs_an_example_item(ctx: libaf.Context) -> None:
    upper = libaf.trace(lambda x: libaf.format("{}!", x), "x", ctx=ctx).batch(ctx=ctx)

    def program(xs: libaf.Value, item: object) -> libaf.Value:
        return libaf.scan(step, "", upper(xs), **item)

    with pytest.raises(libaf.InvalidArgument, match="item="):  # escapes the trace as itself
        libaf.trace(lambda xs: program(xs, {}), ["x"], lists=[True], ctx=ctx)
    ir = libaf.trace(lambda xs: program(xs, {"item": "x"}), ["x"], lists=[True], ctx=ctx)
    assert ir(["a", "b"], ctx=ctx).to_py() == ["a!b!", ["<a!>", "<b!>"]]


def test_the_readme_rolling_summary_runs_as_written() -> None:
    readme = (REPO / "bindings" / "python" / "README.md").read_text()
    section = readme.split("### A rolling summary of a long document")[1]
    block = section.split("```python\n")[1].split("```")[0]
    printed = io.StringIO()
    scope: dict = {}
    with contextlib.redirect_stdout(printed):
        exec(block, scope)  # noqa: S102 - the README's own code
    out = scope["out"]
    assert len(out["after_each_chunk"]) == 3
    assert out["after_each_chunk"][-1] == out["summary"]
    assert out["summary"].startswith("summarizer|Summary so far: ")
    for chunk in scope["chunks"]:
        assert chunk in out["summary"]  # every chunk reached the last call through the carry
    assert "(nothing yet)" in out["summary"]
    assert printed.getvalue().splitlines()[-2:] == ["3", "['length', 'scan']"]
    # One trace for documents of any length; batched, documents of different lengths in one run.
    ir = scope["rolling_summary"].ir("", ["a chunk"])
    with libaf.Context() as ctx:
        ctx.route("summarizer", libaf.Provider.echo())
        both = ir.batch(ctx=ctx)(["", ""], [["one", "two"], ["three"]], ctx=ctx).to_py()
    assert [len(s) for s in both["after_each_chunk"]] == [2, 1]
    assert "two" in both["summary"][0] and "three" in both["summary"][1]
