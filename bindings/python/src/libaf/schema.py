"""Schemas from Python types: the schema trees of libaf.lm_schema_call (and of
the "parameters" of libaf.lm_tool_call's tools) made from Python types, and
instances of those types made from the values they describe.

    @dataclasses.dataclass
    class Ticket:
        title: Annotated[str, Length(max=80), Doc("one line")]
        priority: Annotated[int, Range(1, 5)]
        kind: Literal["bug", "feature"]

    schema_of(Ticket)   # {"title": {"type": "str", "max": 80, "doc": "one line"},
                        #  "priority": {"type": "int", "min": 1, "max": 5},
                        #  "kind": {"type": "enum", "values": ["bug", "feature"]}}
    as_type({"title": "t", "priority": 2, "kind": "bug"}, Ticket)   # Ticket(...)

What maps to what:

* ``bool``, ``int``, ``float``, ``str``: the leaves of those types;
  ``Annotated[...]`` bounds them with :class:`Range` (int, float),
  :class:`Length` and :class:`Pattern` (str), and :class:`Doc` documents any
  node. The constraints of pydantic and annotated-types (``Ge``, ``Le``,
  ``Gt``/``Lt`` on ints, ``MinLen``, ``MaxLen``, ``pattern``) map the same way;
  other ``Annotated`` metadata is ignored.
* ``enum.Enum`` subclasses and ``Literal[...]``: enum leaves (values of one
  kind: str, int or bool); an Enum field's value becomes the member.
* dataclasses (their ``init`` fields, in order; a field's
  ``metadata={"doc": ...}`` is its doc), ``TypedDict`` classes and pydantic 2
  ``BaseModel`` subclasses (``Field(description=...)`` is the doc; pydantic is
  never imported: a class is one when its MRO holds pydantic's BaseModel):
  dict containers, nested types nested containers.
* ``tuple[X, Y, ...]`` of a fixed size: a list container.

Nothing else has a schema: a list of any length (``list[str]``), a dict of
any keys, a union or ``Optional``, ``Any``, a recursive type. Those are a
TypeError naming the field, e.g. ``"Ticket.tags: list[str] has no schema in
libaf: ..."``. Every field is required: a default is not a schema.
"""

from __future__ import annotations

import dataclasses
import enum
import typing
from typing import Any, Literal, Mapping, TypeVar, Union, get_args, get_origin, overload

from .value import Value

__all__ = ["Range", "Length", "Pattern", "Doc", "schema_of", "as_type", "is_schema_type"]

try:  # Python 3.10+: X | Y
    from types import UnionType as _UnionType  # type: ignore[attr-defined,unused-ignore]
except ImportError:  # pragma: no cover - Python 3.9
    _UnionType = None  # type: ignore[assignment,misc,unused-ignore]

_Annotated: Any = getattr(typing, "Annotated", None)
_T = TypeVar("_T")
# Wrappers of a TypedDict key's type that do not change it.
_KEY_WRAPPERS = ("Required", "NotRequired", "ReadOnly")


@dataclasses.dataclass(frozen=True)
class Range:
    """Inclusive bounds of an int or float: ``Annotated[int, Range(1, 5)]``,
    ``Annotated[float, Range(min=0.0)]``."""

    min: Union[int, float, None] = None
    max: Union[int, float, None] = None


@dataclasses.dataclass(frozen=True)
class Length:
    """Bounds of a str's length in code points: ``Annotated[str, Length(max=80)]``."""

    min: Union[int, None] = None
    max: Union[int, None] = None


@dataclasses.dataclass(frozen=True)
class Pattern:
    """A regular expression (RE2 syntax, searched unanchored) a str must
    match: ``Annotated[str, Pattern(r"^[a-z]+$")]``."""

    regex: str


@dataclasses.dataclass(frozen=True)
class Doc:
    """A node's description, sent to the model: ``Annotated[int, Doc("1 to 5")]``."""

    text: str


# -- types to schema trees ---------------------------------------------------------


def schema_of(tp: Any) -> Any:
    """The schema tree (libaf's schema DSL, as lm_schema_call takes) of a
    Python type: a dict container for a dataclass, TypedDict or pydantic
    model, a list container for a fixed-size tuple, a leaf node dict for a
    scalar, Enum or Literal. TypeError naming the field for a type with no
    schema. See the module's docstring for the mapping."""
    return _schema(tp, _label(tp), ())


def is_schema_type(obj: Any) -> bool:
    """True when obj is a Python type to convert with schema_of rather than
    a schema tree already (a dict, list, tuple, Value or scalar)."""
    return not isinstance(obj, (dict, list, tuple, Value, str, int, float, bool, type(None)))


def _label(tp: Any) -> str:
    """How an error names tp: a class by its name, a typing form as written."""
    if _is_class(tp):
        return str(tp.__qualname__)
    return repr(tp).replace("typing.", "").replace("typing_extensions.", "")


def _unsupported(tp: Any, path: str, why: str) -> TypeError:
    label = _label(tp)
    where = f"{path}: " if path != label else ""
    return TypeError(f"{where}{label} has no schema in libaf: {why}")


def _is_class(tp: Any) -> bool:
    """A class, not a parametrized generic (list[int] passes isinstance(..., type))."""
    return isinstance(tp, type) and get_origin(tp) is None


def _is_typeddict(tp: Any) -> bool:
    return _is_class(tp) and issubclass(tp, dict) and hasattr(tp, "__total__") and hasattr(tp, "__annotations__")


def _is_pydantic(tp: Any) -> bool:
    """A pydantic model class, told by its MRO alone (pydantic is not imported)."""
    return _is_class(tp) and any(
        c.__name__ == "BaseModel" and c.__module__.split(".")[0] == "pydantic" for c in tp.__mro__
    )


def _hints(tp: type, path: str) -> dict[str, Any]:
    try:
        return typing.get_type_hints(tp, include_extras=True)
    except Exception as e:  # noqa: BLE001 - NameError of a forward reference, mostly
        raise TypeError(f"{path}: cannot resolve the annotations of {tp.__qualname__}: {e}") from e


def _unwrap(tp: Any) -> tuple[Any, list[Any]]:
    """tp without Annotated / Required / NotRequired, and the Annotated metadata."""
    meta: list[Any] = []
    while True:
        origin = get_origin(tp)
        if _Annotated is not None and origin is _Annotated:
            meta.extend(tp.__metadata__)
            tp = get_args(tp)[0]
        elif origin is not None and getattr(origin, "_name", None) in _KEY_WRAPPERS:
            tp = get_args(tp)[0]
        elif callable(tp) and hasattr(tp, "__supertype__"):  # typing.NewType
            tp = tp.__supertype__
        else:
            return tp, meta


def _schema(tp: Any, path: str, seen: tuple[Any, ...]) -> Any:
    tp, meta = _unwrap(tp)
    node = _bare(tp, path, seen)
    return _constrain(node, meta, tp, path) if meta else node


def _bare(tp: Any, path: str, seen: tuple[Any, ...]) -> Any:
    """The schema of tp, without Annotated metadata."""
    if tp is bool:
        return {"type": "bool"}
    if tp is int:
        return {"type": "int"}
    if tp is float:
        return {"type": "float"}
    if tp is str:
        return {"type": "str"}
    origin = get_origin(tp)
    if origin is Literal:
        return _enum(list(get_args(tp)), tp, path)
    if _is_class(tp) and issubclass(tp, enum.Enum):
        return _enum([m.value for m in tp], tp, path)
    if origin is tuple:
        args = get_args(tp)
        if not args or args == ((),) or (len(args) == 2 and args[1] is Ellipsis):
            raise _unsupported(tp, path, "only a tuple of a fixed, non-zero size (tuple[int, str]) is a list container")
        return [_schema(a, f"{path}[{i}]", seen) for i, a in enumerate(args)]
    if _is_class(tp) and (dataclasses.is_dataclass(tp) or _is_typeddict(tp) or _is_pydantic(tp)):
        if tp in seen:
            raise _unsupported(tp, path, "it is recursive (a schema is a finite tree)")
        seen = (*seen, tp)
        fields: dict[str, Any] = {}
        for key, ftp, meta, doc in _fields(tp, path):
            node = _schema(ftp, f"{path}.{key}", seen)
            node = _constrain(node, meta, ftp, f"{path}.{key}") if meta else node
            fields[key] = _with_doc(node, doc) if doc else node
        if not fields:
            raise _unsupported(tp, path, "it has no fields to fill")
        return _container(fields)
    raise _unsupported(tp, path, _why(tp, origin))


def _why(tp: Any, origin: Any) -> str:
    if origin in (list, set, frozenset) or (origin is not None and getattr(origin, "__name__", "") in (
            "Sequence", "MutableSequence", "Iterable", "Collection", "AbstractSet", "MutableSet")):
        return ("a list of any length cannot be described (schemas have fixed-size containers only); "
                "use a fixed-size tuple[...] or a dataclass of named fields")
    if origin in (dict, Mapping) or (origin is not None and getattr(origin, "__name__", "") == "MutableMapping"):
        return "a dict of any keys cannot be described; use a dataclass or TypedDict of named fields"
    if origin is Union or (_UnionType is not None and isinstance(tp, _UnionType)):
        return "a union (or Optional) cannot be described: every field is required and of one type"
    if tp is Any:
        return "Any cannot be described: give the field a type"
    if _is_class(tp) and tp.__module__ == "builtins":
        return "use bool, int, float, str, an Enum, a Literal, a fixed-size tuple or a class of fields"
    return "use bool, int, float, str, an Enum, a Literal, a fixed-size tuple, a dataclass, a TypedDict or a pydantic model"


def _enum(values: list[Any], tp: Any, path: str) -> dict[str, Any]:
    if not values:
        raise _unsupported(tp, path, "an enum needs at least one value")
    kinds = {_kind(v) for v in values}
    if len(kinds) != 1 or None in kinds:
        raise _unsupported(tp, path, "enum values must be of one kind (str, int or bool), found "
                           + ", ".join(sorted({type(v).__name__ for v in values})))
    return {"type": "enum", "values": [_plain(v) for v in values]}


def _kind(v: Any) -> type | None:
    for k in (bool, int, str):  # bool first: it is an int
        if isinstance(v, k):
            return k
    return None


def _plain(v: Any) -> Any:
    """An enum value as plain data (an IntEnum member as its int)."""
    k = _kind(v)
    return k(v) if k is not None and type(v) is not k else v


def _fields(tp: type, path: str) -> list[tuple[str, Any, list[Any], str | None]]:
    """(key, type, extra metadata, doc) of each field of a dataclass,
    TypedDict or pydantic model, in order."""
    out: list[tuple[str, Any, list[Any], str | None]] = []
    if _is_pydantic(tp):
        model_fields = getattr(tp, "model_fields", None)
        if not isinstance(model_fields, dict):
            raise _unsupported(tp, path, "only pydantic 2 models (with model_fields) are supported")
        for name, info in model_fields.items():
            doc = getattr(info, "description", None)
            out.append((getattr(info, "alias", None) or name, info.annotation, list(getattr(info, "metadata", [])),
                        _doc_text(doc, f"{path}.{name}")))
        return out
    hints = _hints(tp, path)
    if dataclasses.is_dataclass(tp):
        for f in dataclasses.fields(tp):
            if not f.init:
                continue
            doc = f.metadata.get("doc") if f.metadata else None
            out.append((f.name, hints.get(f.name, f.type), [], _doc_text(doc, f"{path}.{f.name}")))
        return out
    return [(name, ftp, [], None) for name, ftp in hints.items()]  # TypedDict


def _doc_text(doc: Any, path: str) -> str | None:
    if doc is None or isinstance(doc, str):
        return doc or None
    raise TypeError(f"{path}: a doc must be a str, got {type(doc).__name__}")


def _container(fields: dict[str, Any], doc: str | None = None) -> Any:
    """A dict container: plain, unless it needs a doc or has a field named
    "type" (which a plain container would read as a node's type)."""
    if doc is None and "type" not in fields:
        return fields
    node: dict[str, Any] = {"type": "dict", "fields": fields}
    if doc:
        node["doc"] = doc
    return node


def _with_doc(node: Any, doc: str) -> Any:
    if isinstance(node, list):
        return {"type": "list", "items": node, "doc": doc}
    if "type" not in node:
        return _container(node, doc)
    return {**node, "doc": doc}


_NUMBERS = ("int", "float")


def _constrain(node: Any, meta: list[Any], tp: Any, path: str) -> Any:
    """node with the constraints and docs of Annotated metadata."""
    leaf = node.get("type") if isinstance(node, dict) else None
    label = _label(tp)

    def need(types: tuple[str, ...], what: str) -> None:
        if leaf not in types:
            raise TypeError(f"{path}: {what} does not apply to {label}")

    def bound(key: str, v: Any, what: str, tighter: Any) -> None:
        if v is None:
            return
        if leaf == "float":
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise TypeError(f"{path}: {what} must be a number, got {v!r}")
            v = float(v)
        elif isinstance(v, bool) or not isinstance(v, int):
            if isinstance(v, float) and v.is_integer():
                v = int(v)
            else:
                raise TypeError(f"{path}: {what} of {label} must be an int, got {v!r}")
        old = node.get(key)
        node[key] = v if old is None else tighter(old, v)

    doc: str | None = None
    node = dict(node) if isinstance(node, dict) else node
    for m in meta:
        if isinstance(m, Doc):
            doc = _doc_text(m.text, path)
        elif isinstance(m, Range):
            need(_NUMBERS, "Range")
            bound("min", m.min, "Range.min", max)
            bound("max", m.max, "Range.max", min)
        elif isinstance(m, Length):
            need(("str",), "Length")
            bound("min", m.min, "Length.min", max)
            bound("max", m.max, "Length.max", min)
        elif isinstance(m, Pattern):
            need(("str",), "Pattern")
            node["pattern"] = m.regex
        else:  # pydantic / annotated-types constraints, by their attributes
            doc = _foreign(m, node, leaf, path, need, bound) or doc
    return _with_doc(node, doc) if doc else node


def _foreign(m: Any, node: Any, leaf: Any, path: str, need: Any, bound: Any) -> str | None:
    """Applies what m's attributes say (ge, le, gt, lt, min_length,
    max_length, pattern) to node; its description, if any."""
    ge, le = getattr(m, "ge", None), getattr(m, "le", None)
    gt, lt = getattr(m, "gt", None), getattr(m, "lt", None)
    if any(b is not None for b in (ge, le, gt, lt)):
        need(_NUMBERS, type(m).__name__)
        if (gt is not None or lt is not None) and leaf == "float":
            raise TypeError(f"{path}: an exclusive bound (gt/lt) of a float has no schema in libaf; use ge/le")
        bound("min", ge, "ge", max)
        bound("max", le, "le", min)
        bound("min", gt + 1 if isinstance(gt, int) else gt, "gt", max)
        bound("max", lt - 1 if isinstance(lt, int) else lt, "lt", min)
    lo, hi = getattr(m, "min_length", None), getattr(m, "max_length", None)
    if lo is not None or hi is not None:
        need(("str",), type(m).__name__)
        bound("min", lo, "min_length", max)
        bound("max", hi, "max_length", min)
    pattern = getattr(m, "pattern", None)
    if isinstance(pattern, str):
        need(("str",), "pattern")
        node["pattern"] = pattern
    description = getattr(m, "description", None)
    return description if isinstance(description, str) and description else None


# -- values to instances ------------------------------------------------------


@overload
def as_type(value: Any, tp: type[_T]) -> _T: ...


@overload
def as_type(value: Any, tp: Any) -> Any: ...


def as_type(value: Any, tp: Any) -> Any:
    """An instance of tp built from value: a concrete libaf Value (a promise
    is evaluated) or plain data, as lm_schema_call returns for schema_of(tp).
    A dataclass instance, a TypedDict's dict, a pydantic model (validated by
    pydantic), an Enum member, a tuple, or the scalar. TypeError (wrong kind,
    missing field) or ValueError (not a member of the Enum or Literal) naming
    the field."""
    if isinstance(value, Value):
        value = value.to_py()
    return _build(tp, value, _label(tp))


def _build(tp: Any, data: Any, path: str) -> Any:
    tp, _ = _unwrap(tp)
    if tp is bool or tp is str:
        if not isinstance(data, tp):
            raise TypeError(f"{path}: expected {tp.__name__}, got {type(data).__name__} {data!r}")
        return data
    if tp is int:
        if isinstance(data, bool) or not isinstance(data, int):
            raise TypeError(f"{path}: expected int, got {type(data).__name__} {data!r}")
        return data
    if tp is float:
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            raise TypeError(f"{path}: expected float, got {type(data).__name__} {data!r}")
        return float(data)
    origin = get_origin(tp)
    if origin is Literal:
        for v in get_args(tp):
            if type(v) is type(data) and v == data:
                return v
        raise ValueError(f"{path}: {data!r} is not one of {list(get_args(tp))!r}")
    if _is_class(tp) and issubclass(tp, enum.Enum):
        for m in tp:
            if _plain(m.value) == data and type(_plain(m.value)) is type(data):
                return m
        raise ValueError(f"{path}: {data!r} is not a value of {tp.__qualname__}")
    if origin is tuple:
        args = get_args(tp)
        if not isinstance(data, (list, tuple)) or len(data) != len(args):
            raise TypeError(f"{path}: expected a list of {len(args)} items, got {data!r}")
        return tuple(_build(a, x, f"{path}[{i}]") for i, (a, x) in enumerate(zip(args, data)))
    if _is_pydantic(tp):
        validate = getattr(tp, "model_validate", None)
        if validate is None:
            raise TypeError(f"{path}: only pydantic 2 models (with model_validate) are supported")
        return validate(data)
    if _is_class(tp) and (dataclasses.is_dataclass(tp) or _is_typeddict(tp)):
        if not isinstance(data, dict):
            raise TypeError(f"{path}: expected a dict of the fields of {tp.__qualname__}, got {data!r}")
        kwargs: dict[str, Any] = {}
        for key, ftp, _meta, _doc in _fields(tp, path):
            if key not in data:
                raise TypeError(f"{path}.{key}: missing")
            kwargs[key] = _build(ftp, data[key], f"{path}.{key}")
        return tp(**kwargs)
    raise _unsupported(tp, path, _why(tp, origin))
