"""Python callables behind libaf's C callbacks.

libaf gets a small integer handle as user_data (no Python object address
crosses into C); the trampolines below are created once and live as long as
the module, so a C callback can never outlive the code it calls. A
callable's handle is dropped by the matching ``destroy`` callback, which
libaf runs exactly once.

A callback must not let a Python exception escape into C: each trampoline
catches everything and turns it into an af_error_t* that carries the
exception itself back out as its payload (see errors.error_from_exception).
"""

from __future__ import annotations

import ctypes
import itertools
import threading
from typing import TYPE_CHECKING, Any, Callable

from . import _lib
from .errors import error_from_exception
from .value import Value, to_value

if TYPE_CHECKING:
    #: What a C callback gets for an af_value_t** (an array of handles, or
    #: the slot of one result).
    _Handles = ctypes._Pointer[ctypes.c_void_p]

_CALLBACK = 9  # AF_ERR_CALLBACK
_lock = threading.Lock()
_handles: dict[int, Any] = {}
_next = itertools.count(1)


def new_handle(obj: Any) -> int:
    """Keeps obj alive under a new handle until drop_handle."""
    with _lock:
        h = next(_next)
        _handles[h] = obj
        return h


def get_handle(h: int | None) -> Any:
    with _lock:
        return _handles[h or 0]


def drop_handle(h: int | None) -> None:
    with _lock:
        _handles.pop(h or 0, None)


def _destroy(user_data: int | None) -> None:
    try:
        drop_handle(user_data)
    except BaseException:  # noqa: BLE001 - may run during interpreter shutdown
        pass


def _call_returning_value(user_data: int | None, args: list[Value], out: _Handles) -> int | None:
    """Shared body of the trace and host-function trampolines: calls the
    handle's callable on args, writes the result (a new reference) to *out."""
    try:
        fn: Callable[..., Any] = get_handle(user_data)
        result = to_value(fn(*args))
        out[0] = _lib.lib.af_value_clone(result._ptr)
        return None
    except BaseException as exc:  # noqa: BLE001 - nothing may unwind into C
        return error_from_exception(exc, _CALLBACK)


def _borrowed_values(ptrs: _Handles, n: int) -> list[Value]:
    return [Value._own(_lib.lib.af_value_clone(ptrs[i])) for i in range(n)]


def _trace(user_data: int | None, ctx: int | None, inputs: _Handles, n: int, out: _Handles) -> int | None:
    try:
        args = _borrowed_values(inputs, n)
    except BaseException as exc:  # noqa: BLE001
        return error_from_exception(exc, _CALLBACK)
    return _call_returning_value(user_data, args, out)


trace_trampoline = _lib.TRACE_FN(_trace)


def _host(user_data: int | None, args: _Handles, n: int, out: _Handles) -> int | None:
    try:
        values = _borrowed_values(args, n)
    except BaseException as exc:  # noqa: BLE001
        return error_from_exception(exc, _CALLBACK)
    return _call_returning_value(user_data, values, out)


host_trampoline = _lib.HOST_FN(_host)


def _async_host(user_data: int | None, args: _Handles, n: int, req: int | None) -> None:
    try:
        values = _borrowed_values(args, n)
        get_handle(user_data)(values, req)
    except BaseException as exc:  # noqa: BLE001 - the request must still finish
        _lib.lib.af_error_free(_lib.lib.af_host_request_fail(req, error_from_exception(exc, _CALLBACK)))
        _lib.lib.af_host_request_free(req)


async_host_trampoline = _lib.ASYNC_HOST_FN(_async_host)


def _submit(user_data: int | None, req: int | None) -> None:
    try:
        get_handle(user_data)(req)
    except BaseException as exc:  # noqa: BLE001 - the request must still finish
        _lib.lib.af_error_free(_lib.lib.af_lm_request_fail(req, error_from_exception(exc, 6)))


submit_trampoline = _lib.SUBMIT_FN(_submit)


def _done(user_data: int | None) -> None:
    try:
        get_handle(user_data)()
    except BaseException:  # noqa: BLE001 - a done notification has nowhere to report
        pass


done_trampoline = _lib.DONE_FN(_done)


def _progress(user_data: int | None, done: int, total: int) -> None:
    try:
        get_handle(user_data)(done, total)
    except BaseException:  # noqa: BLE001 - progress is advisory; the run goes on
        pass


progress_trampoline = _lib.PROGRESS_FN(_progress)


def _stream(user_data: int | None, eqn: int, item: int, text: int | None, length: int) -> None:
    try:
        piece = None if not text else ctypes.string_at(text, length).decode("utf-8", "replace")
        get_handle(user_data)(eqn, item, piece)
    except BaseException:  # noqa: BLE001 - like progress: nothing may unwind into libaf
        pass


stream_trampoline = _lib.STREAM_FN(_stream)


destroy_trampoline = _lib.DESTROY_FN(_destroy)
