"""libaf values and their conversion to and from plain Python objects.

A :class:`Value` is an immutable, reference-counted libaf tree. Plain Python
objects (``None``, ``bool``, ``int``, ``float``, ``str``, ``list``/``tuple``,
``dict`` with ``str`` keys) convert both ways; inside a trace a Value may be a
*placeholder*, whose content is only known when the program runs.
"""

from __future__ import annotations

import ctypes
import enum
import json
import threading
from typing import Any, Iterable, Iterator, Union

from . import _blocking, _lib
from ._lib import lib
from .errors import check

__all__ = ["Kind", "Value", "to_value", "to_py", "Tree"]

#: What every libaf entry point accepts as a value: a Value or plain Python
#: data that may hold Values.
Tree = Union["Value", None, bool, int, float, str, list, tuple, dict]


class Kind(enum.IntEnum):
    """AF_KIND_*: the kind of a value."""

    NULL = 0
    BOOL = 1
    INT = 2
    FLOAT = 3
    STR = 4
    LIST = 5
    DICT = 6
    PLACEHOLDER = 7


_builder_lock = threading.Lock()
_builder_ctx: int | None = None


def _builder() -> int:
    """A private context for building values (values are not tied to any
    context, but the constructors take one)."""
    global _builder_ctx
    with _builder_lock:
        if _builder_ctx is None:
            out = ctypes.c_void_p()
            check(lib.af_context_new(ctypes.byref(out)))
            _builder_ctx = out.value
        assert _builder_ctx is not None  # af_context_new succeeded
        return _builder_ctx


_PLACEHOLDER_HINT = (
    "this value is traced: its content is only known when the program runs. "
    "Use libaf.switch / libaf.while_loop to branch on it, libaf.format to "
    "build strings from it, or make the input static"
)


class Value:
    """An immutable libaf value (a handle; freed when garbage collected).

    A promise (made on a lazy context) keeps its context alive: evaluating
    it needs the context."""

    __slots__ = ("_ptr", "_ctx", "__weakref__")
    _ptr: int | None
    # What keeps this value's promises evaluable: their Context, or for a
    # tree built from promises of several contexts, those promises (each
    # holding its own). None for every other value.
    _ctx: Any

    def __init__(self, obj: Tree = None) -> None:
        """Converts plain Python data (see :func:`to_value`)."""
        self._ptr = self._ctx = None
        src = to_value(obj)
        self._ptr = lib.af_value_clone(src._ptr)
        self._ctx = src._ctx

    @classmethod
    def _own(cls, ptr: int | None, ctx: Any = None) -> "Value":
        v = cls.__new__(cls)
        v._ptr, v._ctx = ptr, ctx
        return v

    @classmethod
    def from_json(cls, text: str | bytes) -> "Value":
        """Parses exact JSON (ints stay int, floats stay float)."""
        data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        out = ctypes.c_void_p()
        check(lib.af_value_from_json(_builder(), data, len(data), ctypes.byref(out)))
        return cls._own(out.value)

    def __del__(self) -> None:
        _lib.release(self, lib.af_value_free)

    @property
    def kind(self) -> Kind:
        """The kind; PLACEHOLDER for a traced leaf."""
        return Kind(lib.af_value_kind(self._ptr))

    @property
    def is_placeholder(self) -> bool:
        return self.kind == Kind.PLACEHOLDER

    @property
    def ready(self) -> bool:
        """True when reading this value runs nothing: it is concrete, or every
        promise in it (lazy contexts) has been evaluated."""
        return bool(lib.af_value_ready(self._ptr))

    def _evaluate(self) -> None:
        """Before a read that would evaluate this value's pending promises:
        evaluates them interruptibly instead (see settle). A read of a ready
        value stays a direct call."""
        if self._ctx is not None and not lib.af_value_ready(self._ptr):
            settle((self,))

    def to_json(self) -> str:
        """Compact JSON. InvalidArgument for placeholders (or trees holding one)."""
        self._evaluate()
        b = _lib.Bytes()
        check(lib.af_value_to_json(self._ptr, ctypes.byref(b)))
        return _lib.take_bytes(b).decode("utf-8")

    def to_py(self) -> Any:
        """Plain Python data: None, bool, int, float, str, list, dict (in
        insertion order). InvalidArgument for placeholders."""
        return json.loads(self.to_json())

    def __len__(self) -> int:
        if self._ctx is not None and not lib.af_value_ready(self._ptr):
            # The length of a batched list a promise holds evaluates it; that
            # of a container of promises does not, so nothing is evaluated
            # first: the call itself waits interruptibly.
            return _blocking.run(self._len)
        return self._len()

    def _len(self) -> int:
        n = ctypes.c_size_t()
        check(lib.af_value_len(self._ptr, ctypes.byref(n)))
        return n.value

    def __getitem__(self, key: int | str) -> "Value":
        """Item i of a list (negative counts from the end) or the value under
        a dict key. Works on trees holding placeholders."""
        out = ctypes.c_void_p()
        if isinstance(key, str):
            k = _lib.utf8(key, "key")
            check(lib.af_value_key(self._ptr, k, len(k), ctypes.byref(out)))
        elif isinstance(key, int) and not isinstance(key, bool):
            n = len(self)
            i = key + n if key < 0 else key
            if not 0 <= i < n:
                raise IndexError(f"index {key} out of range for a {self.kind.name.lower()} of {n}")
            check(lib.af_value_index(self._ptr, i, ctypes.byref(out)))
        else:
            raise TypeError(f"a Value is indexed by int or str, not {type(key).__name__}")
        return Value._own(out.value, self._ctx)

    def keys(self) -> list[str]:
        """A dict's keys in insertion order."""
        keys = []
        for i in range(len(self)):
            p, n = ctypes.c_void_p(), ctypes.c_size_t()
            check(lib.af_value_key_at(self._ptr, i, ctypes.byref(p), ctypes.byref(n)))
            keys.append(ctypes.string_at(p, n.value).decode("utf-8"))
        return keys

    def items(self) -> list[tuple[str, "Value"]]:
        """A dict's (key, value) pairs in insertion order."""
        return [(k, self[i]) for i, k in enumerate(self.keys())]

    def __iter__(self) -> Iterator["Value"]:
        """The items of a list (the values of a dict)."""
        for i in range(len(self)):
            yield self[i]

    def __bool__(self) -> bool:
        if self.is_placeholder:
            raise TypeError("cannot use a traced value as a Python bool: " + _PLACEHOLDER_HINT)
        if self.kind == Kind.BOOL:
            self._evaluate()
            out = ctypes.c_int32()
            check(lib.af_value_get_bool(self._ptr, ctypes.byref(out)))
            return bool(out.value)
        if self.kind in (Kind.LIST, Kind.DICT):
            return len(self) > 0  # never reads the items, which may be traced
        return bool(self.to_py())

    def __str__(self) -> str:
        if self.is_placeholder:
            raise TypeError("cannot convert a traced value to a Python str: " + _PLACEHOLDER_HINT)
        if self.kind == Kind.STR:
            self._evaluate()
            p, n = ctypes.c_void_p(), ctypes.c_size_t()
            check(lib.af_value_get_str(self._ptr, ctypes.byref(p), ctypes.byref(n)))
            return ctypes.string_at(p, n.value).decode("utf-8")
        return self.to_json()

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)

    def __int__(self) -> int:
        if self.kind != Kind.INT:
            raise TypeError(f"int() of a {self.kind.name.lower()} value")
        return self.to_py()

    def __float__(self) -> float:
        if self.kind not in (Kind.INT, Kind.FLOAT):
            raise TypeError(f"float() of a {self.kind.name.lower()} value")
        return float(self.to_py())

    def __add__(self, other: Tree) -> "Value":
        """String concatenation (libaf concat), traced or evaluated."""
        from .ops import concat

        return concat(self, other)

    def __radd__(self, other: Tree) -> "Value":
        from .ops import concat

        return concat(other, self)

    def __eq__(self, other: object) -> bool:
        """Equality of concrete values (compares their JSON); a placeholder
        is only equal to itself. Use libaf.match to compare traced strings."""
        if self is other:
            return True
        if self.is_placeholder:
            return False
        try:
            return self.to_py() == (other.to_py() if isinstance(other, Value) else other)
        except Exception:
            return False

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        try:
            return f"Value({self.to_json()})"
        except Exception:
            if self.is_placeholder:
                return "Value(<traced>)"
            return f"Value(<{self.kind.name.lower()} holding traced values>)"


def _has_value(obj: Any) -> bool:
    if isinstance(obj, Value):
        return True
    if isinstance(obj, (list, tuple)):
        return any(_has_value(x) for x in obj)
    if isinstance(obj, dict):
        return any(_has_value(x) for x in obj.values())
    return False


def _build(obj: Any) -> Value:
    """Builds a tree that holds Values leaf by leaf."""
    if isinstance(obj, Value):
        return obj
    ctx = _builder()
    out = ctypes.c_void_p()
    if isinstance(obj, (list, tuple)):
        items = [_build(x) for x in obj]
        check(lib.af_value_list(ctx, _lib.handles(items), len(items), ctypes.byref(out)))
    elif isinstance(obj, dict):
        keys = [_lib.utf8(k, "a dict key") for k in obj]
        items = [_build(x) for x in obj.values()]
        n = len(keys)
        c_keys = (ctypes.c_char_p * max(n, 1))(*keys)
        c_lens = (ctypes.c_size_t * max(n, 1))(*[len(k) for k in keys])
        check(lib.af_value_dict(ctx, c_keys, c_lens, _lib.handles(items), n, ctypes.byref(out)))
    else:
        return _leaf(obj)
    return Value._own(out.value, _owner(items))


def _owner(items: list[Value]) -> Any:
    """The _ctx of a tree built from items: their promises' context when
    they share one (or have none), else the items holding promises."""
    owner = None
    for item in items:
        if item._ctx is not None and item._ctx is not owner:
            if owner is not None:
                return [i for i in items if i._ctx is not None]
            owner = item._ctx
    return owner


def settle(values: Iterable[Value]) -> None:
    """Evaluates the pending promises among values, one evaluation per
    context, so that reading them next runs nothing: waited for
    interruptibly, Ctrl-C cancelling the evaluation (_blocking). Where a
    wait cannot be interrupted anyway (another thread than the main one),
    nothing is done: the read evaluates them, as it always did."""
    if not _blocking.can_hop():
        return
    pending: dict[Any, list[Value]] = {}
    _pending(values, pending)
    for ctx, vals in pending.items():
        if ctx._ptr:  # a closed context's promises: the read says so
            ctx._settle(vals)


def _pending(values: Iterable[Value], into: dict) -> None:
    for v in values:
        owner = v._ctx
        if owner is None or lib.af_value_ready(v._ptr):
            continue
        if type(owner) is list:
            _pending(owner, into)
        else:
            into.setdefault(owner, []).append(v)


def _leaf(obj: Any) -> Value:
    ctx = _builder()
    out = ctypes.c_void_p()
    if obj is None:
        check(lib.af_value_null(ctx, ctypes.byref(out)))
    elif isinstance(obj, bool):
        check(lib.af_value_bool(ctx, int(obj), ctypes.byref(out)))
    elif isinstance(obj, int):
        if not -(2**63) <= obj < 2**63:
            raise OverflowError(f"int {obj} does not fit libaf's int64")
        check(lib.af_value_int(ctx, obj, ctypes.byref(out)))
    elif isinstance(obj, float):
        check(lib.af_value_float(ctx, obj, ctypes.byref(out)))
    elif isinstance(obj, str):
        s = _lib.utf8(obj, "a str")
        check(lib.af_value_str(ctx, s, len(s), ctypes.byref(out)))
    else:
        raise TypeError(
            f"cannot convert {type(obj).__name__} to a libaf value: use None, bool, int, "
            "float, str, list, tuple or dict with str keys"
        )
    return Value._own(out.value)


def _check_keys(obj: Any) -> None:
    if isinstance(obj, dict):
        for k, x in obj.items():
            if not isinstance(k, str):
                raise TypeError(f"libaf dict keys must be str, got {type(k).__name__} {k!r}")
            _check_keys(x)
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            _check_keys(x)


def to_value(obj: Tree) -> Value:
    """A libaf Value for plain Python data (or the Value itself). Plain trees
    cross into libaf as one JSON document; trees holding Values (e.g. traced
    placeholders) are built item by item."""
    if isinstance(obj, Value):
        return obj
    if _has_value(obj):
        return _build(obj)
    if isinstance(obj, (list, tuple, dict)):
        _check_keys(obj)
        try:
            text = json.dumps(obj, allow_nan=False, ensure_ascii=False)
        except TypeError:
            return _build(obj)  # names the offending leaf's type
        except ValueError as e:
            raise ValueError(f"cannot convert to a libaf value: {e} (NaN and infinity have no JSON form)") from None
        return Value.from_json(text)
    return _leaf(obj)


def to_py(obj: Any) -> Any:
    """Plain Python data for a Value, or for a tree holding Values (tuples
    become lists, as in libaf); other objects as is."""
    if isinstance(obj, Value):
        return obj.to_py()
    if isinstance(obj, (list, tuple)):
        return [to_py(x) for x in obj]
    if isinstance(obj, dict):
        return {k: to_py(x) for k, x in obj.items()}
    return obj
