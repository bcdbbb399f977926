"""The raw C API (capi/include/af/af.h) through ctypes.

ctypes rather than cffi: it is in the standard library, so the wheel carries
only libaf.so and pure Python (no compiled extension module, no build-time C
compiler beyond libaf's own), and ctypes releases the GIL around every C call,
which libaf's worker threads need to call back into Python.

Only this module touches ctypes declarations; everything else imports the
function objects from here.
"""

from __future__ import annotations

import ctypes
import os
from typing import Any
from ctypes import (
    CFUNCTYPE,
    POINTER,
    Structure,
    c_char_p,
    c_double,
    c_int,
    c_int32,
    c_int64,
    c_size_t,
    c_uint8,
    c_uint32,
    c_uint64,
    c_void_p,
)
from pathlib import Path

#: AF_ABI_VERSION this binding was written against.
ABI_VERSION = 1
WALK_DONE = ctypes.c_size_t(-1).value
RUN_KEEP_GOING = 1
RUN_PROFILE = 2
RUN_ITEM_ERRORS = 4
RUN_SUMMARY = 8
#: af_function_options_t.flags (AF_FUNCTION_*).
FUNCTION_PURE = 1
FUNCTION_BLOCKING = 2


def _find_library() -> str:
    # LIBAF_LIBRARY lets a developer test against a build tree; an installed
    # wheel carries libaf.so beside this file.
    override = os.environ.get("LIBAF_LIBRARY")
    if override:
        return override
    here = Path(__file__).resolve().parent / "libaf.so"
    if here.exists():
        return str(here)
    raise ImportError(
        f"libaf.so not found beside {here.parent}: install the package with "
        "`pip install ./bindings/python`, or set LIBAF_LIBRARY to a built libaf.so"
    )


def _load() -> ctypes.CDLL:
    path = _find_library()
    try:
        return ctypes.CDLL(path)
    except OSError as e:
        raise ImportError(
            f"cannot load libaf from {path}: {e}. Reinstall the package "
            "(`pip install ./bindings/python`) or point LIBAF_LIBRARY at a built libaf.so"
        ) from e


lib = _load()


class Bytes(Structure):
    """af_bytes_t."""

    _fields_ = [("data", POINTER(c_uint8)), ("len", c_size_t)]


TRACE_FN = CFUNCTYPE(c_void_p, c_void_p, c_void_p, POINTER(c_void_p), c_size_t, POINTER(c_void_p))
HOST_FN = CFUNCTYPE(c_void_p, c_void_p, POINTER(c_void_p), c_size_t, POINTER(c_void_p))
SUBMIT_FN = CFUNCTYPE(None, c_void_p, c_void_p)
ASYNC_HOST_FN = CFUNCTYPE(None, c_void_p, POINTER(c_void_p), c_size_t, c_void_p)
DESTROY_FN = CFUNCTYPE(None, c_void_p)
DONE_FN = CFUNCTYPE(None, c_void_p)
PROGRESS_FN = CFUNCTYPE(None, c_void_p, c_uint64, c_uint64)
STREAM_FN = CFUNCTYPE(None, c_void_p, c_uint32, c_uint64, c_void_p, c_size_t)


class RunOptionsC(Structure):
    """af_run_options_t."""

    _fields_ = [
        ("struct_size", c_uint32),
        ("flags", c_uint32),
        ("timeout_ms", c_uint64),
        ("progress", PROGRESS_FN),
        ("progress_user_data", c_void_p),
        ("progress_destroy", DESTROY_FN),
        ("profile_path", c_char_p),
        ("profile_path_len", c_size_t),
        ("cancel", c_void_p),
        ("summary", POINTER(Bytes)),
        ("stream", STREAM_FN),
        ("stream_user_data", c_void_p),
        ("stream_destroy", DESTROY_FN),
        ("stream_tag", c_char_p),
        ("stream_tag_len", c_size_t),
        ("max_value_bytes", c_uint64),
        ("journal_path", c_char_p),
        ("journal_path_len", c_size_t),
    ]


class FunctionOptionsC(Structure):
    """af_function_options_t: exactly one of fn and async_fn is set (a
    field left unset is NULL)."""

    _fields_ = [
        ("struct_size", c_uint32),
        ("flags", c_uint32),
        ("fn", HOST_FN),
        ("async_fn", ASYNC_HOST_FN),
        ("user_data", c_void_p),
        ("destroy", DESTROY_FN),
        ("result_kinds", c_void_p),
    ]


class CseOptionsC(Structure):
    """af_cse_options_t."""

    _fields_ = [("struct_size", c_uint32), ("merge_nondeterministic", c_uint32)]


class TraceOptionsC(Structure):
    """af_trace_options_t."""

    _fields_ = [("struct_size", c_uint32), ("static_mask", c_void_p), ("list_mask", c_void_p)]


P = c_void_p
PP = POINTER(c_void_p)
ERR = c_void_p  # af_error_t*: NULL (None) on success

_SIGNATURES: dict[str, tuple[object, list[object]]] = {
    "af_version": (c_char_p, []),
    "af_abi_version": (c_uint32, []),
    "af_error_code": (c_int32, [P]),
    "af_error_code_name": (c_char_p, [c_int32]),
    "af_error_message": (c_char_p, [P]),
    "af_error_cause": (P, [P]),
    "af_error_new": (ERR, [c_int32, c_char_p, c_size_t]),
    "af_error_new_with": (ERR, [c_int32, c_char_p, c_size_t, P, DESTROY_FN]),
    "af_error_payload": (P, [P]),
    "af_error_free": (None, [P]),
    "af_bytes_free": (None, [POINTER(Bytes)]),
    "af_context_new": (ERR, [PP]),
    "af_context_new_with": (ERR, [c_char_p, c_size_t, PP]),
    "af_context_free": (None, [P]),
    "af_context_stats": (ERR, [P, POINTER(Bytes)]),
    "af_eval": (ERR, [P, PP, c_size_t]),
    "af_eval_with": (ERR, [P, PP, c_size_t, POINTER(RunOptionsC)]),
    "af_value_ready": (c_int32, [P]),
    "af_value_json_new": (ERR, [c_char_p, c_size_t, PP]),
    "af_value_null_new": (ERR, [PP]),
    "af_value_bool_new": (ERR, [c_int32, PP]),
    "af_value_int_new": (ERR, [c_int64, PP]),
    "af_value_float_new": (ERR, [c_double, PP]),
    "af_value_str_new": (ERR, [c_char_p, c_size_t, PP]),
    "af_value_list_new": (ERR, [PP, c_size_t, PP]),
    "af_value_dict_new": (ERR, [POINTER(c_char_p), POINTER(c_size_t), PP, c_size_t, PP]),
    # Deprecated forms (a context they ignore), declared for programs that use them.
    "af_value_from_json": (ERR, [P, c_char_p, c_size_t, PP]),
    "af_value_to_json": (ERR, [P, POINTER(Bytes)]),
    "af_value_null": (ERR, [P, PP]),
    "af_value_bool": (ERR, [P, c_int32, PP]),
    "af_value_int": (ERR, [P, c_int64, PP]),
    "af_value_float": (ERR, [P, c_double, PP]),
    "af_value_str": (ERR, [P, c_char_p, c_size_t, PP]),
    "af_value_list": (ERR, [P, PP, c_size_t, PP]),
    "af_value_dict": (ERR, [P, POINTER(c_char_p), POINTER(c_size_t), PP, c_size_t, PP]),
    "af_value_kind": (c_int32, [P]),
    "af_value_len": (ERR, [P, POINTER(c_size_t)]),
    "af_value_index": (ERR, [P, c_size_t, PP]),
    "af_value_key": (ERR, [P, c_char_p, c_size_t, PP]),
    "af_value_key_at": (ERR, [P, c_size_t, POINTER(c_void_p), POINTER(c_size_t)]),
    "af_value_get_str": (ERR, [P, POINTER(c_void_p), POINTER(c_size_t)]),
    "af_value_get_int": (ERR, [P, POINTER(c_int64)]),
    "af_value_get_float": (ERR, [P, POINTER(c_double)]),
    "af_value_get_bool": (ERR, [P, POINTER(c_int32)]),
    "af_value_clone": (P, [P]),
    "af_value_free": (None, [P]),
    "af_trace": (ERR, [P, TRACE_FN, P, PP, c_size_t, P, PP]),
    "af_trace_with": (ERR, [P, TRACE_FN, P, PP, c_size_t, POINTER(TraceOptionsC), PP]),
    "af_is_tracing": (c_int32, []),
    "af_tag_push": (ERR, [P, c_char_p, c_size_t]),
    "af_tag_pop": (ERR, [P]),
    "af_name_push": (ERR, [P, c_char_p, c_size_t]),
    "af_name_pop": (ERR, [P]),
    "af_fold_push": (ERR, [P]),
    "af_fold_pop": (ERR, [P]),
    "af_format": (ERR, [P, c_char_p, c_size_t, PP, c_size_t, P, PP]),
    "af_concat": (ERR, [P, PP, c_size_t, PP]),
    "af_match": (ERR, [P, P, P, PP]),
    "af_stop_gradient": (ERR, [P, P, PP]),
    "af_depends": (ERR, [P, P, PP, c_size_t, PP]),
    "af_checkpoint": (ERR, [P, P, c_char_p, c_size_t, c_char_p, c_size_t, PP]),
    "af_ir_call": (ERR, [P, P, PP, c_size_t, PP]),
    "af_ir_to_text": (ERR, [P, POINTER(Bytes)]),
    "af_ir_to_dot": (ERR, [P, POINTER(Bytes)]),
    "af_ir_eqn_count": (c_size_t, [P]),
    "af_ir_eqn_prim": (c_char_p, [P, c_size_t]),
    "af_ir_input_count": (c_size_t, [P]),
    "af_ir_hash": (c_uint64, [P]),
    "af_ir_equal": (c_int32, [P, P]),
    "af_ir_clone": (P, [P]),
    "af_ir_free": (None, [P]),
    "af_walk_new": (ERR, [P, P, PP, c_size_t, PP]),
    "af_walk_next": (ERR, [P, POINTER(c_size_t), PP]),
    "af_walk_eval": (ERR, [P]),
    "af_walk_send": (ERR, [P, P]),
    "af_walk_outputs": (ERR, [P, PP]),
    "af_walk_free": (None, [P]),
    "af_batch": (ERR, [P, P, P, PP]),
    "af_pushforward": (ERR, [P, P, PP]),
    "af_pullback": (ERR, [P, P, PP]),
    "af_dce": (ERR, [P, P, P, PP]),
    "af_cse": (ERR, [P, P, PP]),
    "af_cse_ex": (ERR, [P, P, POINTER(CseOptionsC), PP]),
    "af_sched": (ERR, [P, P, PP]),
    "af_ir_eqn_sched": (ERR, [P, c_size_t, POINTER(c_uint32), POINTER(c_double)]),
    "af_ir_validate": (ERR, [P]),
    "af_ir_json": (ERR, [P, POINTER(Bytes)]),
    "af_ir_eqn_json": (ERR, [P, c_size_t, POINTER(Bytes)]),
    "af_ir_var_json": (ERR, [P, c_uint32, POINTER(Bytes)]),
    "af_ir_sub": (ERR, [P, c_size_t, c_char_p, c_size_t, PP]),
    "af_ir_related_json": (ERR, [P, c_size_t, c_uint32, POINTER(Bytes)]),
    "af_ir_related_json_with": (ERR, [P, c_size_t, c_uint32, c_uint64, POINTER(Bytes)]),
    "af_ir_slice": (ERR, [P, POINTER(c_char_p), POINTER(c_size_t), c_size_t, POINTER(c_char_p), POINTER(c_size_t), c_size_t, PP]),
    "af_ir_cost_json": (ERR, [P, c_int64, POINTER(Bytes)]),
    "af_switch": (ERR, [P, P, POINTER(c_char_p), POINTER(c_size_t), PP, c_size_t, PP, c_size_t, PP]),
    "af_while_loop": (ERR, [P, P, P, P, c_uint64, PP]),
    "af_scan": (ERR, [P, P, P, P, c_int32, PP]),
    "af_register_function": (ERR, [P, c_char_p, c_size_t, HOST_FN, P, DESTROY_FN, P]),
    "af_register_function_blocking": (ERR, [P, c_char_p, c_size_t, HOST_FN, P, DESTROY_FN, P]),
    "af_register_function_async": (ERR, [P, c_char_p, c_size_t, ASYNC_HOST_FN, P, DESTROY_FN, P]),
    "af_register_function_with": (ERR, [P, c_char_p, c_size_t, POINTER(FunctionOptionsC)]),
    "af_host_request_cancelled": (c_int, [P]),
    "af_host_request_complete": (ERR, [P, P]),
    "af_host_request_fail": (ERR, [P, P]),
    "af_host_request_free": (None, [P]),
    "af_host_call": (ERR, [P, c_char_p, c_size_t, PP, c_size_t, PP]),
    "af_collect_push": (ERR, [P, c_char_p, c_size_t]),
    "af_collect_pop": (ERR, [P, PP]),
    "af_inject_push": (ERR, [P, c_char_p, c_size_t, P]),
    "af_inject_pop": (ERR, [P]),
    "af_memoize_push": (ERR, [P]),
    "af_memoize_pop": (ERR, [P]),
    "af_compile": (ERR, [P, P, PP]),
    "af_program_clone": (P, [P]),
    "af_program_free": (None, [P]),
    "af_cancel_new": (ERR, [PP]),
    "af_cancel_trigger": (None, [P]),
    "af_cancel_triggered": (c_int, [P]),
    "af_cancel_free": (None, [P]),
    "af_cancel_scope_push": (ERR, [P, P]),
    "af_cancel_scope_pop": (ERR, [P]),
    "af_program_call": (ERR, [P, P, PP, c_size_t, PP]),
    "af_program_call_with": (ERR, [P, P, PP, c_size_t, POINTER(RunOptionsC), PP]),
    "af_program_call_async": (ERR, [P, P, PP, c_size_t, PP]),
    "af_program_call_async_with": (ERR, [P, P, PP, c_size_t, POINTER(RunOptionsC), PP]),
    "af_future_wait": (ERR, [P, PP]),
    "af_future_ready": (c_int, [P]),
    "af_future_cancel": (None, [P]),
    "af_future_on_done": (ERR, [P, DONE_FN, P, DESTROY_FN]),
    "af_future_profile": (ERR, [P, POINTER(Bytes)]),
    "af_profile_event": (ERR, [c_char_p, c_size_t, c_char_p, c_size_t]),
    "af_future_summary_json": (ERR, [P, POINTER(Bytes)]),
    "af_future_free": (None, [P]),
    "af_journal_summary_json": (ERR, [c_char_p, c_size_t, POINTER(Bytes)]),
    "af_journal_compact": (ERR, [c_char_p, c_size_t]),
    "af_lm_call": (ERR, [P, P, P, PP]),
    "af_lm_schema_call": (ERR, [P, P, P, P, PP]),
    "af_provider_echo_new": (ERR, [c_char_p, c_size_t, PP]),
    "af_provider_openai_new": (ERR, [c_char_p, c_size_t, PP]),
    "af_provider_new": (ERR, [c_char_p, c_size_t, PP]),
    "af_provider_replay_new": (ERR, [c_char_p, c_size_t, PP]),
    "af_provider_host_new": (ERR, [SUBMIT_FN, P, DESTROY_FN, PP]),
    "af_lm_request_json": (ERR, [P, POINTER(Bytes)]),
    "af_lm_request_cancelled": (c_int, [P]),
    "af_lm_request_complete": (ERR, [P, c_char_p, c_size_t]),
    "af_lm_request_fail": (ERR, [P, P]),
    "af_context_route": (ERR, [P, c_char_p, c_size_t, P]),
    "af_provider_set_max_in_flight": (ERR, [P, c_uint32]),
    "af_lm_call_ex": (ERR, [P, P, P, P, PP]),
    "af_lm_schema_call_ex": (ERR, [P, P, P, P, P, PP]),
    "af_lm_tool_call": (ERR, [P, P, P, P, P, P, PP]),
    "af_tool_results": (ERR, [P, P, P, P, PP]),
    "af_lm_request_stream": (ERR, [P, c_char_p, c_size_t]),
    "af_context_route_fallback": (ERR, [P, c_char_p, c_size_t, PP, c_size_t]),
    "af_provider_set_options": (ERR, [P, c_char_p, c_size_t]),
    "af_provider_stats": (ERR, [P, POINTER(Bytes)]),
    "af_provider_clone": (P, [P]),
    "af_provider_free": (None, [P]),
    "af_ir_save": (ERR, [P, c_char_p, c_size_t]),
    "af_ir_load": (ERR, [P, c_char_p, c_size_t, PP]),
    "af_ir_to_bytes": (ERR, [P, POINTER(Bytes)]),
    "af_ir_from_bytes": (ERR, [P, c_char_p, c_size_t, PP]),
    "af_graph_verify": (ERR, [P, c_char_p, c_size_t, POINTER(Bytes)]),
    "af_graph_to_json": (ERR, [P, c_char_p, c_size_t, POINTER(Bytes)]),
    "af_graph_from_json": (ERR, [P, c_char_p, c_size_t, POINTER(Bytes)]),
    "af_program_save": (ERR, [P, c_char_p, c_size_t]),
    "af_program_load": (ERR, [P, c_char_p, c_size_t, PP]),
}

for _name, (_restype, _argtypes) in _SIGNATURES.items():
    _fn = getattr(lib, _name)
    _fn.restype = _restype
    _fn.argtypes = _argtypes


_exiting = False


def release(obj: object, free: object) -> None:
    """Frees obj._ptr with free, once. Once the interpreter has begun to exit
    (context.py closes every context at exit, then calls stop_releasing),
    nothing more is freed: a free could run a destroy callback into an
    interpreter that is being torn down. The process is ending anyway."""
    ptr = getattr(obj, "_ptr", None)
    if ptr and not _exiting:
        obj._ptr = None  # type: ignore[attr-defined]
        free(ptr)  # type: ignore[operator]


def stop_releasing() -> None:
    global _exiting
    _exiting = True


def exiting() -> bool:
    """True once nothing more may be freed (see release)."""
    return _exiting


def take_bytes(b: Bytes) -> bytes:
    """Copies an owned af_bytes_t into Python bytes and frees it."""
    try:
        return ctypes.string_at(b.data, b.len) if b.len else b""
    finally:
        lib.af_bytes_free(ctypes.byref(b))


def handles(items: list[Any]) -> "ctypes.Array[ctypes.c_void_p]":
    """A C array of the raw handles of items (objects with a ._ptr)."""
    arr = (c_void_p * max(len(items), 1))()
    for i, item in enumerate(items):
        arr[i] = item._ptr
    return arr


def utf8(s: str, what: str) -> bytes:
    if not isinstance(s, str):
        raise TypeError(f"{what} must be a str, got {type(s).__name__}")
    return s.encode("utf-8", "surrogatepass")


if lib.af_abi_version() != ABI_VERSION:
    raise ImportError(
        f"libaf ABI {lib.af_abi_version()} does not match this binding's ABI {ABI_VERSION}"
    )
