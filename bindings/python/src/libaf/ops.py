"""Operations: recorded into the trace running on this thread, evaluated at
once outside a trace. Each takes an optional ``ctx=`` (default: the tracing
context, else libaf.default_context())."""

from __future__ import annotations

import contextlib
import ctypes
from typing import Any, Callable, Iterator, Mapping, Union, overload

from . import _lib
from ._lib import lib
from .context import Context, current, is_tracing
from .errors import check
from .ir import Ir
from .errors import InvalidArgument
from .schema import as_type, is_schema_type, schema_of
from .value import Kind, Tree, Value, to_value

__all__ = [
    "format",
    "concat",
    "match",
    "stop_gradient",
    "depends",
    "checkpoint",
    "tag",
    "fold",
    "switch",
    "while_loop",
    "scan",
    "lm_call",
    "lm_schema_call",
    "lm_tool_call",
    "tool_results",
    "host_call",
]

#: A branch or loop function: a traced IR, or a Python callable to trace.
Traceable = Union[Ir, Callable[..., Tree]]


def format(template: str, *args: Tree, ctx: Context | None = None, **named: Tree) -> Value:  # noqa: A001
    """Python-style template ("{}", "{0}", "{name}", "{{"); non-str arguments
    are stringified as JSON. Template errors are InvalidArgument at once."""
    cx = current(ctx)
    t = _lib.utf8(template, "template")
    vals = [to_value(a) for a in args]
    nv = to_value(named) if named else None
    return cx._op(
        lambda c, o: lib.af_format(c, t, len(t), _lib.handles(vals), len(vals), nv._ptr if nv is not None else None, o),
        vals if nv is None else [*vals, nv],
    )


def concat(*args: Tree, ctx: Context | None = None) -> Value:
    """Concatenation of strings."""
    cx = current(ctx)
    vals = [to_value(a) for a in args]
    return cx._op(lambda c, o: lib.af_concat(c, _lib.handles(vals), len(vals), o), vals)


def match(a: Tree, b: Tree, ctx: Context | None = None) -> Value:
    """String equality, as a bool value."""
    cx = current(ctx)
    va, vb = to_value(a), to_value(b)
    return cx._op(lambda c, o: lib.af_match(c, va._ptr, vb._ptr, o), [va, vb])


def stop_gradient(v: Tree, ctx: Context | None = None) -> Value:
    """Identity; no tangent or feedback flows through it."""
    cx = current(ctx)
    vv = to_value(v)
    return cx._op(lambda c, o: lib.af_stop_gradient(c, vv._ptr, o), [vv])


def depends(value: Tree, *deps: Tree, ctx: Context | None = None) -> Value:
    """value, produced only after every dep exists (keeps deps alive in DCE)."""
    cx = current(ctx)
    vv = to_value(value)
    dv = [to_value(d) for d in deps]
    return cx._op(lambda c, o: lib.af_depends(c, vv._ptr, _lib.handles(dv), len(dv), o), [vv, *dv])


def checkpoint(v: Tree, key: str, collection: str, ctx: Context | None = None) -> Value:
    """Identity marking v as checkpoint key of collection (see Context.collect/inject)."""
    cx = current(ctx)
    vv = to_value(v)
    k, col = _lib.utf8(key, "key"), _lib.utf8(collection, "collection")
    return cx._op(lambda c, o: lib.af_checkpoint(c, vv._ptr, k, len(k), col, len(col), o), [vv])


@contextlib.contextmanager
def tag(name: str, ctx: Context | None = None) -> Iterator[None]:
    """Every equation recorded in the block carries tag name (inside a trace)."""
    cx = current(ctx)
    t = _lib.utf8(name, "tag")
    c = cx._use()  # held until the pop: a close() in the block frees the context after
    try:
        check(lib.af_tag_push(c, t, len(t)))
        try:
            yield
        finally:
            check(lib.af_tag_pop(c))
    finally:
        cx._done()


@contextlib.contextmanager
def named(name: str, ctx: Context | None = None) -> Iterator[None]:
    """What is recorded in the block (inside a trace, or by a lazy context)
    carries name in its name path, e.g. "triage/classify" when nested in
    named("triage"). Names are non-empty and hold no '/'."""
    cx = current(ctx)
    n = _lib.utf8(name, "name")
    c = cx._use()  # held until the pop: a close() in the block frees the context after
    try:
        check(lib.af_name_push(c, n, len(n)))
        try:
            yield
        finally:
            check(lib.af_name_pop(c))
    finally:
        cx._done()


@contextlib.contextmanager
def fold(ctx: Context | None = None) -> Iterator[None]:
    """Operations in the block run at trace time and become literals."""
    cx = current(ctx)
    c = cx._use()  # held until the pop: a close() in the block frees the context after
    try:
        check(lib.af_fold_push(c))
        try:
            yield
        finally:
            check(lib.af_fold_pop(c))
    finally:
        cx._done()


def _as_ir(f: Traceable, examples: list[Value], what: str, ctx: Context) -> Ir:
    if isinstance(f, Ir):
        return f
    if not callable(f):
        raise TypeError(f"{what} must be a libaf.Ir or a callable, got {type(f).__name__}")
    from .trace import trace_ir

    return trace_ir(f, examples, None, ctx)


def switch(key: Tree, branches: Mapping[str, Traceable], *operands: Tree, ctx: Context | None = None) -> Value:
    """Runs the branch named by key (a str) on operands. Each branch is an Ir
    or a callable taking the operands, traced here; all must return one
    structure. NotFound (when it runs) for a key no branch has."""
    cx = current(ctx)
    if not isinstance(branches, Mapping):
        raise TypeError(f"branches must be a mapping of name to branch, got {type(branches).__name__}")
    ops = [to_value(o) for o in operands]
    names = [_lib.utf8(n, "branch name") for n in branches]
    irs = [_as_ir(f, ops, f"branch {n!r}", cx) for n, f in branches.items()]
    kv = to_value(key)
    nb = len(names)
    c_names = (ctypes.c_char_p * max(nb, 1))(*names)
    c_lens = (ctypes.c_size_t * max(nb, 1))(*[len(n) for n in names])
    # Run eagerly, a branch may call LMs and host tools: it may wait.
    return cx._op(
        lambda c, o: lib.af_switch(c, kv._ptr, c_names, c_lens, _lib.handles(irs), nb, _lib.handles(ops), len(ops), o),
        [kv, *ops],
        may_wait=True,
    )


def while_loop(
    cond: Traceable, body: Traceable, init: Tree, max_iters: int, ctx: Context | None = None
) -> Value:
    """state = init; while cond(state) and fewer than max_iters iterations
    ran: state = body(state). cond and body are Irs or callables of the
    state, traced here."""
    cx = current(ctx)
    if not isinstance(max_iters, int) or isinstance(max_iters, bool) or max_iters < 0:
        raise ValueError(f"max_iters must be a non-negative int, got {max_iters!r}")
    iv = to_value(init)
    c_ir = _as_ir(cond, [iv], "cond", cx)
    b_ir = _as_ir(body, [iv], "body", cx)
    return cx._op(lambda c, o: lib.af_while_loop(c, c_ir._ptr, b_ir._ptr, iv._ptr, max_iters, o), [iv], may_wait=True)


#: scan's item= when not given (None is an item: a null).
_NO_ITEM: Any = object()


def _scan_item(xs: Value) -> tuple[Tree, Tree] | None:
    """An example item of xs and the lists mask to trace a body on it with
    (True where the item is itself a list of any length), or None when xs
    shows none: an empty list, or a traced list that is not an input of the
    enclosing trace (e.g. another operation's output). Raises InvalidArgument
    for a leaf that is not a list."""
    from .trace import list_item_example

    known = list_item_example(xs)
    if known is not None:
        return known
    kind = xs.kind
    if kind == Kind.LIST:
        if len(xs) == 0:
            return None
        return xs[0], False
    if kind == Kind.DICT:
        items, masks = {}, {}
        for k, v in xs.items():
            sub = _scan_item(v)
            if sub is None:
                return None
            items[k], masks[k] = sub
        return items, masks
    if kind == Kind.PLACEHOLDER:
        return None
    raise InvalidArgument(
        f"scan: xs is {kind.name.lower()}, not a list (xs is a list of items, or a tree whose leaves are such lists)"
    )


def scan(
    body: Traceable,
    init: Tree,
    xs: Tree,
    *,
    reverse: bool = False,
    item: Any = _NO_ITEM,
    ctx: Context | None = None,
) -> Value:
    """[carry, ys]: carry = init; for each item of xs in order (last to first
    when reverse), ``carry, y = body(carry, item)``; ys holds each item's y
    at the item's index (y's structure with a list at each leaf). With no
    items: ``[init, ys of empty lists]``, nothing runs.

    xs is a list, or a tree (dict, list) whose leaves are lists of one
    length; the item is then the tree of their i-th items. Inside a trace it
    is usually an input traced as a list of any length
    (``libaf.trace(..., lists=...)``): the scan is one equation that batches,
    differentiates (feedback flows back through the carry) and saves like any
    other.

    body is a libaf.Ir taking (carry, item) and returning [next carry, y] with
    the carry's structure and kinds, or a callable of (carry, item) traced
    here on init and an item of xs: the first item of a concrete list, the
    example item of a list input of the enclosing trace. When xs shows no
    item (an empty list, a traced list made by another operation), pass
    ``item=`` an example item (its structure and leaf kinds), or an Ir
    (else InvalidArgument saying so, before anything is traced).

    InvalidArgument: body does not take (init, an item), does not return
    [carry, y] or changes the carry's structure or a kind, xs is not a list
    (or a tree of lists); when it runs, lists of xs of different lengths."""
    cx = current(ctx)
    iv, xv = to_value(init), to_value(xs)
    if isinstance(body, Ir):
        b_ir = body
    elif callable(body):
        if item is not _NO_ITEM:
            example: tuple[Tree, Tree] | None = (item, None)
        else:
            example = _scan_item(xv)
        if example is None:
            raise InvalidArgument(
                "scan: xs shows no item to trace body on (an empty list, or a traced list that is not an "
                "input of this trace): pass item= an example item, or body as a traced libaf.Ir"
            )
        from .trace import trace_ir

        ex_item, item_lists = example
        lists = None if item_lists is None or not _any_true(item_lists) else [False, item_lists]
        b_ir = trace_ir(body, [iv, ex_item], None, cx, lists)
    else:
        raise TypeError(f"body must be a libaf.Ir or a callable, got {type(body).__name__}")
    rev = 1 if reverse else 0
    # Run eagerly, the body may call LMs and host tools: it may wait.
    return cx._op(lambda c, o: lib.af_scan(c, b_ir._ptr, iv._ptr, xv._ptr, rev, o), [iv, xv], may_wait=True)


def _any_true(mask: Tree) -> bool:
    if mask is True:
        return True
    if isinstance(mask, dict):
        return any(_any_true(m) for m in mask.values())
    if isinstance(mask, (list, tuple)):
        return any(_any_true(m) for m in mask)
    return False


def lm_call(messages: Tree, model: Tree, ctx: Context | None = None, *, params: dict[str, Any] | None = None) -> Value:
    """The reply text of an LM call. messages: [{"role", "content"}, ...].
    params: sampling params (temperature, top_p, max_tokens, seed, stop),
    part of the recorded equation."""
    cx = current(ctx)
    mv, mo = to_value(messages), to_value(model)
    if params is None:
        return cx._op(lambda c, o: lib.af_lm_call(c, mv._ptr, mo._ptr, o), [mv, mo], may_wait=True)
    pv = to_value(params)
    return cx._op(lambda c, o: lib.af_lm_call_ex(c, mv._ptr, mo._ptr, pv._ptr, o), [mv, mo, pv], may_wait=True)


@overload
def lm_schema_call(
    messages: Tree, model: Tree, schema: Tree, ctx: Context | None = None, *, params: dict[str, Any] | None = None
) -> Value: ...


@overload
def lm_schema_call(
    messages: Tree, model: Tree, schema: Any, ctx: Context | None = None, *, params: dict[str, Any] | None = None
) -> Any: ...


def lm_schema_call(
    messages: Tree, model: Tree, schema: Any, ctx: Context | None = None, *, params: dict[str, Any] | None = None
) -> Any:
    """Structured output: the reply parsed and validated against schema.

    schema: a tree of node descriptions such as {"type": "int", "min": 1}
    (af.h's af_lm_schema_call), or a Python type converted by
    libaf.schema_of: a dataclass, TypedDict or pydantic model class, an
    Enum, a Literal, a fixed-size tuple, bool/int/float/str, with
    Annotated bounds and docs (libaf.Range, Length, Pattern, Doc).

    Returns a Value of the schema's structure; given a type, on an eager
    context outside a trace, the reply as an instance of that type
    (libaf.as_type: a dataclass, a TypedDict's dict, a pydantic model, an
    Enum member, ...). Inside a trace and on a lazy context it is the Value
    (a placeholder, a promise) as for a tree: convert the concrete value
    with libaf.as_type(value, tp) once it is read (the run's output, an
    evaluated promise). params: sampling params, as lm_call's."""
    cx = current(ctx)
    tp = schema if is_schema_type(schema) else None
    out = _lm_schema_call(cx, messages, model, schema_of(tp) if tp is not None else schema, params)
    if tp is None or cx._lazy or is_tracing():
        return out
    return as_type(out, tp)


def _lm_schema_call(cx: Context, messages: Tree, model: Tree, schema: Tree, params: dict[str, Any] | None) -> Value:
    mv, mo, sv = to_value(messages), to_value(model), to_value(schema)
    if params is None:
        return cx._op(lambda c, o: lib.af_lm_schema_call(c, mv._ptr, mo._ptr, sv._ptr, o), [mv, mo, sv], may_wait=True)
    pv = to_value(params)
    return cx._op(lambda c, o: lib.af_lm_schema_call_ex(c, mv._ptr, mo._ptr, sv._ptr, pv._ptr, o), [mv, mo, sv, pv],
                  may_wait=True)


def _tools_tree(tools: Any) -> Any:
    """tools with each "parameters" given as a Python type made a schema tree."""
    if not isinstance(tools, (list, tuple)):
        return tools
    return [
        {**t, "parameters": schema_of(t["parameters"])}
        if isinstance(t, dict) and "parameters" in t and is_schema_type(t["parameters"])
        else t
        for t in tools
    ]


def lm_tool_call(
    messages: Tree,
    history: Tree,
    model: Tree,
    tools: Tree,
    ctx: Context | None = None,
    *,
    params: dict[str, Any] | None = None,
) -> Value:
    """An LM call offering tools the model may call (af_lm_tool_call).

    tools: a list of {"name", "description" (optional), "parameters" (a
    schema tree as lm_schema_call's, whose root is a container, or a
    dataclass, TypedDict or pydantic model class, converted by
    libaf.schema_of; leave it out for no arguments)}; static: a call's
    arguments (JSON) make an instance with libaf.as_type(json.loads(a), tp).
    history: a str (may be traced), the JSON array of the turns after
    messages as tool_results builds it; "" for none.
    Returns a dict: "called" (bool: the model called tools, the reply is not
    final), "text" (str), "names" (list of str, the tools called in order),
    "arguments" (list of str, each call's arguments as compact JSON) and
    "turn" (str, the model's turn for tool_results). A call naming an
    unknown tool or arguments its schema rejects is re-asked, then
    SchemaError. params: sampling params, as lm_call's."""
    cx = current(ctx)
    mv, hv, mo, tv = to_value(messages), to_value(history), to_value(model), to_value(_tools_tree(tools))
    pv = to_value(params) if params is not None else None
    return cx._op(
        lambda c, o: lib.af_lm_tool_call(c, mv._ptr, hv._ptr, mo._ptr, tv._ptr, pv._ptr if pv is not None else None, o),
        [mv, hv, mo, tv] if pv is None else [mv, hv, mo, tv, pv],
        may_wait=True,
    )


def tool_results(history: Tree, turn: Tree, results: Tree, ctx: Context | None = None) -> Value:
    """The history (a str) after a tool-calling turn: history, then turn
    (lm_tool_call's "turn"), then one tool message per str of results,
    answering the turn's calls in order (a final turn takes no results).
    Recorded inside a trace. InvalidArgument: not one result per call, a
    malformed history or turn."""
    cx = current(ctx)
    hv, tv, rv = to_value(history), to_value(turn), to_value(results)
    return cx._op(lambda c, o: lib.af_tool_results(c, hv._ptr, tv._ptr, rv._ptr, o), [hv, tv, rv])


def host_call(name: str, *args: Tree, ctx: Context | None = None) -> Value:
    """Calls host tool name (see Context.register_function)."""
    return current(ctx).host_call(name, *args)
