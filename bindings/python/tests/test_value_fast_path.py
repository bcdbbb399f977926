"""to_value's fast path (a plain tree as one JSON document, a tree holding
Values built from handles) gives exactly what the per-leaf path gives, and
the same errors."""

from __future__ import annotations

import ctypes
import math
from typing import Any

import pytest

import libaf
from libaf import Kind, Value
from libaf import _lib
from libaf import value as value_mod
from libaf.errors import check

FLOATS = [0.0, -0.0, 1.0, -1.5, 0.1, 1 / 3, 1e16, 1e-7, 5e-324, 2.2250738585072014e-308,
          1.7976931348623157e308, 123456789012345680.0, 1e30, -2.5e-300]
INTS = [0, 1, -1, 2**31, 2**53 + 1, -(2**63), 2**63 - 1]
STRS = ["", "a", "héllo ✓", "emoji 😀 astral", "quote \" backslash \\ slash /", "ctl \x00\x01\n\t\r",
        "\u2028\u2029", "x" * 200, "日本語"]

PLAIN_TREES: list[Any] = [
    [],
    {},
    (),
    FLOATS,
    INTS,
    STRS,
    [True, False, None, 1, 1.0, "1"],
    {"z": 1, "a": 1.0, "m": -0.0, "b": [0, 0.0, -0.0], "": None},
    {"k": [[[], [[]]], {"n": {"m": {}}}], "t": (1, (2.0, ("x",)))},
    [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "héllo 😀"}],
    {s: i for i, s in enumerate(STRS)},  # unicode keys, order kept
    [{"limit": -(2**63), "max": 2**63 - 1, "f": 9007199254740993.0}],
]


def exact(obj: Any) -> Any:
    """obj with every leaf tagged by its type (floats by their bits): equal
    only when kinds, values, -0.0 and key order all are."""
    if isinstance(obj, dict):
        return ("dict", [(k, exact(v)) for k, v in obj.items()])
    if isinstance(obj, (list, tuple)):
        return ("list", [exact(v) for v in obj])
    if isinstance(obj, float):
        return ("float", obj.hex())
    return (type(obj).__name__, obj)


def per_leaf(obj: Any) -> Value:
    """The per-leaf reference: every leaf and container one C call."""
    return value_mod._build(obj)


def shape(v: Value) -> Any:
    """A Value's tree read through the C API kind by kind (no JSON)."""
    k = v.kind
    if k == Kind.DICT:
        return ("dict", [(key, shape(v[key])) for key in v.keys()])
    if k == Kind.LIST:
        return ("list", [shape(v[i]) for i in range(len(v))])
    if k == Kind.FLOAT:
        return ("float", float(v).hex())
    if k == Kind.STR:
        return ("str", str(v))
    return (k.name, v.to_py())


@pytest.mark.parametrize("tree", PLAIN_TREES, ids=lambda t: repr(t)[:40])
def test_plain_tree_is_one_json_document_with_exact_kinds(tree: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    want = shape(per_leaf(tree))
    # The fast path makes no leaf or container one by one.
    monkeypatch.setattr(value_mod, "_build", lambda o: pytest.fail("per-leaf build"))
    monkeypatch.setattr(value_mod, "_leaf", lambda o: pytest.fail("per-leaf leaf"))
    got = libaf.to_value(tree)
    assert shape(got) == want
    assert exact(got.to_py()) == exact(value_mod.to_py(tree))
    again = libaf.to_value(tree)  # interned or not, the same content
    assert shape(again) == want


@pytest.mark.parametrize("tree", PLAIN_TREES, ids=lambda t: repr(t)[:40])
def test_tree_holding_values_equals_the_per_leaf_build(tree: Any) -> None:
    marker = Value("inside")
    for mixed in ([tree, marker], {"v": marker, "t": tree}, [[marker, tree], tree]):
        assert shape(libaf.to_value(mixed)) == shape(per_leaf(mixed))


def test_messages_holding_a_promise_keep_its_context() -> None:
    with libaf.Context(lazy=True) as ctx:
        ctx.route("*", libaf.Provider.echo())
        prompt = libaf.format("Classify: {}", "t1", ctx=ctx)
        msgs = [{"role": "system", "content": "terse"}, {"role": "user", "content": prompt}]
        v = libaf.to_value(msgs)
        assert v._ctx is ctx  # reading it evaluates on ctx, which it keeps alive
        assert v.kind == Kind.LIST and v[1]["content"].kind == Kind.STR
        assert v.to_py() == [{"role": "system", "content": "terse"}, {"role": "user", "content": "Classify: t1"}]
        assert libaf.lm_call(msgs, "m", ctx=ctx).to_py() == "m|Classify: t1"


def test_int64_limits_and_beyond() -> None:
    for tree in ([-(2**63), 2**63 - 1], {"lo": -(2**63), "hi": 2**63 - 1}):
        assert exact(libaf.to_value(tree).to_py()) == exact(value_mod.to_py(tree))
    # Beyond them: the errors users always saw.
    for big in (2**63, -(2**63) - 1, 2**70):
        with pytest.raises(libaf.InvalidArgument, match="int64"):
            libaf.to_value([big])
        with pytest.raises(libaf.InvalidArgument, match="int64"):
            libaf.to_value({"a": {"b": [1, big]}})
        with pytest.raises(OverflowError, match="int64"):
            libaf.to_value(big)
        with pytest.raises(OverflowError, match="int64"):
            libaf.to_value([big, Value(1)])  # a tree holding a Value: item by item, as before


class IntKey(int):
    pass


BAD = [
    {1: "x"},
    [{"a": {2: 1}}],
    {None: 1},
    [1, {"a": b"bytes"}],
    [object()],
    [math.nan],
    {"a": [math.inf]},
    ["\ud800"],
    {"\udcff": 1},
    [2**64],
    [Value(1), {1: 2}],
    {"a": Value(1), 2: 1},
    [Value(1), b"x"],
    [Value(1), "\ud800"],
    [[Value(1), "ok"], {"k": {3: 4}}],
    [Value(1), [2**64]],
]


@pytest.mark.parametrize("bad", BAD, ids=repr)
def test_errors_are_the_per_leaf_paths(bad: Any) -> None:
    with pytest.raises(Exception) as want:
        value_mod._to_value_per_leaf(bad)
    with pytest.raises(type(want.value)) as got:
        libaf.to_value(bad)
    assert str(got.value) == str(want.value)


def test_what_json_cannot_carry_takes_the_per_leaf_path() -> None:
    # NaN and infinity inside a tree holding a Value: item by item, as before.
    v = libaf.to_value([math.nan, Value("x"), {"i": -math.inf}])

    def read(x: Value) -> float:
        out = ctypes.c_double()
        check(_lib.lib.af_value_get_float(x._ptr, ctypes.byref(out)))
        return out.value

    assert v[0].kind == Kind.FLOAT and math.isnan(read(v[0])) and read(v[2]["i"]) == -math.inf
    # Subclasses of the plain types convert as before.
    assert libaf.to_value([IntKey(3), Value(1)]).to_py() == [3, 1]
    assert libaf.to_value({"a": IntKey(3)}).to_py() == {"a": 3}


def test_interning_tables_stay_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(value_mod, "_INTERN_MAX", 8)
    monkeypatch.setattr(value_mod, "_JSON_INTERN_MAX", 8)
    monkeypatch.setattr(value_mod, "_interned", {})
    monkeypatch.setattr(value_mod, "_interned_json", {})
    marker = Value(0)
    held = [libaf.to_value([{"role": f"r{i}", "content": [i, marker]}, {"i": i}]) for i in range(50)]
    held += [libaf.to_value(f"s{i}") for i in range(50)]
    assert len(value_mod._interned) <= 8 and len(value_mod._interned_json) <= 8
    for i in range(50):  # values handed out before a table was emptied stay valid
        assert held[i].to_py() == [{"role": f"r{i}", "content": [i, 0]}, {"i": i}]
        assert held[50 + i].to_py() == f"s{i}"
