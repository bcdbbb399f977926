"""Waiting for libaf so that Ctrl-C still works.

Python runs signal handlers (Ctrl-C's KeyboardInterrupt) only in the main
thread, between bytecodes: never while that thread is inside a C call, and
a long wait on a lock does not see a signal the OS delivered to another
thread. So a C call that may block (an LM call, a host tool, an evaluation
of promises) made on the main thread is made stoppable:

- when it takes a cancel token, or runs inside a cancel scope on its
  context (af_cancel_scope_push), it stays on the main thread: Python's
  C-level SIGINT handler writes to the signal wakeup fd, and a watcher
  thread reading it triggers the token; the call returns and Python raises
  KeyboardInterrupt (_SigintWatch, below);
- otherwise (another SIGINT handler is installed, someone else owns the
  wakeup fd, an event loop awaits libaf) it runs on a worker thread while
  the main thread waits in short slices; on KeyboardInterrupt the waiter
  cancels the call when it takes a cancel token, else abandons the worker,
  which holds what the call uses until it returns.

Only the main thread does this (no other thread gets KeyboardInterrupt).
Calls never leave a thread that traces or has a run scope open (collect,
inject, memoize): libaf applies scopes and traces to the calls of their
own thread, so there only the first way stops them.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import queue
import select
import signal
import threading
from typing import TYPE_CHECKING, Any, Callable, Iterator, TypeVar

from ._lib import lib
from . import _loops
from .errors import check

if TYPE_CHECKING:
    from .context import Context

T = TypeVar("T")

#: The longest a waiting main thread goes without running signal handlers.
SLICE_S = 0.05

_MAIN = threading.main_thread().ident


class _Local(threading.local):
    scopes = 0  # run scopes open on this thread (a class default: no getattr miss per call)


_local = _Local()


def wait(done: threading.Event) -> None:
    """Blocks until done is set, running signal handlers every SLICE_S."""
    with _loops.blocked():
        while not done.wait(SLICE_S):
            pass


def can_hop() -> bool:
    """Whether a blocking call made here should run on a worker (see above)."""
    return threading.get_ident() == _MAIN and not _local.scopes and not lib.af_is_tracing()


@contextlib.contextmanager
def scope() -> Iterator[None]:
    """Marks a libaf run scope open on this thread: calls made inside it
    stay on this thread."""
    _local.scopes = getattr(_local, "scopes", 0) + 1
    try:
        yield
    finally:
        _local.scopes -= 1


class _Call:
    """One call handed to a worker. ``then``, when set (before the call is
    submitted), runs once the call has returned.

    done is a lock held until the call has returned, which the caller waits
    on in slices (wait_done): a bare lock rather than an Event, whose wait
    builds a Condition and a waiter lock every time (about 3 us of CPU of
    the ~18 us a hand-off cost with it; bench/python/small_programs.py)."""

    __slots__ = ("fn", "ok", "result", "then", "done")

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn: Callable[[], Any] | None = fn
        self.ok = False
        self.result: Any = None
        self.then: Callable[[], None] | None = None
        self.done = threading.Lock()
        self.done.acquire()

    def __call__(self) -> None:
        try:
            self.result, self.ok = self.fn(), True  # type: ignore[misc]
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            self.result = exc
        self.fn = None  # what the call used may go now
        then, self.then = self.then, None
        self.done.release()
        if then is not None:
            then()

    def wait_done(self) -> None:
        """Blocks until the call has returned, running signal handlers every
        SLICE_S (a lock's timed acquire is interrupted by signals, as an
        Event's wait is)."""
        acquire = self.done.acquire
        with _loops.blocked():
            while not acquire(True, SLICE_S):
                pass


def run(fn: Callable[[], T], ctx: "Context | None" = None, cancel: Callable[[], None] | None = None) -> T:
    """fn() — libaf calls that may block — waited for interruptibly (see
    above); its result, or raises its exception. fn's closure holds
    everything the call uses, and fn holds ctx open (Context._using) for
    its C calls, so a caller giving up on the call leaves the context's
    free, if it is closed meanwhile, to the call's return. ctx: the context
    the call runs on (for a cancel scope). cancel: called on
    KeyboardInterrupt (or any other exception) while waiting, to stop the
    call."""
    if threading.get_ident() == _MAIN and not _loops._awaiting and not lib.af_is_tracing():
        # Stays on this thread when SIGINT's watcher can stop it: through
        # its own cancel token, or a cancel scope on ctx (which stops an
        # eager operation's wait and aborts its requests, or a run). Run
        # scopes (collect, ...) stay on it too.
        if cancel is not None:
            if _sigint.arm(cancel):
                try:
                    return fn()
                finally:
                    _sigint.disarm()
        elif ctx is not None and ctx._ptr:
            # The token first: get() may free a fired one, which the watcher
            # triggers only while armed.
            token = _scope_token.get()
            if _sigint.arm(_scope_token.trigger):
                try:
                    handle = ctx._use()  # held open from the push to the pop
                    try:
                        check(lib.af_cancel_scope_push(handle, token))
                        try:
                            return fn()
                        finally:
                            check(lib.af_cancel_scope_pop(handle))
                    finally:
                        ctx._done()
                finally:
                    _sigint.disarm()
    if not can_hop():
        if not _loops._awaiting:  # (the common case, without a with block's cost)
            return fn()
        with _loops.blocked():
            return fn()
    call = _Call(fn)
    try:
        with _loops.blocked():  # before the call starts work that may want this thread's loop
            _submit(call)
            call.wait_done()
    except BaseException:
        if cancel is not None:
            cancel()
        raise
    if call.ok:
        return call.result  # type: ignore[no-any-return]
    raise call.result


def start(fn: Callable[[], T]) -> "asyncio.Future[T]":
    """fn() on a worker; a future of the running loop that gets its result
    (or exception), for awaiting a blocking libaf call without blocking the
    loop. Cancelling the future does not stop fn: the caller stops it (a
    cancel token) and fn's closure holds what the call uses until it returns."""
    loop = asyncio.get_running_loop()
    future: "asyncio.Future[T]" = loop.create_future()
    call = _Call(fn)

    def settle() -> None:
        if future.done():  # cancelled meanwhile
            return
        if call.ok:
            future.set_result(call.result)
        else:
            future.set_exception(call.result)

    def returned() -> None:
        try:
            loop.call_soon_threadsafe(settle)
        except RuntimeError:
            pass  # the loop closed: nobody awaits the result

    call.then = returned
    _submit(call)
    return future


# -- Ctrl-C during a call that takes a cancel token -----------------------------
# Such a call need not leave the main thread: Python's C-level SIGINT handler
# writes the signal's number to the wakeup fd (signal.set_wakeup_fd) at once,
# even while the main thread is inside C; a watcher thread reading it
# cancels the call, which returns, and KeyboardInterrupt is raised as soon
# as the main thread is back in Python. This saves the hand-off to a worker
# (~15 us of CPU per lazy read). It is used only while Python's own SIGINT
# handler is installed and no one else owns the wakeup fd (asyncio may).


class _SigintWatch:
    """One lock orders the watcher against arm(): a SIGINT byte the watcher
    reads is matched with the call armed when it reads it, and arm() first
    drains bytes of signals that came before it (already raised as
    KeyboardInterrupt, or about to be) so they cannot cancel the new call."""

    def __init__(self) -> None:
        self._r = self._w = -1  # the pipe; its write end is our wakeup fd
        self._cancel: Callable[[], None] | None = None  # of the call in progress on the main thread
        self._lock = threading.Lock()

    def arm(self, cancel: Callable[[], None]) -> bool:
        """On the main thread: whether SIGINT will now run cancel()."""
        if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
            return False
        if self._w < 0:
            r, w = os.pipe()
            os.set_blocking(r, False)  # drained by arm() too, which must not wait
            os.set_blocking(w, False)  # set_wakeup_fd requires it
            self._r, self._w = r, w
            threading.Thread(target=self._watch, args=(r,), name="libaf-sigint", daemon=True).start()
        try:
            old = signal.set_wakeup_fd(self._w)
        except (ValueError, OSError):
            return False
        if old not in (-1, self._w):  # someone else's: give it back
            signal.set_wakeup_fd(old)
            return False
        with self._lock:
            self._drain()
            self._cancel = cancel
        return True

    def disarm(self) -> None:
        with self._lock:
            self._cancel = None

    def _drain(self) -> bytes:
        try:
            return os.read(self._r, 64)
        except (BlockingIOError, OSError):
            return b""

    def _watch(self, r: int) -> None:
        poller = select.poll()
        poller.register(r, select.POLLIN)
        while True:
            try:
                poller.poll()
            except OSError:
                return
            with self._lock:
                data, cancel = self._drain(), self._cancel
                if signal.SIGINT in data and cancel is not None:
                    try:
                        cancel()
                    except BaseException:  # noqa: BLE001 - the watcher must go on
                        pass

    def forget(self) -> None:
        # A forked child has no watcher thread: the next arm() starts one.
        self._r = self._w = -1
        self._cancel = None
        self._lock = threading.Lock()
        _scope_token._ptr = None  # (the parent's handle: not freed here)


_sigint = _SigintWatch()


class _ScopeToken:
    """The cancel token of the main thread's cancel scopes: one, until a
    Ctrl-C fires it (a fired token stays fired), then a new one."""

    def __init__(self) -> None:
        self._ptr: int | None = None

    def get(self) -> int:
        if self._ptr is None or lib.af_cancel_triggered(self._ptr):
            if self._ptr is not None:
                lib.af_cancel_free(self._ptr)  # a scope holds its own reference
                self._ptr = None
            out = ctypes.c_void_p()
            check(lib.af_cancel_new(ctypes.byref(out)))
            self._ptr = out.value
        assert self._ptr is not None
        return self._ptr

    def trigger(self) -> None:
        ptr = self._ptr
        if ptr is not None:
            lib.af_cancel_trigger(ptr)


_scope_token = _ScopeToken()


# -- the workers ----------------------------------------------------------------
# Daemon threads, kept once started (a new thread per call costs ~15x the
# hand-off): an abandoned call that never returns must not hold up the
# interpreter's exit. A call never queues behind another: with no idle
# worker, a new one starts.

_jobs: "queue.SimpleQueue[_Call]" = queue.SimpleQueue()
_idle = 0
_idle_lock = threading.Lock()


def _submit(call: _Call) -> None:
    global _idle
    with _idle_lock:
        spawn = _idle == 0
        if not spawn:
            _idle -= 1
    if spawn:
        threading.Thread(target=_work, name="libaf-call", daemon=True).start()
    _jobs.put(call)


def _work() -> None:
    global _idle
    while True:
        _jobs.get()()
        with _idle_lock:
            _idle += 1


def _forget_workers() -> None:
    # A forked child has none of its parent's workers.
    global _jobs, _idle, _idle_lock
    _jobs, _idle, _idle_lock = queue.SimpleQueue(), 0, threading.Lock()
    _sigint.forget()


os.register_at_fork(after_in_child=_forget_workers)
