"""Schemas from Python types: libaf.schema_of (dataclasses, TypedDict, Enum,
Literal, fixed-size tuples, Annotated bounds and docs, pydantic models), the
errors naming the field, libaf.as_type, and lm_schema_call / lm_tool_call
given types: eager on echo and a host provider (instances), traced and lazy
(Values, converted with as_type); the README's example, run as written."""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import io
import json
import re
import subprocess
import sys
from typing import Annotated, Any, Dict, List, Literal, Optional, Tuple, TypedDict, Union

import pytest
from conftest import REPO

import libaf
from libaf import Doc, Length, Pattern, Range

MSG = [{"role": "user", "content": "file a ticket"}]


class Priority(enum.Enum):
    LOW = "low"
    HIGH = "high"


class Level(enum.IntEnum):
    ONE = 1
    TWO = 2


@dataclasses.dataclass
class Author:
    name: Annotated[str, Length(min=1, max=40)]
    karma: Annotated[float, Range(0, 1), Doc("reputation")]


@dataclasses.dataclass
class Ticket:
    title: Annotated[str, Length(max=80), Doc("one line")]
    severity: Annotated[int, Range(1, 5)]
    priority: Priority
    kind: Literal["bug", "feature"]
    urgent: bool
    author: Author = dataclasses.field(metadata={"doc": "who filed it"})
    where: Tuple[str, int] = ("", 0)
    slug: Annotated[str, Length(min=1), Pattern(r"^[a-z]+$")] = "x"
    level: Level = Level.ONE


TICKET_DSL = {
    "title": {"type": "str", "max": 80, "doc": "one line"},
    "severity": {"type": "int", "min": 1, "max": 5},
    "priority": {"type": "enum", "values": ["low", "high"]},
    "kind": {"type": "enum", "values": ["bug", "feature"]},
    "urgent": {"type": "bool"},
    "author": {
        "type": "dict",
        "fields": {
            "name": {"type": "str", "min": 1, "max": 40},
            "karma": {"type": "float", "min": 0.0, "max": 1.0, "doc": "reputation"},
        },
        "doc": "who filed it",
    },
    "where": [{"type": "str"}, {"type": "int"}],
    "slug": {"type": "str", "min": 1, "pattern": "^[a-z]+$"},
    "level": {"type": "enum", "values": [1, 2]},
}


class Movie(TypedDict):
    title: str
    year: Annotated[int, Range(1900, 2100), Doc("release year")]
    genre: Literal["drama", "comedy"]
    cast: tuple[str, str]


class Typed(TypedDict):  # a field named "type" makes the container a typed "dict" node
    type: str
    doc: int


@dataclasses.dataclass
class Search:
    query: Annotated[str, Length(min=1, max=100), Doc("what to look for")]
    limit: Annotated[int, Range(3, 10)]


@dataclasses.dataclass
class Bad:
    ok: int
    tags: List[str]


@dataclasses.dataclass
class Outer:
    inner: Bad


@dataclasses.dataclass
class Node:
    child: Node


@dataclasses.dataclass
class Empty:
    pass


@pytest.fixture
def echo_ctx(ctx: libaf.Context) -> libaf.Context:
    ctx.route("m", libaf.Provider.echo())
    return ctx


def test_dataclass_nested_equals_the_hand_written_tree() -> None:
    assert libaf.schema_of(Ticket) == TICKET_DSL
    assert list(libaf.schema_of(Ticket)) == [f.name for f in dataclasses.fields(Ticket)]  # field order
    assert libaf.schema_of(Author) == TICKET_DSL["author"]["fields"]  # type: ignore[index]


def test_typeddict_enum_literal_scalars_tuples() -> None:
    assert libaf.schema_of(Movie) == {
        "title": {"type": "str"},
        "year": {"type": "int", "min": 1900, "max": 2100, "doc": "release year"},
        "genre": {"type": "enum", "values": ["drama", "comedy"]},
        "cast": [{"type": "str"}, {"type": "str"}],
    }
    assert libaf.schema_of(Typed) == {"type": "dict", "fields": {"type": {"type": "str"}, "doc": {"type": "int"}}}
    assert libaf.schema_of(Priority) == {"type": "enum", "values": ["low", "high"]}
    assert libaf.schema_of(Level) == {"type": "enum", "values": [1, 2]}
    assert libaf.schema_of(Literal[True, False]) == {"type": "enum", "values": [True, False]}
    for tp, name in ((bool, "bool"), (int, "int"), (float, "float"), (str, "str")):
        assert libaf.schema_of(tp) == {"type": name}
    assert libaf.schema_of(Annotated[float, Range(min=0.5)]) == {"type": "float", "min": 0.5}
    assert libaf.schema_of(Annotated[str, Length(max=3), Length(max=9), Doc("d")]) == \
        {"type": "str", "max": 3, "doc": "d"}  # the tighter bound wins
    assert libaf.schema_of(Annotated[Tuple[int, Author], Doc("pair")]) == \
        {"type": "list", "items": [{"type": "int"}, TICKET_DSL["author"]["fields"]], "doc": "pair"}  # type: ignore[index]
    assert libaf.schema_of(Annotated[Author, Doc("a")]) == \
        {"type": "dict", "fields": TICKET_DSL["author"]["fields"], "doc": "a"}  # type: ignore[index]
    assert libaf.schema_of(Annotated[int, "unrelated metadata"]) == {"type": "int"}


def test_the_tree_is_valid_for_libaf(echo_ctx: libaf.Context) -> None:
    # Each tree libaf accepts as a schema: the echo provider answers the smallest reply.
    for tp in (Ticket, Movie, Typed, Priority, Level, Search, Annotated[Author, Doc("a")]):
        libaf.lm_schema_call(MSG, "m", libaf.schema_of(tp), ctx=echo_ctx)


def test_errors_name_the_field() -> None:
    with pytest.raises(TypeError, match=re.escape("Bad.tags: List[str] has no schema in libaf: a list of any length")):
        libaf.schema_of(Bad)
    with pytest.raises(TypeError, match=re.escape("Outer.inner.tags: List[str] has no schema")):
        libaf.schema_of(Outer)
    with pytest.raises(TypeError, match=r"^list\[int\] has no schema in libaf"):
        libaf.schema_of(list[int])

    def field(tp: Any) -> str:
        cls = dataclasses.make_dataclass("Form", [("f", tp)])
        with pytest.raises(TypeError) as e:
            libaf.schema_of(cls)
        assert str(e.value).startswith("Form.f"), e.value
        return str(e.value)

    assert "union" in field(Optional[int])
    assert "union" in field(Union[int, str])
    assert "dict of any keys" in field(Dict[str, int])
    assert "Any cannot" in field(Any)
    assert "fixed" in field(Tuple[int, ...])
    assert "one kind" in field(Literal["a", 1])
    assert "Range does not apply to str" in field(Annotated[str, Range(1, 2)])
    assert "Length does not apply to int" in field(Annotated[int, Length(max=2)])
    assert "Pattern does not apply" in field(Annotated[int, Pattern("x")])
    assert "must be an int" in field(Annotated[int, Range(0.5, 2)])
    assert "a doc must be a str" in field(Annotated[int, Doc(3)])  # type: ignore[arg-type]
    assert "Form.f.tags: List[str]" in field(Bad)
    with pytest.raises(TypeError, match=r"Node.child: Node has no schema in libaf: it is recursive"):
        libaf.schema_of(Node)
    with pytest.raises(TypeError, match="Empty has no schema in libaf: it has no fields"):
        libaf.schema_of(Empty)

    class Mixed(enum.Enum):
        A = "a"
        B = 2.5

    with pytest.raises(TypeError, match="Mixed has no schema in libaf: enum values must be of one kind"):
        libaf.schema_of(Mixed)


def test_as_type_builds_instances() -> None:
    data = {"title": "Crash", "severity": 4, "priority": "high", "kind": "bug", "urgent": True,
            "author": {"name": "ada", "karma": 1}, "where": ["main.c", 42], "slug": "crash", "level": 2}
    t = libaf.as_type(data, Ticket)
    assert t == Ticket("Crash", 4, Priority.HIGH, "bug", True, Author("ada", 1.0), ("main.c", 42), "crash", Level.TWO)
    assert isinstance(t.author.karma, float) and type(t.level) is Level
    assert libaf.as_type(libaf.Value(data), Ticket) == t  # a Value too
    movie = libaf.as_type({"title": "M", "year": 2000, "genre": "drama", "cast": ["a", "b"]}, Movie)
    assert movie == {"title": "M", "year": 2000, "genre": "drama", "cast": ("a", "b")} and type(movie) is dict
    assert libaf.as_type("low", Priority) is Priority.LOW
    assert libaf.as_type(3, Annotated[int, Range(1, 5)]) == 3
    with pytest.raises(ValueError, match=r"Ticket.priority: 'medium' is not a value of Priority"):
        libaf.as_type({**data, "priority": "medium"}, Ticket)
    with pytest.raises(ValueError, match=r"Ticket.kind: 'idea' is not one of"):
        libaf.as_type({**data, "kind": "idea"}, Ticket)
    with pytest.raises(TypeError, match=r"Ticket.author.name: expected str"):
        libaf.as_type({**data, "author": {"name": 3, "karma": 0.5}}, Ticket)
    with pytest.raises(TypeError, match=r"Ticket.urgent: missing"):
        libaf.as_type({k: v for k, v in data.items() if k != "urgent"}, Ticket)
    with pytest.raises(TypeError, match=r"Ticket.where: expected a list of 2 items"):
        libaf.as_type({**data, "where": ["x"]}, Ticket)


def test_eager_lm_schema_call_returns_an_instance(echo_ctx: libaf.Context) -> None:
    t = libaf.lm_schema_call(MSG, "m", Ticket, ctx=echo_ctx)
    assert isinstance(t, Ticket)
    # echo answers the smallest valid reply
    assert t == Ticket("", 1, Priority.LOW, "bug", False, Author("a", 0.0), ("", 0), "a", Level.ONE)
    # the same call with the hand-written tree: a Value of the same data
    v = libaf.lm_schema_call(MSG, "m", TICKET_DSL, ctx=echo_ctx)
    assert isinstance(v, libaf.Value) and libaf.as_type(v, Ticket) == t
    assert libaf.lm_schema_call(MSG, "m", Movie, ctx=echo_ctx) == \
        {"title": "", "year": 1900, "genre": "drama", "cast": ("", "")}
    assert libaf.lm_schema_call(MSG, "m", Priority, ctx=echo_ctx, params={"temperature": 0}) is Priority.LOW


def test_a_host_provider_sees_the_tree(ctx: libaf.Context) -> None:
    seen: list = []

    def answer(req: libaf.LmRequest) -> Any:
        seen.append(req.schema)
        return {"title": "Crash on save", "severity": 5, "priority": "high", "kind": "bug", "urgent": True,
                "author": {"name": "ada", "karma": 0.9}, "where": {"0": "io.c", "1": 7}, "slug": "save",
                "level": 2}  # a list container travels as an object

    ctx.route("host", libaf.Provider.host(answer))
    t = libaf.lm_schema_call(MSG, "host", Ticket, ctx=ctx)
    assert seen == [TICKET_DSL]
    assert t == Ticket("Crash on save", 5, Priority.HIGH, "bug", True, Author("ada", 0.9), ("io.c", 7), "save",
                       Level.TWO)


def test_traced_and_lazy_return_values(echo_ctx: libaf.Context) -> None:
    ctx = echo_ctx

    def triage(text: libaf.Value) -> libaf.Value:
        r = libaf.lm_schema_call([{"role": "user", "content": text}], "m", Ticket)
        assert isinstance(r, libaf.Value)  # a placeholder inside the trace
        return r

    ir = libaf.trace(triage, "x", ctx=ctx)
    assert "lm_schema_call" in ir.prims
    out = ir("it crashes", ctx=ctx)
    assert libaf.as_type(out, Ticket) == libaf.lm_schema_call(MSG, "m", Ticket, ctx=ctx)
    # the recorded schema is the hand-written tree's
    assert ir == libaf.trace(lambda x: libaf.lm_schema_call([{"role": "user", "content": x}], "m", TICKET_DSL),
                             "x", ctx=ctx)

    with libaf.Context(lazy=True) as lc:
        lc.route("m", libaf.Provider.echo())
        p = libaf.lm_schema_call(MSG, "m", Ticket, ctx=lc)
        assert isinstance(p, libaf.Value) and not p.ready
        assert libaf.as_type(p, Ticket).priority is Priority.LOW


def test_tool_parameters_from_a_dataclass(echo_ctx: libaf.Context) -> None:
    assert libaf.schema_of(Search) == {
        "query": {"type": "str", "min": 1, "max": 100, "doc": "what to look for"},
        "limit": {"type": "int", "min": 3, "max": 10},
    }
    tools = [{"name": "search", "description": "Searches the docs.", "parameters": Search}]
    r = libaf.lm_tool_call(MSG, "", "m", tools, ctx=echo_ctx).to_py()
    assert r["called"] is True and r["names"] == ["search"]
    args = json.loads(r["arguments"][0])
    assert args == {"query": "a", "limit": 3}  # the smallest valid arguments
    assert libaf.as_type(args, Search) == Search("a", 3)
    same = [{"name": "search", "description": "Searches the docs.", "parameters": libaf.schema_of(Search)}]
    assert libaf.lm_tool_call(MSG, "", "m", same, ctx=echo_ctx).to_py() == r
    # traced: the tool list with a type records the same equation
    ir = libaf.trace(lambda h: libaf.lm_tool_call(MSG, h, "m", tools), "", ctx=echo_ctx)
    assert ir == libaf.trace(lambda h: libaf.lm_tool_call(MSG, h, "m", same), "", ctx=echo_ctx)
    with pytest.raises(TypeError, match="Bad.tags"):
        libaf.lm_tool_call(MSG, "", "m", [{"name": "bad", "parameters": Bad}], ctx=echo_ctx)


def test_pydantic_models(echo_ctx: libaf.Context) -> None:
    pydantic = pytest.importorskip("pydantic")
    if not hasattr(pydantic.BaseModel, "model_fields"):
        pytest.skip("pydantic 1")
    from pydantic import BaseModel, Field

    class Address(BaseModel):
        city: str = Field(max_length=30, description="the city")
        zip_code: str = Field(min_length=1, pattern=r"^[0-9]+$")

    class Person(BaseModel):
        """A person."""

        name: Annotated[str, Length(max=20)]
        age: int = Field(ge=0, le=150, description="in years")
        score: Annotated[float, Field(ge=0.0, le=1.0)]
        rank: int = Field(gt=0, lt=11)
        role: Literal["admin", "user"]
        priority: Priority
        address: Address = Field(description="home")

    dsl = {
        "name": {"type": "str", "max": 20},
        "age": {"type": "int", "min": 0, "max": 150, "doc": "in years"},
        "score": {"type": "float", "min": 0.0, "max": 1.0},
        "rank": {"type": "int", "min": 1, "max": 10},
        "role": {"type": "enum", "values": ["admin", "user"]},
        "priority": {"type": "enum", "values": ["low", "high"]},
        "address": {"type": "dict", "doc": "home", "fields": {
            "city": {"type": "str", "max": 30, "doc": "the city"},
            "zip_code": {"type": "str", "min": 1, "pattern": "^[0-9]+$"},
        }},
    }
    assert libaf.schema_of(Person) == dsl
    p = libaf.lm_schema_call(MSG, "m", Person, ctx=echo_ctx)
    assert isinstance(p, Person) and isinstance(p.address, Address)
    assert (p.name, p.age, p.score, p.rank, p.role, p.priority, p.address.zip_code) == \
        ("", 0, 0.0, 1, "admin", Priority.LOW, "0")
    assert libaf.as_type(libaf.lm_schema_call(MSG, "m", dsl, ctx=echo_ctx), Person) == p

    class Loose(BaseModel):
        ratio: float = Field(gt=0)
        names: List[str]

    with pytest.raises(TypeError, match=r"Loose.ratio: an exclusive bound"):
        libaf.schema_of(Loose)


def test_pydantic_is_not_imported_for_other_types() -> None:
    code = (
        "import dataclasses, sys, libaf\n"
        "@dataclasses.dataclass\n"
        "class T:\n"
        "    a: int\n"
        "libaf.schema_of(T); libaf.as_type({'a': 1}, T)\n"
        "assert 'pydantic' not in sys.modules\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


def test_readme_example() -> None:
    readme = (REPO / "bindings" / "python" / "README.md").read_text()
    section = readme.split("## Schemas from Python types", 1)[1]
    code = section.split("```python", 1)[1].split("```", 1)[0]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec", dont_inherit=True), {"__name__": "readme_schema"})  # noqa: S102
    assert "Ticket(title=''" in out.getvalue()
