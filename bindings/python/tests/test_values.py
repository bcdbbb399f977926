"""Values to and from plain Python objects."""

from __future__ import annotations

import math

import pytest

import libaf
from libaf import Kind, Value

ROUND_TRIPS = [
    None,
    True,
    False,
    0,
    -(2**63),
    2**63 - 1,
    2.0,
    -0.5,
    1e30,
    "",
    "héllo ✓",
    [],
    {},
    [1, "a", None, [2.5, {"k": False}]],
    {"b": 1, "a": [True, "x"], "c": {}},
]


@pytest.mark.parametrize("obj", ROUND_TRIPS, ids=repr)
def test_plain_data_round_trips_exactly(obj: object) -> None:
    back = Value(obj).to_py()
    assert back == obj
    assert type(back) is type(obj)  # int stays int, float stays float


def test_dict_keeps_insertion_order() -> None:
    assert list(Value({"z": 1, "a": 2, "m": 3}).to_py()) == ["z", "a", "m"]
    assert Value({"z": 1, "a": 2}).keys() == ["z", "a"]


def test_tuples_become_lists() -> None:
    assert Value((1, (2, "x"))).to_py() == [1, [2, "x"]]


@pytest.mark.parametrize(
    "obj,kind",
    [(None, Kind.NULL), (True, Kind.BOOL), (3, Kind.INT), (3.0, Kind.FLOAT), ("s", Kind.STR),
     ([1], Kind.LIST), ({"a": 1}, Kind.DICT)],
)
def test_kinds(obj: object, kind: Kind) -> None:
    assert Value(obj).kind == kind


def test_indexing_and_iteration() -> None:
    v = Value({"xs": [10, 20, 30], "name": "n"})
    assert len(v) == 2
    assert v["xs"][1].to_py() == 20
    assert v["xs"][-1].to_py() == 30
    assert [x.to_py() for x in v["xs"]] == [10, 20, 30]
    assert [(k, x.to_py()) for k, x in v.items()] == [("xs", [10, 20, 30]), ("name", "n")]
    assert str(v["name"]) == "n" and int(v["xs"][0]) == 10 and float(v["xs"][0]) == 10.0


def test_index_errors_are_clear() -> None:
    v = Value({"xs": [1]})
    with pytest.raises(libaf.NotFound, match="nope"):
        v["nope"]
    with pytest.raises(IndexError, match="out of range"):
        v["xs"][5]
    with pytest.raises(libaf.InvalidArgument):
        len(Value(3))
    with pytest.raises(TypeError, match="indexed by int or str"):
        v[1.5]


def test_json_is_exact() -> None:
    assert Value.from_json('{"a": 1, "b": 1.0, "c": [true, null]}').to_json() == '{"a":1,"b":1.0,"c":[true,null]}'
    with pytest.raises(libaf.InvalidArgument):
        Value.from_json("{bad json")
    with pytest.raises(libaf.InvalidArgument):
        Value.from_json('{"a": 1, "a": 2}')


@pytest.mark.parametrize(
    "obj,exc,fragment",
    [
        ({1: "x"}, TypeError, "dict keys must be str"),
        ([{"a": {2: 1}}], TypeError, "dict keys must be str"),
        (object(), TypeError, "cannot convert object"),
        ([1, {"a": b"bytes"}], TypeError, "cannot convert bytes"),
        (2**63, OverflowError, "int64"),
        ([2**70], libaf.InvalidArgument, "int64"),
        ([math.nan], ValueError, "NaN"),
    ],
)
def test_unconvertible_objects_raise_clear_errors(obj: object, exc: type, fragment: str) -> None:
    with pytest.raises(exc, match=fragment):
        Value(obj)


def test_values_compare_by_content() -> None:
    assert Value([1, "a"]) == [1, "a"]
    assert Value({"a": 1}) == Value({"a": 1})
    assert Value(1) != Value(1.5)


def test_placeholders_cannot_be_read_in_python(ctx: libaf.Context) -> None:
    seen = {}

    def f(x: Value) -> Value:
        seen["kind"] = x.kind
        seen["repr"] = repr(x)
        for read in (bool, str, lambda v: f"{v}", lambda v: v.to_py()):
            with pytest.raises((TypeError, libaf.InvalidArgument)) as e:
                read(x)
            assert "traced" in str(e.value) or "placeholder" in str(e.value)
        return x

    libaf.trace(f, "x", ctx=ctx)
    assert seen == {"kind": Kind.PLACEHOLDER, "repr": "Value(<traced>)"}


def test_to_py_converts_trees_holding_values() -> None:
    tree = {"a": (Value(1), [Value("x"), 2.5]), "b": None}
    assert libaf.to_py(tree) == {"a": [1, ["x", 2.5]], "b": None}
    assert libaf.to_value(tree).to_py() == {"a": [1, ["x", 2.5]], "b": None}
