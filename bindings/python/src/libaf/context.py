"""The libaf context: routes, host tools and run-time scopes.

Module-level operations (libaf.format, libaf.switch, ...) use the context
that is tracing on this thread, else the process-wide default context; pass
``ctx=`` to choose one.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import contextvars
import ctypes
import inspect
import json
import threading
import weakref
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Iterator

from . import _blocking, _callbacks, _lib
from ._handles import Guarded
from ._loops import awaiting, call_soon
from ._lib import lib
from .errors import Error, check, error_from_exception, forget_exceptions
from .value import Tree, Value, settle, to_value

if TYPE_CHECKING:
    from .program import CancelToken
    from .provider import Provider

__all__ = ["Context", "current", "default_context", "is_tracing"]


class _Closed(ValueError):
    """A use of a closed Context: a ValueError, as it always was; its own
    class only so that a traced function stopped by it raises it as itself
    (trace._operation_error)."""


class Context(Guarded):
    """Owns what programs need at run time: routes to LM providers, host
    tools, scopes, and the scheduler shared by its runs. Thread-safe, close()
    included: a call racing close() on another thread completes or raises
    ValueError ("this libaf Context is closed")."""

    def __init__(
        self,
        *,
        lazy: bool = False,
        plan_cache: dict[str, Any] | None = None,
        host_threads: int | None = None,
        eager_timeout: float | None = None,
        host_wait: float | None = None,
        eval_timeout: float | None = None,
    ) -> None:
        """lazy=True: operations outside a trace record promises (Values whose
        kind is known at once) that run when read or at :meth:`eval`, their
        independent LM calls together. plan_cache: {"max_entries",
        "max_bytes", "dir"} bounds the cache of compiled programs and, with
        "dir", keeps them on disk across processes. host_threads (1..256,
        default 8): how many blocking host tools run at once.
        eager_timeout (seconds, None = no limit): how long an operation made
        outside a trace and a run (a host tool call, an LM call) waits for
        its result before it is cancelled and raises Timeout. host_wait
        (seconds, None = no limit): how long closing the context waits for
        blocking host tools still running before it abandons their threads
        (each call runs to its end). eval_timeout (seconds, lazy contexts,
        None = no limit): the default deadline of every evaluation a read or
        :meth:`eval` starts; past it the evaluation stops and its promises
        raise Timeout when read."""
        self._ptr = None
        self._lazy = lazy  # what its operations return are promises, which keep it alive
        # The C calls using the native context now, and the free close()
        # left for the last of them (_handles.Guarded).
        self._uses: list[None] = []
        self._orphan: list[Callable[[], None]] = []
        self._entered: list[contextvars.Token[Context | None]] = []  # of the with blocks it is current in
        out = ctypes.c_void_p()
        options: dict[str, Any] = {}
        if lazy:
            options["lazy"] = True
        if plan_cache is not None:
            options["plan_cache"] = plan_cache
        if host_threads is not None:
            options["host_threads"] = host_threads
        for key, seconds in (("eager_timeout_ms", eager_timeout), ("host_wait_ms", host_wait),
                             ("eval_timeout_ms", eval_timeout)):
            if seconds is not None:
                if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds > 0:
                    raise ValueError(f"{key[:-3]} must be positive seconds, got {seconds!r}")
                options[key] = max(1, int(seconds * 1000))
        if not options:
            check(lib.af_context_new(ctypes.byref(out)))
        else:
            data = json.dumps(options).encode("utf-8")
            check(lib.af_context_new_with(data, len(data), ctypes.byref(out)))
        self._ptr = out.value
        _live.add(self)

    def close(self) -> None:
        """Frees the context now (also done when it is garbage collected):
        cancels its runs still in flight and waits for them to end.
        Idempotent, from any thread. A call using the context on another
        thread at that moment (an operation, an evaluation, a call given up
        on by Ctrl-C, a scope block such as tag() or collect()) is not
        waited for: the context is closed at once (new calls raise
        ValueError) and freed, on a thread of its own, when the last of
        those calls returns."""
        self._close(_free_context)

    def _closed_error(self) -> BaseException:
        return _Closed("this libaf Context is closed")

    def _finish_late(self, finish: Callable[[], None]) -> None:
        # af_context_free joins the context's threads: the last call may be
        # one of them (a host tool calling an operation on its context).
        try:
            threading.Thread(target=finish, name="libaf-context-free", daemon=True).start()
        except RuntimeError:  # the interpreter is exiting: _free_context frees nothing then
            finish()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - a finalizer has nowhere to report
            pass

    def __enter__(self) -> "Context":
        """Makes this context current for the block (on this thread or
        task): operations given no ``ctx=`` use it. Closes it at the end."""
        self._entered.append(_entered.set(self))
        return self

    def __exit__(self, *exc: object) -> None:
        if self._entered:
            _entered.reset(self._entered.pop())
        self.close()

    def _check_open(self) -> None:
        """Raises the closed error at once (a use raises it too, later)."""
        if not self._ptr:
            raise self._closed_error()

    # -- lazy evaluation and the plan cache ------------------------------------

    def eval(self, *values: Value, timeout: float | None = None, cancel: "CancelToken | None" = None) -> None:
        """Evaluates the promises among values (deep) and the pending
        observable operations (checkpoints, depends, calls of host tools
        not registered pure) as one run.
        A failed operation does not raise here: reading its promises does.
        With no values, runs just the pending observable operations.

        timeout (seconds; None = the context's eval_timeout): past it the
        evaluation stops and raises Timeout. cancel: a CancelToken whose
        trigger() stops it with Cancelled. Either way the operations it was
        running fail with that error: reading their promises raises it, later
        too. Ctrl-C while waiting cancels the evaluation (triggering cancel,
        when given) and raises KeyboardInterrupt."""
        for v in values:
            if not isinstance(v, Value):
                raise TypeError(f"eval() takes libaf Values, got {type(v).__name__}")
        self._eval(list(values), timeout, cancel)

    async def aeval(self, *values: Value, timeout: float | None = None, cancel: "CancelToken | None" = None) -> None:
        """:meth:`eval` for asyncio: awaits the evaluation without blocking
        the running loop (it runs on a worker thread; coroutine host tools
        and providers it calls run on this loop). Cancelling the awaiting
        task stops the evaluation (triggering cancel, when given) and its LM
        requests in flight. Same errors as eval."""
        for v in values:
            if not isinstance(v, Value):
                raise TypeError(f"aeval() takes libaf Values, got {type(v).__name__}")
        self._check_open()
        token, options = self._eval_options(timeout, cancel, always=True)
        handles = _lib.handles(list(values))

        def evaluate() -> None:  # holds values, options and the token until it returns
            check(self._using(lib.af_eval_with, handles, len(values), ctypes.byref(options[0])))

        with awaiting():
            try:
                await _blocking.start(evaluate)
            except asyncio.CancelledError:
                assert token is not None
                token.trigger()
                raise

    def _eval_options(self, timeout: float | None, cancel: "CancelToken | None",
                      always: bool) -> "tuple[CancelToken | None, tuple[Any, list[Any]]]":
        """The cancel token of an evaluation (cancel, else a private one when
        always or when the wait can be interrupted) and its run options (the
        C struct and what it points to)."""
        global _program
        if _program is None:
            from . import program as _program_module  # program.py imports this module

            _program = _program_module
        if cancel is None and (always or _blocking.can_hop()):
            cancel = _program.CancelToken()
        return cancel, _program.RunOptions(timeout=timeout, cancel=cancel)._to_c()

    def _eval(self, values: list[Value], timeout: float | None = None, cancel: "CancelToken | None" = None) -> None:
        """af_eval_with, waited for interruptibly: Ctrl-C triggers the cancel
        token (a private one when none is given)."""
        cancel, options = self._eval_options(timeout, cancel, always=False)

        # evaluate's closure holds values and options (the token) until the
        # call returns, also when its caller gives up on it (_blocking.run).
        def evaluate() -> None:
            check(self._using(lib.af_eval_with, _lib.handles(values), len(values), ctypes.byref(options[0])))

        _blocking.run(evaluate, self, cancel.trigger if cancel is not None else None)

    def _settle(self, values: list[Value]) -> None:
        """Evaluates this context's promises among values before a read,
        interruptibly (see value.settle)."""
        try:
            self._eval(values)
        except Error:
            _raise_unless_ready(values)

    async def _asettle(self, values: list[Value]) -> None:
        """_settle for asyncio (see value.asettle)."""
        try:
            await self.aeval(*values)
        except Error:
            _raise_unless_ready(values)

    def _op(self, call: Callable[[int, Any], Any], inputs: list[Value], may_wait: bool = False) -> Value:
        """The Value an operation's C call(ctx, &out) makes on this context
        (held open for the call: ctx is its native handle).

        Recorded (a lazy context, a trace), it returns at once; on a lazy
        context the promise holds this context, which its evaluation needs.
        Run eagerly, an operation that may wait (an LM call, a host tool, an
        IR, a branch or loop that may hold them) waits interruptibly
        (_blocking), and so do the promises among its inputs, evaluated
        first by their contexts."""
        if self._lazy:
            return _value_of(call, self, self)
        if may_wait or _any_promise(inputs):
            settle(inputs)
            if may_wait:
                return _blocking.run(lambda: _value_of(call, self, None), self)
        return _value_of(call, self, None)

    def stats(self) -> dict[str, Any]:
        """{"programs": {"compiles"}, "plan_cache": {"hits", "misses", "disk_hits", "evictions",
        "entries", "bytes", ...}, "lazy": {"recorded", "evaluated", "dropped",
        "pending", "evaluations", "timed_out", "cancelled"}} (af.h's
        af_context_stats lists every counter)."""
        b = _lib.Bytes()
        check(self._using(lib.af_context_stats, ctypes.byref(b)))
        stats: dict[str, Any] = json.loads(_lib.take_bytes(b))
        return stats

    # -- routes and host tools ----------------------------------------------

    def route(self, model_pattern: str, provider: "Provider") -> None:
        """Routes models matching model_pattern ('*' any run, '?' one
        character) to provider. An exact name beats any pattern."""
        from .provider import Provider

        if not isinstance(provider, Provider):
            raise TypeError(f"route() needs a libaf.Provider, got {type(provider).__name__}")
        p = _lib.utf8(model_pattern, "model_pattern")
        check(self._using(lib.af_context_route, p, len(p), provider._handle))

    def route_fallback(self, model_pattern: str, providers: "list[Provider]") -> None:
        """Routes models matching model_pattern to providers in order: the
        next one is asked after a Provider or Timeout error."""
        from .provider import Provider

        for p in providers:
            if not isinstance(p, Provider):
                raise TypeError(f"route_fallback() needs libaf.Provider values, got {type(p).__name__}")
        arr = (ctypes.c_void_p * max(1, len(providers)))(*[p._handle for p in providers])
        pat = _lib.utf8(model_pattern, "model_pattern")
        check(self._using(lib.af_context_route_fallback, pat, len(pat), arr, len(providers)))

    def register_function(
        self,
        name: str,
        fn: Callable[..., Tree | Awaitable[Tree]],
        result_kinds: Tree,
        *,
        blocking: bool = False,
        pure: bool = False,
    ) -> None:
        """Registers a host tool: fn receives the positional argument trees
        as Values and returns plain data or a Value shaped like result_kinds
        (kind names as leaves, e.g. ``{"title": "str", "n": "int"}``). It
        may run on any libaf thread.

        A coroutine function is registered async: it runs on libaf's private
        event loop and no libaf thread waits for it; when the run no longer
        wants its result (cancelled, timed out) the coroutine is cancelled.
        blocking=True runs a plain function on the context's host pool (at
        most ``host_threads`` at once, a context option), for slow tools; a
        coroutine function with blocking=True raises InvalidArgument.

        Effects: a tool is effectful unless pure=True. Each call of an
        effectful tool runs exactly once per run, compiled or lazy: never
        dropped when its result is unused, never merged with an equal call,
        never answered by :meth:`memoize`, and run on a lazy context even
        when nothing reads it. pure=True (same arguments, same result, no
        effects) lets libaf drop unused calls, merge equal ones and memoize
        them. The flag is recorded in each call when it is traced or
        recorded, and kept in saved graphs."""
        if not callable(fn):
            raise TypeError(f"register_function() needs a callable, got {type(fn).__name__}")
        n = _lib.utf8(name, "name")
        kinds = to_value(result_kinds)
        options = _lib.FunctionOptionsC()  # zeroed: unset callbacks are NULL
        options.struct_size = ctypes.sizeof(_lib.FunctionOptionsC)
        options.flags = (_lib.AF_FUNCTION_PURE if pure else 0) | (_lib.AF_FUNCTION_BLOCKING if blocking else 0)
        if inspect.iscoroutinefunction(fn):
            # With blocking=True libaf refuses the pair (INVALID_ARGUMENT).
            options.async_fn = _callbacks.async_host_trampoline
            h = _callbacks.new_handle(_start_coroutine(fn))
        else:
            options.fn = _callbacks.host_trampoline
            h = _callbacks.new_handle(fn)
        options.user_data = h
        options.destroy = _callbacks.destroy_trampoline
        options.result_kinds = kinds._ptr
        # destroy runs on failure too (the struct is complete), so the
        # handle never leaks.
        check(self._using(lib.af_register_function_with, n, len(n), ctypes.byref(options)))

    def tool(
        self, name: str, result_kinds: Tree, *, blocking: bool = False, pure: bool = False
    ) -> Callable[[Callable[..., Tree | Awaitable[Tree]]], Callable[..., Value]]:
        """Decorator form of register_function (same blocking and pure); the
        decorated name becomes a function that calls the tool through libaf
        (recorded in a trace)."""

        def register(fn: Callable[..., Tree | Awaitable[Tree]]) -> Callable[..., Value]:
            self.register_function(name, fn, result_kinds, blocking=blocking, pure=pure)

            def call(*args: Tree) -> Value:
                return self.host_call(name, *args)

            call.__name__ = getattr(fn, "__name__", name)
            call.__doc__ = fn.__doc__
            return call

        return register

    def host_call(self, name: str, *args: Tree) -> Value:
        """Calls host tool name: recorded inside a trace (and on a lazy
        context), run at once outside."""
        n = _lib.utf8(name, "name")
        vals = [to_value(a) for a in args]
        return self._op(lambda c, o: lib.af_host_call(c, n, len(n), _lib.handles(vals), len(vals), o), vals, True)

    # -- run-time scopes -------------------------------------------------------
    # A scope belongs to the thread that opened it: it applies to the runs
    # that thread starts, never to other threads' runs.

    @contextlib.contextmanager
    def collect(self, collection: str) -> Iterator[dict[str, list[Any]]]:
        """Every checkpoint of collection that runs inside the block appends
        its value under its key; the yielded dict is filled when the block
        ends: {key: [values in program order]} (docs/SEMANTICS.md §4), however
        the run was scheduled."""
        c = _lib.utf8(collection, "collection")
        handle = self._use()  # held until the pop: a close() in the block frees it after
        try:
            check(lib.af_collect_push(handle, c, len(c)))
            result: dict[str, list[Any]] = {}
            try:
                with _blocking.scope():
                    yield result
            finally:
                out = ctypes.c_void_p()
                check(lib.af_collect_pop(handle, ctypes.byref(out)))
                result.update(Value._own(out.value).to_py())
        finally:
            self._done()

    @contextlib.contextmanager
    def inject(self, collection: str, values: dict[str, list[Any]]) -> Iterator[None]:
        """Checkpoints of collection whose key has queued values yield them
        (one per hit, in program order) instead of their input, inside the
        block."""
        c = _lib.utf8(collection, "collection")
        v = to_value(values)  # held in a local: the handle must outlive the call
        handle = self._use()  # held until the pop: a close() in the block frees it after
        try:
            check(lib.af_inject_push(handle, c, len(c), v._ptr))
            try:
                with _blocking.scope():
                    yield
            finally:
                check(lib.af_inject_pop(handle))
        finally:
            self._done()

    @contextlib.contextmanager
    def cancel_scope(self, token: "CancelToken") -> Iterator[None]:
        """Until the block ends, what this thread runs on this context ends
        with Cancelled once ``token.trigger()`` is called (from any thread):
        eager LM calls and async or blocking host calls (their requests
        aborted; noticed within 20 ms), and IR and program calls whose
        options give no cancel token of their own. A plain host tool runs on
        this thread and is not interrupted. Scopes nest: each open scope's
        token stops what runs inside it. (Ctrl-C on the main thread stops
        what it waits for the same way, inside yours.)"""
        from .program import CancelToken

        if not isinstance(token, CancelToken):
            raise TypeError(f"cancel_scope() needs a libaf.CancelToken, got {type(token).__name__}")
        handle = self._use()  # held until the pop: a close() in the block frees it after
        try:
            check(lib.af_cancel_scope_push(handle, token._ptr))
            try:
                with _blocking.scope():  # scopes belong to their thread: calls inside stay on it
                    yield
            finally:
                check(lib.af_cancel_scope_pop(handle))
        finally:
            self._done()

    @contextlib.contextmanager
    def memoize(self) -> Iterator[None]:
        """Identical calls (same primitive, params, inputs) run once inside
        the block; calls of effectful host tools (registered without
        pure=True) always run."""
        handle = self._use()  # held until the pop: a close() in the block frees it after
        try:
            check(lib.af_memoize_push(handle))
            try:
                with _blocking.scope():
                    yield
            finally:
                check(lib.af_memoize_pop(handle))
        finally:
            self._done()

    def __repr__(self) -> str:
        return f"<libaf.Context {'closed' if not self._ptr else hex(self._ptr)}>"


def _value_of(call: Callable[[int, Any], Any], cx: Context, promise_of: Context | None) -> Value:
    """call(cx's handle, &out), cx held open for the call; the Value it
    made, a promise keeping promise_of alive when given."""
    out = ctypes.c_void_p()
    ptr = cx._use()
    try:
        err = call(ptr, ctypes.byref(out))
    finally:
        cx._done()
    check(err)
    return Value._own(out.value, promise_of)


def _raise_unless_ready(values: list[Value]) -> None:
    """In an except block of an evaluation before a read: a deadline or a
    cancel stopped it, and the promises it ran hold its error, which the read
    raises, naming the operation; re-raised only when some promise is not
    ready (one another thread evaluates, which it only waited for)."""
    if not all(lib.af_value_ready(v._ptr) for v in values):
        raise  # noqa: PLE0704 - the error being handled by the caller


def _any_promise(values: list[Value]) -> bool:
    for v in values:
        if v._ctx is not None:
            return True
    return False


def _free_context(ptr: int) -> None:
    # Nothing is freed once the interpreter has begun to exit (_lib.release).
    if not _lib.exiting():
        lib.af_context_free(ptr)


_program: Any = None  # the program module, imported on first use (it imports this one)

# Every open context, closed at interpreter exit while Python still runs:
# closing one ends its runs and runs the destroy callbacks of its host tools
# and providers, which must not happen during the interpreter's teardown.
_live: "weakref.WeakSet[Context]" = weakref.WeakSet()


@atexit.register
def _close_at_exit() -> None:
    for ctx in list(_live):
        ctx.close()
    _lib.stop_releasing()
    forget_exceptions()


_default: Context | None = None
_default_lock = threading.Lock()


class _Tracing(threading.local):
    # A class default rather than getattr(..., None) on a bare local: a
    # missing attribute costs an AttributeError on every operation.
    stack: "list[Context] | None" = None


_tracing = _Tracing()
# The context of the innermost ``with Context(...)`` block of this thread or task.
_entered: contextvars.ContextVar[Context | None] = contextvars.ContextVar("libaf_context", default=None)


def default_context() -> Context:
    """The process-wide context used when no ``ctx=`` is given."""
    global _default
    if _default is not None:  # made once: no lock on every operation
        return _default
    with _default_lock:
        if _default is None:
            _default = Context()
        return _default


def current(ctx: Context | None = None) -> Context:
    """ctx, else the context tracing on this thread, else the one of the
    innermost ``with Context(...)`` block, else the default."""
    if ctx is not None:
        if not isinstance(ctx, Context):
            raise TypeError(f"ctx must be a libaf.Context, got {type(ctx).__name__}")
        return ctx
    stack = _tracing.stack
    if stack:
        return stack[-1]
    entered = _entered.get()
    return entered if entered is not None else default_context()


@contextlib.contextmanager
def tracing_with(ctx: Context) -> Iterator[None]:
    """Marks ctx as the context tracing on this thread for the block."""
    stack = getattr(_tracing, "stack", None)
    if stack is None:
        stack = _tracing.stack = []
    stack.append(ctx)
    try:
        yield
    finally:
        stack.pop()


def is_tracing() -> bool:
    """True inside a traced function on this thread."""
    return bool(lib.af_is_tracing())


# -- coroutine host tools -------------------------------------------------------

_CALLBACK = 9  # AF_ERR_CALLBACK
# How often a coroutine tool checks whether its run still wants the result.
_CANCEL_POLL_S = 0.02


def _start_coroutine(coro_fn: Callable[..., Any]) -> Callable[[list[Value], int], None]:
    """The async host function for coro_fn: schedules it on coroutine_loop()
    and finishes the request from there (no libaf thread waits)."""

    def start(args: list[Value], req: int) -> None:
        async def guarded() -> tuple[bool, Any]:
            # asyncio re-raises KeyboardInterrupt and SystemExit out of the
            # loop, which would end the thread every coroutine tool and host
            # provider shares: here they fail this call only.
            try:
                return True, await coro_fn(*args)
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # noqa: BLE001 - this call's error, its cause
                return False, exc

        def begin() -> None:
            loop = asyncio.get_running_loop()
            task = loop.create_task(guarded())

            def watch() -> None:
                if task.done():
                    return
                if lib.af_host_request_cancelled(req):
                    task.cancel()
                else:
                    loop.call_later(_CANCEL_POLL_S, watch)

            def finish(t: "asyncio.Task[Any]") -> None:
                # A finish libaf refuses (the run's own error, already
                # recorded) has no caller to go to.
                try:
                    exc: BaseException | None = None
                    if t.cancelled():
                        exc = asyncio.CancelledError("the run no longer wants the result")
                    else:
                        ok, got = t.result()  # guarded() returns every other outcome
                        if not ok:
                            exc = got
                    if exc is None:
                        try:
                            result = to_value(got)
                        except BaseException as bad:  # noqa: BLE001 - not convertible
                            exc = bad
                        else:
                            lib.af_error_free(lib.af_host_request_complete(req, result._ptr))
                    if exc is not None:
                        lib.af_error_free(lib.af_host_request_fail(req, error_from_exception(exc, _CALLBACK)))
                finally:
                    lib.af_host_request_free(req)

            task.add_done_callback(finish)
            loop.call_later(_CANCEL_POLL_S, watch)

        call_soon(begin)

    return start
