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
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Union

from . import _blocking, _lib
from ._lib import lib
from .errors import check, error_class

if TYPE_CHECKING:
    from .context import Context

__all__ = ["Kind", "Value", "to_value", "to_py", "Tree"]

#: What every libaf entry point accepts as a value: a Value or plain Python
#: data that may hold Values. The items of a list or tuple and the values of
#: a dict (keys are str) are Trees too; they are typed Any because list and
#: dict are invariant: a ``list[str]`` is not a ``list[Tree]``.
Tree = Union["Value", None, bool, int, float, str, list[Any], tuple[Any, ...], dict[str, Any]]


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


_value_free = lib.af_value_free
_value_kind = lib.af_value_kind
#: Kind by AF_KIND_* code (Kind(code) builds nothing, but costs a call).
_KINDS = tuple(sorted(Kind, key=int))


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
        check(lib.af_value_json_new(data, len(data), ctypes.byref(out)))
        return cls._own(out.value)

    def __del__(self) -> None:
        # _lib.release, inlined: every value made ends here. _lib is None
        # once the interpreter's teardown cleared this module (after exit:
        # nothing is freed then), and interned values may die after that.
        ptr = self._ptr
        if ptr and _lib is not None and not _lib._exiting:
            self._ptr = None
            _value_free(ptr)

    @property
    def kind(self) -> Kind:
        """The kind; PLACEHOLDER for a traced leaf."""
        k = _value_kind(self._ptr)
        return _KINDS[k] if 0 <= k < len(_KINDS) else Kind(k)  # Kind(k): the enum's own error

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

    def to_py(self, errors: bool = False) -> Any:
        """Plain Python data: None, bool, int, float, str, list, dict (in
        insertion order). InvalidArgument for placeholders.

        errors=True: each error value (what a failed item or leaf of a run
        with item_errors or keep_going holds: {"error": {"code", "name",
        "message"}}) becomes the libaf exception it stands for (e.g.
        libaf.ProviderError, with .code and .message), so failed items can
        be told apart with isinstance and raised as they are."""
        data = json.loads(self.to_json())
        return _errors_as_exceptions(data) if errors else data

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
        kind = self.kind
        if kind == Kind.PLACEHOLDER:
            raise TypeError("cannot use a traced value as a Python bool: " + _PLACEHOLDER_HINT)
        if kind == Kind.BOOL:
            self._evaluate()
            out = ctypes.c_int32()
            check(lib.af_value_get_bool(self._ptr, ctypes.byref(out)))
            return bool(out.value)
        if kind in (Kind.LIST, Kind.DICT):
            return len(self) > 0  # never reads the items, which may be traced
        return bool(self.to_py())

    def __str__(self) -> str:
        kind = self.kind
        if kind == Kind.PLACEHOLDER:
            raise TypeError("cannot convert a traced value to a Python str: " + _PLACEHOLDER_HINT)
        if kind == Kind.STR:
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
        value: int = self.to_py()
        return value

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
            equal: bool = self.to_py() == (other.to_py() if isinstance(other, Value) else other)
            return equal
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
    out = ctypes.c_void_p()
    if isinstance(obj, (list, tuple)):
        items = [_build(x) for x in obj]
        check(lib.af_value_list_new(_lib.handles(items), len(items), ctypes.byref(out)))
    elif isinstance(obj, dict):
        keys = [_lib.utf8(k, "a dict key") for k in obj]
        items = [_build(x) for x in obj.values()]
        n = len(keys)
        c_keys = (ctypes.c_char_p * max(n, 1))(*keys)
        c_lens = (ctypes.c_size_t * max(n, 1))(*[len(k) for k in keys])
        check(lib.af_value_dict_new(c_keys, c_lens, _lib.handles(items), n, ctypes.byref(out)))
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
    pending: dict[Context, list[Value]] = {}
    _pending(values, pending)
    for ctx, vals in pending.items():
        if ctx._ptr:  # a closed context's promises: the read says so
            ctx._settle(vals)


async def asettle(values: Iterable[Value]) -> None:
    """settle for asyncio: awaits the evaluation of the pending promises
    among values (their contexts' aeval), so that reading them next neither
    runs nor blocks the running loop."""
    pending: dict[Context, list[Value]] = {}
    _pending(values, pending)
    for ctx, vals in pending.items():
        if ctx._ptr:  # a closed context's promises: the read says so
            await ctx._asettle(vals)


def _pending(values: Iterable[Value], into: dict[Context, list[Value]]) -> None:
    for v in values:
        owner = v._ctx
        if owner is None or lib.af_value_ready(v._ptr):
            continue
        if type(owner) is list:
            _pending(owner, into)
        else:
            into.setdefault(owner, []).append(v)


def _leaf(obj: Any) -> Value:
    out = ctypes.c_void_p()
    if obj is None:
        check(lib.af_value_null_new(ctypes.byref(out)))
    elif isinstance(obj, bool):
        check(lib.af_value_bool_new(int(obj), ctypes.byref(out)))
    elif isinstance(obj, int):
        if not -(2**63) <= obj < 2**63:
            raise OverflowError(f"int {obj} does not fit libaf's int64")
        check(lib.af_value_int_new(obj, ctypes.byref(out)))
    elif isinstance(obj, float):
        check(lib.af_value_float_new(obj, ctypes.byref(out)))
    elif isinstance(obj, str):
        s = _lib.utf8(obj, "a str")
        check(lib.af_value_str_new(s, len(s), ctypes.byref(out)))
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


def _to_value_per_leaf(obj: Tree) -> Value:
    """The reference conversion: plain trees as one JSON document after a
    key check, trees holding Values item by item. to_value falls back to it
    for everything its fast path does not take, so its errors are the ones
    users always saw."""
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


# -- the fast path ---------------------------------------------------------------
# A plain tree crosses into libaf as one JSON document (one C call, one
# Python object). A tree holding Values (e.g. messages whose content is a
# promise) is built from raw handles: each maximal plain subtree one JSON
# document, each container on the way to a Value one af_value_list_new /
# af_value_dict_new, and no Python Value (nor its finalizer) for any part but
# the root. Short str leaves, the constants and dict key sets are interned:
# a message's "role": "user" costs no C call at all. Anything unusual (a
# non-str key, an unknown leaf type, an int beyond int64, NaN, a surrogate,
# nesting libaf refuses) goes to _to_value_per_leaf, which converts it or
# raises exactly what it always raised.


class _Slow(Exception):
    """The fast path declines: _to_value_per_leaf converts (or explains)."""


_SCALARS = (str, int, float, bool, type(None))
_SCALAR_SET = frozenset(_SCALARS)
_STR_ONLY = {str}
_CONTAINERS = (list, tuple, dict)
#: Interned str leaves (as Values: values are immutable, so one may stand
#: for every equal str) and dict key sets (as C arrays): strs of at most
#: _INTERN_LEN characters, at most _INTERN_MAX entries per table, which is
#: emptied when full. Whoever got an entry holds a reference to it, so
#: emptying a table never frees a handle in use. None, True and False are
#: made once and never freed.
_INTERN_MAX = 4096
_INTERN_LEN = 64
_interned: dict[str, Value] = {}
_key_sets: dict[tuple[str, ...], tuple[ctypes.Array[ctypes.c_char_p], ctypes.Array[ctypes.c_size_t]]] = {}
_consts: dict[bool | None, int] = {}
_intern_lock = threading.Lock()
_byref = ctypes.byref
_c_void_p = ctypes.c_void_p


def _str_value(s: str) -> Value:
    """The Value of str s (interned when short); _leaf's errors."""
    v = _interned.get(s)
    if v is not None:
        return v
    v = _leaf(s)
    if len(s) <= _INTERN_LEN:
        if len(_interned) >= _INTERN_MAX:
            _interned.clear()
        v = _interned.setdefault(s, v)
    return v


def _str_ptr(s: str, temps: list[int | None], keep: list[Value]) -> int:
    """A handle of str s, its Value kept alive by keep while it is used."""
    if len(s) <= _INTERN_LEN:
        v = _str_value(s)
        keep.append(v)
        return v._ptr  # type: ignore[return-value]
    b = s.encode("utf-8", "surrogatepass")
    out = _c_void_p()
    check(lib.af_value_str_new(b, len(b), _byref(out)))
    temps.append(out.value)
    return out.value  # type: ignore[return-value]


def _const_ptr(obj: bool | None) -> int:
    """The interned handle of None, True or False."""
    p = _consts.get(obj)
    if p is None:
        out = _c_void_p()
        if obj is None:
            check(lib.af_value_null_new(_byref(out)))
        else:
            check(lib.af_value_bool_new(1 if obj else 0, _byref(out)))
        made = out.value
        assert made is not None  # the call succeeded
        with _intern_lock:
            p = _consts.setdefault(obj, made)
        if p != out.value:
            lib.af_value_free(out.value)
    return p


def _leaf_ptr(obj: Any, temps: list[int | None], keep: list[Value]) -> int:
    """A handle of a plain leaf, as _leaf makes it (NaN and infinity
    included); _Slow for what _leaf would refuse."""
    t = type(obj)
    if t is str:
        return _str_ptr(obj, temps, keep)
    if obj is None or t is bool:
        return _const_ptr(obj)
    out = _c_void_p()
    if t is int:
        if not -(2**63) <= obj < 2**63:
            raise _Slow
        check(lib.af_value_int_new(obj, _byref(out)))
    elif t is float:
        check(lib.af_value_float_new(obj, _byref(out)))
    else:
        raise _Slow  # subclasses and the rest: _leaf's own rules
    temps.append(out.value)
    return out.value  # type: ignore[return-value]


#: json.dumps(obj, allow_nan=False, ensure_ascii=False), made once (dumps
#: with options makes an encoder every call). No circularity check: _scan
#: walks every container first, so a cycle never gets here.
_encode = json.JSONEncoder(allow_nan=False, ensure_ascii=False, check_circular=False).encode
#: Plain containers interned by their JSON text, like short strs (a system
#: message sent with every call crosses once): texts of at most
#: _JSON_INTERN_LEN characters, at most _JSON_INTERN_MAX of them.
_JSON_INTERN_LEN = 1024
_JSON_INTERN_MAX = 1024
_interned_json: dict[str, Value] = {}


def _json_value(obj: Any) -> Value:
    """The Value of a plain container (keys checked by _scan) from one JSON
    document; _Slow for what JSON cannot carry exactly (NaN, infinity, an
    int beyond int64, a lone surrogate, too deep)."""
    try:
        text = _encode(obj)
    except (TypeError, ValueError):
        raise _Slow from None
    short = len(text) <= _JSON_INTERN_LEN
    if short:
        v = _interned_json.get(text)
        if v is not None:
            return v
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        raise _Slow from None
    out = _c_void_p()
    err = lib.af_value_json_new(data, len(data), _byref(out))
    if err:
        lib.af_error_free(err)
        raise _Slow  # the per-leaf path says what it always said
    v = Value._own(out.value)
    if short:
        if len(_interned_json) >= _JSON_INTERN_MAX:
            _interned_json.clear()
        v = _interned_json.setdefault(text, v)
    return v


def _plain_ptr(obj: Any, temps: list[int | None], keep: list[Value]) -> int:
    if type(obj) in _CONTAINERS:
        v = _json_value(obj)
        keep.append(v)
        return v._ptr  # type: ignore[return-value]
    return _leaf_ptr(obj, temps, keep)


def _keys_of(d: dict[str, Any]) -> tuple[ctypes.Array[ctypes.c_char_p], ctypes.Array[ctypes.c_size_t]]:
    """The C key and length arrays of d's keys (all str), shared per key set."""
    keys = tuple(d)
    hit = _key_sets.get(keys)
    if hit is None:
        enc = [k.encode("utf-8", "surrogatepass") for k in keys]
        n = max(len(enc), 1)
        hit = ((ctypes.c_char_p * n)(*enc), (ctypes.c_size_t * n)(*[len(k) for k in enc]))
        if sum(map(len, keys)) <= 16 * _INTERN_LEN:
            if len(_key_sets) >= _INTERN_MAX:
                _key_sets.clear()  # arrays in use are held by their callers
            _key_sets[keys] = hit
    return hit


def _scan(obj: Any, temps: list[int | None], found: list[Value], keep: list[Value]) -> int | None:
    """The handle of a container holding Values, built (in temps); None for
    a plain container (nothing built). Values met go to found, interned
    ones used to keep. _Slow for a non-str key or an unknown leaf type."""
    t = type(obj)
    if t is dict:
        if obj and set(map(type, obj)) != _STR_ONLY:
            raise _Slow
        items = obj.values()
    else:
        items = obj
    if _SCALAR_SET.issuperset(map(type, items)):
        return None  # leaves only (the common case), checked at C speed
    built: list[int | None] | None = None
    for i, x in enumerate(items):
        tx = type(x)
        if tx in _SCALARS:
            continue
        if tx is Value:
            p = x._ptr
            found.append(x)
        elif tx in _CONTAINERS:
            p = _scan(x, temps, found, keep)
            if p is None:
                continue
        else:
            raise _Slow  # subclasses (a Value's too) and unknown types
        if built is None:
            built = [None] * len(obj)
        built[i] = p
    if built is None:
        return None
    for i, x in enumerate(items):
        if built[i] is None:
            v = _interned.get(x) if type(x) is str else None  # "role": "user"
            if v is not None:
                keep.append(v)
                built[i] = v._ptr
            else:
                built[i] = _plain_ptr(x, temps, keep)
    n = len(built)
    handles = (_c_void_p * n)(*built) if n else (_c_void_p * 1)()
    out = _c_void_p()
    if t is dict:
        c_keys, c_lens = _keys_of(obj)
        err = lib.af_value_dict_new(c_keys, c_lens, handles, n, _byref(out))
    else:
        err = lib.af_value_list_new(handles, n, _byref(out))
    if err:
        lib.af_error_free(err)
        raise _Slow  # e.g. nesting deeper than libaf allows: say it as before
    temps.append(out.value)
    return out.value


def to_value(obj: Tree) -> Value:
    """A libaf Value for plain Python data (or the Value itself). Plain trees
    cross into libaf as one JSON document; trees holding Values (e.g. traced
    placeholders, promises) are built from handles, their plain subtrees one
    JSON document each."""
    t = type(obj)
    if t is Value:
        return obj  # type: ignore[return-value]
    if t is str:
        return _str_value(obj)  # type: ignore[arg-type]
    if t not in _CONTAINERS:
        return _to_value_per_leaf(obj)
    temps: list[int | None] = []
    found: list[Value] = []
    keep: list[Value] = []
    try:
        root = _scan(obj, temps, found, keep)
        if root is None:
            return _json_value(obj)
        temps.pop()  # root is always the last handle _scan made
    except Exception:  # noqa: BLE001 - _Slow, or an error the per-leaf path raises as it always did
        return _to_value_per_leaf(obj)
    finally:
        for p in temps:
            lib.af_value_free(p)
    return Value._own(root, _owner(found) if found else None)


def _errors_as_exceptions(data: Any) -> Any:
    if isinstance(data, list):
        return [_errors_as_exceptions(x) for x in data]
    if isinstance(data, dict):
        e = data.get("error") if len(data) == 1 else None
        if (isinstance(e, dict) and set(e) == {"code", "name", "message"} and isinstance(e["code"], int)
                and isinstance(e["message"], str)):
            return error_class(e["code"])(e["message"], e["code"])
        return {k: _errors_as_exceptions(v) for k, v in data.items()}
    return data


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
