"""Compiled programs, run options, cancel tokens and runs in flight."""

from __future__ import annotations

import asyncio
import ctypes
import json
import os
import threading
from dataclasses import dataclass
from typing import Any, Callable, Optional

from . import _blocking, _callbacks, _lib
from ._lib import lib
from . import _loops
from ._loops import awaiting
from .context import Context, current
from .errors import check
from .ir import Ir
from .progress import ProgressBar
from .value import Tree, Value, asettle, settle, to_value

__all__ = ["Program", "RunOptions", "CancelToken", "Future", "profile_event"]


class CancelToken:
    """One trigger() cancels every run given this token (running or later).
    Thread-safe."""

    def __init__(self) -> None:
        self._ptr = None
        out = ctypes.c_void_p()
        check(lib.af_cancel_new(ctypes.byref(out)))
        self._ptr = out.value

    def trigger(self) -> None:
        lib.af_cancel_trigger(self._ptr)

    @property
    def triggered(self) -> bool:
        return bool(lib.af_cancel_triggered(self._ptr))

    def __del__(self) -> None:
        _lib.release(self, lib.af_cancel_free)


@dataclass
class RunOptions:
    """Options of one run.

    keep_going: a failure does not cancel the rest; each failed output leaf
      becomes {"error": {"code", "name", "message"}}.
    item_errors: in a batched program, an item that fails becomes its error
      value {"error": {...}} in every output list and the other items
      complete (their LM calls are not cancelled).
    profile: record a profile (Future.profile()).
    timeout: seconds (None = none); the run fails with libaf.Timeout.
    profile_path: write the profile there as Chrome trace JSON.
    progress: progress(done, total) after each equation, from libaf threads;
      or True: a progress bar on stderr (tqdm's when tqdm is installed, else
      a plain line) counting the run's LM calls, its equations beside them.
    cancel: a CancelToken that cancels the run.
    summary: record the run summary (Future.summary()): per model calls,
      tokens, retries, time queued and in flight, and the wall time.
    stream: stream(eqn, item, text) with LM replies as they arrive, from
      libaf threads (one call at a time per run): the equation's index, the
      batch item and the next piece, or None when what that equation and
      item streamed so far does not count. The result is the same as without.
    stream_tag: only LM equations carrying this tag stream (None = all).
    max_value_bytes: the largest value one equation may build, in bytes (a
      format or concat result; None = the default, 1 GiB); past it the run
      fails with libaf.OutOfMemory naming the primitive and the size.
    journal: a run journal file (see libaf.journal_summary): a SQLite file
      recording each LM call the run completes, committed before its result
      is used. Rerunning the same program on the same inputs with the same
      journal answers the calls recorded there without reaching their
      providers, so a run killed at any point resumes where it stopped (host
      tools run again). Created 0600 when missing (missing parent directories
      too): it holds the LM replies in clear. The run fails at its
      start with libaf.InvalidArgument (a journal of another program or other
      inputs), libaf.FormatError (not a journal, or corrupt) or libaf.IOError
      (cannot be created or opened, or another run holds it).
    """

    keep_going: bool = False
    profile: bool = False
    item_errors: bool = False
    timeout: Optional[float] = None
    profile_path: Optional[str | os.PathLike[str]] = None
    progress: Optional[Callable[[int, int], None] | bool] = None
    cancel: Optional[CancelToken] = None
    summary: bool = False
    stream: Optional[Callable[[int, int, Optional[str]], None]] = None
    stream_tag: Optional[str] = None
    max_value_bytes: Optional[int] = None
    journal: Optional[str | os.PathLike[str]] = None

    def _to_c(self) -> tuple[_lib.RunOptionsC, list[Any]]:
        """The C struct and what must stay alive while the run may use it."""
        o = _lib.RunOptionsC()
        o.struct_size = ctypes.sizeof(_lib.RunOptionsC)
        o.flags = ((_lib.AF_RUN_KEEP_GOING if self.keep_going else 0) | (_lib.AF_RUN_PROFILE if self.profile else 0)
                   | (_lib.AF_RUN_ITEM_ERRORS if self.item_errors else 0) | (_lib.AF_RUN_SUMMARY if self.summary else 0))
        if self.timeout is not None:
            if self.timeout <= 0:
                raise ValueError(f"timeout must be positive seconds, got {self.timeout!r}")
            o.timeout_ms = max(1, int(self.timeout * 1000))
        if self.max_value_bytes is not None:
            # 0 would mean the default in C: reject it rather than surprise.
            if (isinstance(self.max_value_bytes, bool) or not isinstance(self.max_value_bytes, int)
                    or not 0 < self.max_value_bytes < 2**64):
                raise ValueError(f"max_value_bytes must be a positive int (bytes), got {self.max_value_bytes!r}")
            o.max_value_bytes = self.max_value_bytes
        keep: list[Any] = []
        if self.profile_path is not None:
            p = os.fsencode(self.profile_path)
            keep.append(p)
            o.profile_path, o.profile_path_len = p, len(p)
        if self.journal is not None:
            j = os.fsencode(self.journal)
            if not j:  # an empty path would mean "no journal" in C: reject it rather than surprise
                raise ValueError("journal must be a file path (None = no journal), got ''")
            keep.append(j)
            o.journal_path, o.journal_path_len = j, len(j)
        if self.progress is True:
            bar = ProgressBar("LM calls")
            keep.append(bar)  # the Future finds it there, to show the calls
            o.flags |= _lib.AF_RUN_SUMMARY  # where the calls are counted
            o.progress = _callbacks.progress_trampoline
            o.progress_user_data = _callbacks.new_handle(bar.equations)
            o.progress_destroy = _callbacks.destroy_trampoline  # the Future closes the bar
        elif self.progress is not None and self.progress is not False:
            if not callable(self.progress):
                raise TypeError("progress must be a callable (done, total) or True (a progress bar)")
            o.progress = _callbacks.progress_trampoline
            o.progress_user_data = _callbacks.new_handle(self.progress)
            o.progress_destroy = _callbacks.destroy_trampoline
        if self.cancel is not None:
            if not isinstance(self.cancel, CancelToken):
                raise TypeError("cancel must be a libaf.CancelToken")
            keep.append(self.cancel)
            o.cancel = self.cancel._ptr
        if self.stream is not None:
            if not callable(self.stream):
                raise TypeError("stream must be a callable (eqn, item, text)")
            o.stream = _callbacks.stream_trampoline
            o.stream_user_data = _callbacks.new_handle(self.stream)
            o.stream_destroy = _callbacks.destroy_trampoline
        if self.stream_tag:
            t = _lib.utf8(self.stream_tag, "stream_tag")
            keep.append(t)
            o.stream_tag, o.stream_tag_len = t, len(t)
        return o, keep


def _opts(options: RunOptions | None, kwargs: dict[str, Any]) -> RunOptions | None:
    if options is not None and kwargs:
        raise TypeError("pass either options= or option keywords, not both")
    return RunOptions(**kwargs) if kwargs else options


class Program:
    """A compiled IR, run by the dataflow executor: every equation starts as
    soon as its inputs exist, independent LM calls run concurrently."""

    __slots__ = ("_ptr", "_ctx")
    _ptr: int | None
    _ctx: Context

    def __init__(self) -> None:
        raise TypeError("use Program.compile(ir) or Program.load(path)")

    @classmethod
    def _own(cls, ptr: int | None, ctx: Context) -> "Program":
        p = object.__new__(cls)
        p._ptr, p._ctx = ptr, ctx
        return p

    @classmethod
    def compile(cls, ir: Ir, ctx: Context | None = None) -> "Program":
        """Validates, simplifies (DCE, CSE) and plans ir."""
        if not isinstance(ir, Ir):
            raise TypeError(f"compile() needs a libaf.Ir, got {type(ir).__name__}")
        c = current(ctx)
        out = ctypes.c_void_p()
        check(c._using(lib.af_compile, ir._ptr, ctypes.byref(out)))
        return cls._own(out.value, c)

    def __del__(self) -> None:
        _lib.release(self, lib.af_program_free)

    def __call__(self, *inputs: Tree, ctx: Context | None = None, options: RunOptions | None = None,
                 **option_kwargs: object) -> Value:
        """Runs and waits. Options as RunOptions fields (keep_going=True, ...).
        Inside a trace the program's equations are inlined instead. Ctrl-C
        (KeyboardInterrupt) while waiting cancels the run."""
        if lib.af_is_tracing():
            c = ctx or current()
            vals = [to_value(x) for x in inputs]
            out = ctypes.c_void_p()
            check(c._using(lib.af_program_call, self._ptr, _lib.handles(vals), len(vals), ctypes.byref(out)))
            return Value._own(out.value)
        # A run started and waited for from Python: a blocking C call could
        # not be interrupted.
        future = None
        try:
            # This thread's event loop, if it runs one, is blocked from
            # before the run starts: none of its coroutine tools go there.
            with _loops.blocked():
                future = self.start(*inputs, ctx=ctx, options=options, **option_kwargs)
                return future.wait()
        except BaseException:
            if future is not None:
                future.cancel()  # no-op once the run has finished
            raise

    call = __call__

    def start(self, *inputs: Tree, ctx: Context | None = None, options: RunOptions | None = None,
              **option_kwargs: object) -> "Future":
        """Starts a run on the context's scheduler and returns at once."""
        c = ctx or self._ctx
        opts = _opts(options, option_kwargs)
        vals = [to_value(x) for x in inputs]
        settle(vals)  # the start reads promise inputs, evaluating them: interruptibly here
        out = ctypes.c_void_p()
        keep: list[Any] = []
        if opts is None:
            check(c._using(lib.af_program_call_async, self._ptr, _lib.handles(vals), len(vals), ctypes.byref(out)))
        else:
            o, keep = opts._to_c()
            check(c._using(lib.af_program_call_async_with, self._ptr, _lib.handles(vals), len(vals),
                           ctypes.byref(o), ctypes.byref(out)))
        return Future(out.value, keep + [c])

    async def acall(self, *inputs: Tree, ctx: Context | None = None, options: RunOptions | None = None,
                    **option_kwargs: object) -> Value:
        """Runs without blocking the running event loop (promise inputs are
        awaited first); coroutine host tools and providers of the run run on
        this loop. Cancelling the awaiting task cancels the run (its
        in-flight LM requests included)."""
        vals = [to_value(x) for x in inputs]
        await asettle(vals)
        out: Value = await self.start(*vals, ctx=ctx, options=options, **option_kwargs)
        return out

    call_async = acall

    def save(self, path: str | os.PathLike[str]) -> None:
        """Writes the program (IR and plan) so Program.load runs it without compiling."""
        p = os.fsencode(path)
        check(lib.af_program_save(self._ptr, p, len(p)))

    @classmethod
    def load(cls, path: str | os.PathLike[str], ctx: Context | None = None) -> "Program":
        """Reads and checks a saved program (an .afg of a bare IR is compiled)."""
        c = current(ctx)
        p = os.fsencode(path)
        out = ctypes.c_void_p()
        check(c._using(lib.af_program_load, p, len(p), ctypes.byref(out)))
        return cls._own(out.value, c)

    def __repr__(self) -> str:
        return "<libaf.Program>"


class Future:
    """A run in flight. ``await`` it in asyncio (cancelling the awaiting task
    cancels the run), or wait() from a thread. Dropping it does not cancel
    the run."""

    def __init__(self, ptr: int | None, keep: list[Any]) -> None:
        self._ptr = ptr
        self._keep = keep  # what the run uses: its context, cancel token, profile and journal paths
        # progress=True's bar, which waiting updates with the LM calls made.
        self._bar = next((k for k in keep if isinstance(k, ProgressBar)), None)

    def __del__(self) -> None:
        if self._bar is not None:
            self._bar.close()
        _lib.release(self, lib.af_future_free)

    def wait(self) -> Value:
        """Blocks until the run finishes; its output, or raises its error.
        KeyboardInterrupt (or any exception) while waiting cancels the run."""
        if not self.ready():
            finished = threading.Event()
            try:
                self.on_done(finished.set)
                if self._bar is None:
                    _blocking.wait(finished)  # interruptible, unlike a blocking C call
                else:
                    with _loops.blocked():
                        while not finished.wait(_blocking.SLICE_S):
                            self._show_calls()
            except BaseException:
                self.cancel()
                raise
        self._close_bar()
        out = ctypes.c_void_p()
        check(lib.af_future_wait(self._ptr, ctypes.byref(out)))
        return Value._own(out.value)

    def ready(self) -> bool:
        return bool(lib.af_future_ready(self._ptr))

    def cancel(self) -> None:
        """Ends the run with Cancelled and cancels its in-flight work."""
        lib.af_future_cancel(self._ptr)

    def on_done(self, fn: Callable[[], None]) -> None:
        """fn() runs once when the run finishes, on a libaf thread (or here,
        at once, if it already has). Exceptions in fn are ignored."""
        if not callable(fn):
            raise TypeError("on_done needs a callable")
        h = _callbacks.new_handle(fn)
        check(lib.af_future_on_done(self._ptr, _callbacks.done_trampoline, h, _callbacks.destroy_trampoline))

    def profile(self) -> str:
        """The run's profile as Chrome trace JSON (needs profile=True or profile_path)."""
        b = _lib.Bytes()
        check(lib.af_future_profile(self._ptr, ctypes.byref(b)))
        return _lib.take_bytes(b).decode("utf-8")

    def summary(self) -> dict[str, Any]:
        """The run summary (needs summary=True): {"wall_ms", "total", "models":
        {model: {...}}}, each with calls, failed, prompt_tokens,
        completion_tokens, retries, queued_ms, in_flight_ms. Complete once the
        run finished (also when it failed), so far before."""
        b = _lib.Bytes()
        check(lib.af_future_summary_json(self._ptr, ctypes.byref(b)))
        summary: dict[str, Any] = json.loads(_lib.take_bytes(b))
        return summary

    def _show_calls(self) -> None:
        """Shows the LM calls the run made so far on its bar."""
        assert self._bar is not None
        b = _lib.Bytes()
        if lib.af_future_summary_json(self._ptr, ctypes.byref(b)) is None:
            self._bar.count(int(json.loads(_lib.take_bytes(b))["total"]["calls"]))

    def _close_bar(self) -> None:
        """The run ended: its bar shows the final count and closes."""
        if self._bar is not None:
            self._show_calls()
            self._bar.close()

    def __await__(self):  # type: ignore[no-untyped-def]
        return self._wait_async().__await__()

    async def _wait_async(self) -> Value:
        with awaiting() as loop:
            return await self._wait_on(loop)

    async def _wait_on(self, loop: asyncio.AbstractEventLoop) -> Value:
        done = loop.create_future()

        def notify() -> None:
            try:
                loop.call_soon_threadsafe(_resolve, done)
            except RuntimeError:
                pass  # the loop closed before the run ended: nobody is waiting

        self.on_done(notify)
        try:
            if self._bar is None:
                await done
            else:
                while not done.done():
                    await asyncio.wait([done], timeout=_blocking.SLICE_S)
                    self._show_calls()
        except asyncio.CancelledError:
            self.cancel()
            raise
        self._close_bar()
        return self.wait()


def profile_event(name: str, args: dict[str, Any] | None = None) -> None:
    """Adds an instant event to the profile of the run calling this host
    tool: a marker on the run's timeline ("cache miss", "page 3 fetched").

    name: not empty. args: a dict shown with the event (sent as JSON), or
    None. It counts when called from a host tool's body (a plain or
    ``blocking=True`` function, not a coroutine, which runs on libaf's event
    loop) while a run that records a profile (``profile=True`` or
    ``profile_path``) calls it, and is then an event ``{"ph": "i", "cat":
    "host", "name", "args": {"eqn": ..., "args": args}}`` on the calling
    thread's track. Anywhere else (no run, an eager call, a run without a
    profile) it does nothing. InvalidArgument: name empty, args not a JSON
    object."""
    n = _lib.utf8(name, "name")
    a = None if args is None else json.dumps(args, allow_nan=False, ensure_ascii=False).encode("utf-8")
    check(lib.af_profile_event(n, len(n), a, len(a) if a is not None else 0))


def _resolve(done: "asyncio.Future[None]") -> None:
    if not done.done():  # the awaiting task may have been cancelled meanwhile
        done.set_result(None)
