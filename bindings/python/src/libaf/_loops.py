"""The event loop coroutine callbacks (async host tools, async host
providers) run on.

A coroutine callback runs on the loop of a caller that awaits libaf
(Program.acall, Context.aeval, awaiting a Future) when there is one: it can
then use that loop's own objects (client sessions, locks, queues). With no
such caller (a synchronous run, or a loop whose thread is inside a
synchronous libaf wait), it runs on a private loop on a daemon thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Callable, Iterator

_loop: asyncio.AbstractEventLoop | None = None
_loop_thread: threading.Thread | None = None
_loop_lock = threading.Lock()
# Loops with an await of libaf pending (how many), most recent last; and
# loops whose thread is inside a synchronous libaf wait.
_awaiting: dict[asyncio.AbstractEventLoop, int] = {}
_blocked: dict[asyncio.AbstractEventLoop, int] = {}


def background_loop() -> asyncio.AbstractEventLoop:
    """An event loop on a daemon thread, where coroutine host tools and host
    providers run when no caller's loop awaits libaf (libaf calls them from
    its own threads, which have none). Tools and providers cannot end it
    (their BaseExceptions fail their own call); should its thread end anyway,
    the next call starts a new one."""
    global _loop, _loop_thread
    with _loop_lock:
        if _loop is None or _loop_thread is None or not _loop_thread.is_alive():
            _loop = asyncio.new_event_loop()
            _loop_thread = threading.Thread(target=_loop.run_forever, name="libaf-asyncio", daemon=True)
            _loop_thread.start()
        return _loop


def _count(table: dict[asyncio.AbstractEventLoop, int], loop: asyncio.AbstractEventLoop, step: int) -> None:
    with _loop_lock:
        n = table.get(loop, 0) + step
        if n:
            table[loop] = n
        else:
            table.pop(loop, None)


@contextlib.contextmanager
def awaiting() -> Iterator[asyncio.AbstractEventLoop]:
    """Marks the running loop as awaiting libaf for the block (its coroutine
    tools and providers then run on it); yields the loop."""
    loop = asyncio.get_running_loop()
    _count(_awaiting, loop, 1)
    try:
        yield loop
    finally:
        _count(_awaiting, loop, -1)


@contextlib.contextmanager
def blocked() -> Iterator[None]:
    """Marks the loop running on this thread, if any, as blocked for the
    block (a synchronous libaf wait): coroutine callbacks go elsewhere."""
    loop = asyncio._get_running_loop() if _awaiting else None
    if loop is None:
        yield
        return
    _count(_blocked, loop, 1)
    try:
        yield
    finally:
        _count(_blocked, loop, -1)


def coroutine_loop() -> asyncio.AbstractEventLoop:
    """Where a coroutine callback starts now: the most recent loop awaiting
    libaf that is running and not blocked, else the private loop."""
    with _loop_lock:
        for loop in reversed(list(_awaiting)):
            if loop.is_running() and not loop.is_closed() and loop not in _blocked:
                return loop
    return background_loop()


def call_soon(fn: Callable[[], None]) -> None:
    """fn() on coroutine_loop(), from any thread (the private loop when the
    chosen one closed meanwhile)."""
    try:
        coroutine_loop().call_soon_threadsafe(fn)
    except RuntimeError:  # closed between the choice and the call
        background_loop().call_soon_threadsafe(fn)
