"""Tracing Python functions into IRs.

``libaf.trace(fn, *examples, static=..., lists=...)`` traces fn once on
placeholders shaped like the examples and returns the Ir. ``@libaf.trace``
(or ``@libaf.trace(static=..., lists=...)``) wraps fn in a :class:`Traced`
function that traces on first use for each input shape, compiles, and runs
on later calls. ``lists`` marks inputs traced as lists of any length.
"""

from __future__ import annotations

import ctypes
import functools
import json
import threading
from typing import TYPE_CHECKING, AbstractSet, Any, Callable, Sequence, Union, overload

from . import _callbacks, _lib
from ._lib import lib
from .context import Context, _Closed, current, tracing_with
from .errors import CallbackError, Error, check
from .ir import Ir
from .value import Kind, Tree, Value, to_py, to_value

if TYPE_CHECKING:
    from .program import Program

__all__ = ["trace", "Traced"]

#: Which inputs are static (``static=``) or lists of any length (``lists=``):
#: a bool tree that is a prefix of the list of inputs (True = all of them), or
#: a tuple or set of input positions.
Static = Union[Tree, AbstractSet[int]]


def _mask(static: Static, n: int) -> Tree:
    """The C API's static mask: a bool tree that is a prefix of the inputs.
    A set/tuple of ints (like jax's static_argnums) names static positions."""
    if static is None or static is False:
        return None
    if isinstance(static, (set, frozenset, tuple)) and all(
        isinstance(i, int) and not isinstance(i, bool) for i in static
    ):
        bad = [i for i in static if not 0 <= i < n]
        if bad:
            raise IndexError(f"static positions {sorted(bad)} out of range for {n} inputs")
        return [i in static for i in range(n)]
    mask: Tree = static  # type: ignore[assignment]  # a set here is not positions: to_value refuses it
    return mask


# The lists of any length among the inputs of the traces running now: the
# placeholder's handle -> (an example item, whether that item is itself a list
# of any length). A placeholder's items cannot be read from libaf while
# tracing; libaf.scan needs one to trace a Python callable body on.
_list_items: dict[int, tuple[Value, bool]] = {}
_list_items_lock = threading.Lock()


def _remember_list_items(mask: Any, examples: Any, inputs: Any) -> list[int]:
    """Records the example item of each input list_mask marks (walking the
    mask, the examples and the placeholders together); returns the handles
    recorded, for _forget."""
    known: list[int] = []

    def walk(m: Any, ex: Value, ph: Value) -> None:
        if m is True:
            if ph._ptr and ph.is_placeholder and ex.kind == Kind.LIST and len(ex) > 0:
                item = ex[0]
                with _list_items_lock:
                    _list_items[ph._ptr] = (item, item.kind == Kind.LIST)
                known.append(ph._ptr)
        elif isinstance(m, (list, tuple)) and ex.kind == Kind.LIST and ph.kind == Kind.LIST:
            for i, sub in enumerate(m):
                if i < len(ex) and i < len(ph):
                    walk(sub, ex[i], ph[i])
        elif isinstance(m, dict) and ex.kind == Kind.DICT and ph.kind == Kind.DICT:
            ex_keys, ph_keys = set(ex.keys()), set(ph.keys())
            for k, sub in m.items():
                if k in ex_keys and k in ph_keys:
                    walk(sub, ex[k], ph[k])

    if mask is None:
        return known
    if mask is True:
        mask = [True] * len(inputs)
    if isinstance(mask, (list, tuple)):
        try:
            for i, m in enumerate(mask):
                if i < len(examples) and i < len(inputs):
                    walk(m, examples[i], inputs[i])
        except Error:
            pass  # a mask libaf rejects fails the trace itself; nothing more to record
    return known


def _forget(known: list[int]) -> None:
    with _list_items_lock:
        for p in known:
            _list_items.pop(p, None)


def list_item_example(v: Value) -> tuple[Value, bool] | None:
    """For a list of any length an enclosing trace takes as input: an
    example item and whether it is itself a list of any length; else None."""
    with _list_items_lock:
        return _list_items.get(v._ptr or 0)


def trace_ir(fn: Callable[..., Tree], examples: Sequence[Tree], static: Static, ctx: Context,
             lists: Static = None) -> Ir:
    """Traces fn on placeholders shaped like examples (af_trace, or
    af_trace_with when lists marks lists of any length)."""
    if not callable(fn):
        raise TypeError(f"trace() needs a callable, got {type(fn).__name__}")
    ex = [to_value(e) for e in examples]
    mask = _mask(static, len(ex))
    mv = None if mask is None else to_value(mask)
    list_mask = _mask(lists, len(ex))
    lv = None if list_mask is None else to_value(list_mask)

    def body(*inputs: Value) -> Tree:
        known = _remember_list_items(list_mask, ex, list(inputs))
        try:
            with tracing_with(ctx):
                return fn(*inputs)
        finally:
            _forget(known)

    h = _callbacks.new_handle(body)
    out = ctypes.c_void_p()
    static_ptr = mv._ptr if mv is not None else None
    try:
        if lv is None:
            err = ctx._using(lib.af_trace, _callbacks.trace_trampoline, h, _lib.handles(ex), len(ex),
                             static_ptr, ctypes.byref(out))
        else:
            opts = _lib.TraceOptionsC(ctypes.sizeof(_lib.TraceOptionsC), static_ptr, lv._ptr)
            err = ctx._using(lib.af_trace_with, _callbacks.trace_trampoline, h, _lib.handles(ex), len(ex),
                             ctypes.byref(opts), ctypes.byref(out))
        escaped = _operation_error(err)
    finally:
        _callbacks.drop_handle(h)
    if escaped is not None:
        raise escaped  # outside the except block: no CallbackError as its context
    return Ir._own(out.value)


def _operation_error(err: int | None) -> BaseException | None:
    """Checks af_trace's error. A libaf error the traced function let
    through (an operation's own, e.g. InvalidArgument from a bad format) is
    returned, to be raised as itself rather than as the CallbackError libaf
    wraps around it; anything else the function raised stays a
    CallbackError with it as the cause. So is the closed-context error of
    an operation the function made on a context closed meanwhile."""
    try:
        check(err)
    except CallbackError as e:
        cause = e.__cause__
        if isinstance(cause, _Closed) or (isinstance(cause, Error) and not isinstance(cause, CallbackError)):
            return cause
        raise
    return None


def _items_key(obj: Any) -> Any:
    """A list of any length's key: the kinds of its items at every depth, not
    its length."""
    if isinstance(obj, list):
        return ("*", tuple(sorted({repr(_items_key(x)) for x in obj})))
    return type(obj).__name__


def _shape_key(obj: Any, mask: Any, lists: Any = None) -> Any:
    """What a traced program depends on: structure and leaf kinds of dynamic
    inputs, exact values of static ones, item kinds of lists of any length."""
    if mask is True:
        return ("=", json.dumps(obj, sort_keys=True))
    if lists is True and isinstance(obj, list):
        return _items_key(obj)
    if isinstance(obj, list):
        items = mask if isinstance(mask, list) else []
        marks = lists if isinstance(lists, list) else []
        return ("L", tuple(_shape_key(x, items[i] if i < len(items) else None, marks[i] if i < len(marks) else None)
                           for i, x in enumerate(obj)))
    if isinstance(obj, dict):
        fields = mask if isinstance(mask, dict) else {}
        marked = lists if isinstance(lists, dict) else {}
        return ("D", tuple((k, _shape_key(obj[k], fields.get(k), marked.get(k))) for k in sorted(obj)))
    return type(obj).__name__


class Traced:
    """A Python function run through libaf: traced once per input shape
    (structure and leaf kinds, plus the values of static inputs), compiled,
    then run. Called inside another trace, its equations are inlined."""

    def __init__(self, fn: Callable[..., Tree], static: Static = None, ctx: Context | None = None,
                 lists: Static = None) -> None:
        if not callable(fn):
            raise TypeError(f"trace() needs a callable, got {type(fn).__name__}")
        self.fn = fn
        self.static = static
        self.lists = lists
        self._ctx = ctx
        self._cache: dict[Any, tuple[Ir, Program]] = {}
        self._lock = threading.Lock()
        functools.update_wrapper(self, fn)

    def ir(self, *examples: Tree) -> Ir:
        """The IR traced on examples (cached per input shape)."""
        return self._entry(examples)[0]

    def compile(self, *examples: Tree) -> "Program":
        """The compiled program for examples' shape (cached)."""
        program = self._entry(examples)[1]
        # None only inside a trace (or on placeholders), where nothing is compiled.
        return program  # type: ignore[return-value]

    def _entry(self, args: Sequence[Tree]) -> tuple[Ir, Program | None]:
        ctx = current(self._ctx)
        if any(isinstance(a, Value) and a.is_placeholder for a in args) or lib.af_is_tracing():
            # Shapes of placeholders are not visible from Python: no cache.
            return trace_ir(self.fn, args, self.static, ctx, self.lists), None
        key = _shape_key(to_py(list(args)), to_py(_mask(self.static, len(args))),
                         to_py(_mask(self.lists, len(args))))
        with self._lock:
            hit = self._cache.get(key)
        if hit is None:
            ir = trace_ir(self.fn, args, self.static, ctx, self.lists)
            hit = (ir, ir.compile(ctx))
            with self._lock:
                self._cache[key] = hit
        return hit

    def __call__(self, *args: Tree) -> Value:
        ir, program = self._entry(args)
        if program is None:
            return ir(*args, ctx=current(self._ctx))
        return program(*args, ctx=current(self._ctx))

    def __repr__(self) -> str:
        return f"<libaf.Traced {getattr(self.fn, '__qualname__', self.fn)!r}>"


@overload
def trace(fn: None = None, *, static: Static = None, lists: Static = None,
          ctx: Context | None = None) -> Callable[[Callable[..., Tree]], Traced]: ...


@overload
def trace(fn: Callable[..., Tree], *, static: Static = None, lists: Static = None,
          ctx: Context | None = None) -> Traced: ...


@overload
def trace(fn: Callable[..., Tree], example: Tree, /, *examples: Tree, static: Static = None,
          lists: Static = None, ctx: Context | None = None) -> Ir: ...


def trace(fn: Callable[..., Tree] | None = None, *examples: Tree, static: Static = None,
          lists: Static = None, ctx: Context | None = None) -> Traced | Ir | Callable[[Callable[..., Tree]], Traced]:
    """Traces a Python function.

    - ``trace(fn, *examples, static=None, lists=None)`` -> :class:`Ir`, traced
      once on placeholders shaped like the examples (only structure and leaf
      kinds matter, except for static inputs, which become literals).
    - ``@trace`` / ``@trace(static=..., lists=...)`` -> :class:`Traced`, which
      traces on first call per input shape.

    static: a bool tree that is a prefix of the list of inputs (True =
    static), or a tuple/set of static positions.

    lists: the same kind of mask; True marks an example list (of leaves of
    one kind, or nested lists of them) traced as a list of any length: one
    placeholder of kind list<T>, what a batched Ir takes, so
    ``process_all(tickets)`` may call ``batch(process_one)`` on it and run on
    lists of any length.
    """
    if fn is None:
        return lambda f: Traced(f, static, ctx, lists)
    if examples:
        return trace_ir(fn, examples, static, current(ctx), lists)
    return Traced(fn, static, ctx, lists)
