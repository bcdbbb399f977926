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
from typing import Any, Callable

from . import _lib
from .errors import error_from_exception
from .value import Value, to_value

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


def _call_returning_value(user_data: int | None, args: list, out: Any) -> int | None:
    """Shared body of the trace and host-function trampolines: calls the
    handle's callable on args, writes the result (a new reference) to *out."""
    try:
        fn: Callable[..., Any] = get_handle(user_data)
        result = to_value(fn(*args))
        out[0] = _lib.lib.af_value_clone(result._ptr)
        return None
    except BaseException as exc:  # noqa: BLE001 - nothing may unwind into C
        return error_from_exception(exc, _CALLBACK)


def _borrowed_values(ptrs: Any, n: int) -> list:
    return [Value._own(_lib.lib.af_value_clone(ptrs[i])) for i in range(n)]


@_lib.TRACE_FN
def trace_trampoline(user_data, ctx, inputs, n, out):  # type: ignore[no-untyped-def]
    try:
        args = _borrowed_values(inputs, n)
    except BaseException as exc:  # noqa: BLE001
        return error_from_exception(exc, _CALLBACK)
    return _call_returning_value(user_data, args, out)


@_lib.HOST_FN
def host_trampoline(user_data, args, n, out):  # type: ignore[no-untyped-def]
    try:
        values = _borrowed_values(args, n)
    except BaseException as exc:  # noqa: BLE001
        return error_from_exception(exc, _CALLBACK)
    return _call_returning_value(user_data, values, out)


@_lib.ASYNC_HOST_FN
def async_host_trampoline(user_data, args, n, req):  # type: ignore[no-untyped-def]
    try:
        values = _borrowed_values(args, n)
        get_handle(user_data)(values, req)
    except BaseException as exc:  # noqa: BLE001 - the request must still finish
        _lib.lib.af_error_free(_lib.lib.af_host_request_fail(req, error_from_exception(exc, _CALLBACK)))
        _lib.lib.af_host_request_free(req)


@_lib.SUBMIT_FN
def submit_trampoline(user_data, req):  # type: ignore[no-untyped-def]
    try:
        get_handle(user_data)(req)
    except BaseException as exc:  # noqa: BLE001 - the request must still finish
        _lib.lib.af_error_free(_lib.lib.af_lm_request_fail(req, error_from_exception(exc, 6)))


@_lib.DONE_FN
def done_trampoline(user_data):  # type: ignore[no-untyped-def]
    try:
        get_handle(user_data)()
    except BaseException:  # noqa: BLE001 - a done notification has nowhere to report
        pass


@_lib.PROGRESS_FN
def progress_trampoline(user_data, done, total):  # type: ignore[no-untyped-def]
    try:
        get_handle(user_data)(done, total)
    except BaseException:  # noqa: BLE001 - progress is advisory; the run goes on
        pass


@_lib.STREAM_FN
def stream_trampoline(user_data, eqn, item, text, length):  # type: ignore[no-untyped-def]
    try:
        piece = None if not text else ctypes.string_at(text, length).decode("utf-8", "replace")
        get_handle(user_data)(eqn, item, piece)
    except BaseException:  # noqa: BLE001 - like progress: nothing may unwind into libaf
        pass


destroy_trampoline = _lib.DESTROY_FN(_destroy)
