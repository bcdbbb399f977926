"""Handles that user code may close while other threads use them.

ctypes releases the GIL during every C call, so a thread can read an
object's ``_ptr``, enter C with it, and meanwhile another thread can close
the object and free what ``_ptr`` points to. A :class:`Guarded` object
counts the uses in progress instead:

- a use (``_use`` ... ``_done``, or ``_using(fn, ...)``) holds the handle
  open for the whole of its C call; once the handle is closed a new use
  raises the class's closed-handle error (``_closed_error``);
- ``_close`` marks the handle closed at once (``_ptr`` becomes None) and its
  finishing call (the ``af_*_free``) runs exactly once, when no use is in
  progress any more: by ``_close`` itself when none is, else by the last
  ``_done``. ``_close`` never waits for the uses in progress, so a close
  from inside a callback of a use of the same handle cannot deadlock.

The count is a list, one entry per use: ``list.append`` and ``list.pop``
are atomic (one C call under the GIL; free-threaded builds lock the list),
which keeps the hot path free of a lock. Correctness rests on two orders:
a use appends its entry before it reads ``_ptr``, and ``_close`` sets
``_ptr`` to None (after queueing the finishing call in ``_orphan``) before
it looks at the count; whoever then finds ``_ptr`` None and no use in
progress pops ``_orphan`` (also atomic), so exactly one thread finishes the
handle and no use that read a live ``_ptr`` is still in progress when it
does. A use that started after the close reads ``_ptr`` None and never
touches the handle.

Objects that cannot be closed while a method of theirs runs (freed only by
``__del__``, which cannot run while a method holds a reference) need none
of this: Values, Irs, Programs, Futures, Providers, CancelTokens, Walks.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, TypeVar

__all__ = ["Guarded"]

T = TypeVar("T")

# Orders concurrent _close calls (rare): exactly one of them closes.
_close_lock = threading.Lock()


class Guarded:
    """Mixin: ``_ptr`` (None once closed), ``_uses`` and ``_orphan`` (lists,
    set by the subclass before ``_ptr`` is first set)."""

    _ptr: int | None
    _uses: list[None]
    _orphan: list[Callable[[], None]]

    def _closed_error(self) -> BaseException:
        """What a use of the closed handle raises."""
        raise NotImplementedError

    def _finish_late(self, finish: Callable[[], None]) -> None:
        """Runs the finishing call when the last use in progress at the close
        ends (on that use's thread by default)."""
        finish()

    def _use(self) -> int:
        """Starts a use: the handle, valid until the matching _done; raises
        the closed-handle error (nothing to end then) once closed."""
        self._uses.append(None)
        ptr = self._ptr
        if ptr:
            return ptr
        self._done()
        raise self._closed_error()

    def _done(self) -> None:
        """Ends a use. The last use of a handle closed meanwhile finishes it."""
        uses = self._uses
        uses.pop()
        if self._ptr is None and not uses:  # this order: see the module's doc
            self._finish_orphan(late=True)

    def _using(self, fn: Callable[..., T], *args: Any) -> T:
        """fn(handle, *args) with the handle held open for the call."""
        ptr = self._use()
        try:
            return fn(ptr, *args)
        finally:
            self._done()

    def _close(self, finish: Callable[[int], None]) -> bool:
        """Closes the handle: later uses raise the closed-handle error, and
        finish(handle) runs now if no use is in progress, else when the last
        one ends. Whether this call closed it (False if it was closed)."""
        with _close_lock:
            ptr = self._ptr
            if not ptr:
                return False
            self._orphan.append(lambda: finish(ptr))
            self._ptr = None
        if not self._uses:
            self._finish_orphan(late=False)
        return True

    def _finish_orphan(self, late: bool) -> None:
        try:
            finish = self._orphan.pop()
        except IndexError:
            return  # another thread took it
        if late:
            self._finish_late(finish)
        else:
            finish()

    def _in_use(self) -> int:
        """How many uses are in progress (for tests)."""
        return len(self._uses)
