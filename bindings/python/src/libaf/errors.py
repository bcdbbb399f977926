"""libaf errors as a Python exception hierarchy, one class per AF_ERR_* code.

A C error's cause chain becomes Python's ``__cause__`` chain. When a Python
callback (a traced function, a host tool, a host provider) raises, the C
error it returns carries the exception as its payload (af_error_new_with);
when that error comes back out of libaf, wrapped or not, the exception itself
is put at the bottom of the chain, so ``raise ... from`` shows the original
traceback. The error's message is the exception's text only.
"""

from __future__ import annotations

import ctypes
from typing import Any

from . import _lib

__all__ = [
    "Error",
    "InvalidArgument",
    "NotFound",
    "SchemaError",
    "FormatError",
    "VersionError",
    "ProviderError",
    "Timeout",
    "Cancelled",
    "CallbackError",
    "IOError",
    "OutOfMemory",
    "InternalError",
]


class Error(Exception):
    """A libaf error. ``code`` is the AF_ERR_* number, ``name`` its name."""

    code: int = 0
    name: str = "UNKNOWN"

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class InvalidArgument(Error, ValueError):
    """Bad input, structure, kind or template (AF_ERR_INVALID_ARGUMENT)."""

    code, name = 1, "INVALID_ARGUMENT"


class NotFound(Error, LookupError):
    """A switch key, host function, provider or route is missing (AF_ERR_NOT_FOUND)."""

    code, name = 2, "NOT_FOUND"


class SchemaError(Error):
    """Structured output did not validate (AF_ERR_SCHEMA)."""

    code, name = 3, "SCHEMA"


class FormatError(Error):
    """Corrupt or unverifiable graph bytes (AF_ERR_FORMAT)."""

    code, name = 4, "FORMAT"


class VersionError(Error):
    """The graph needs a newer library (AF_ERR_VERSION)."""

    code, name = 5, "VERSION"


class ProviderError(Error):
    """An LM or host call failed after retries (AF_ERR_PROVIDER)."""

    code, name = 6, "PROVIDER"


class Timeout(Error, TimeoutError):
    """The run exceeded its timeout (AF_ERR_TIMEOUT)."""

    code, name = 7, "TIMEOUT"


class Cancelled(Error):
    """The run was cancelled (AF_ERR_CANCELLED)."""

    code, name = 8, "CANCELLED"


class CallbackError(Error):
    """A host callback failed; its error is ``__cause__`` (AF_ERR_CALLBACK)."""

    code, name = 9, "CALLBACK"


class IOError(Error, OSError):  # noqa: A001 - the C API's name for the code
    """A file could not be read or written (AF_ERR_IO)."""

    code, name = 10, "IO"


class OutOfMemory(Error, MemoryError):
    """AF_ERR_OUT_OF_MEMORY."""

    code, name = 11, "OUT_OF_MEMORY"


class InternalError(Error):
    """A bug in libaf (AF_ERR_INTERNAL)."""

    code, name = 12, "INTERNAL"


_BY_CODE: dict[int, type[Error]] = {
    cls.code: cls
    for cls in (
        InvalidArgument,
        NotFound,
        SchemaError,
        FormatError,
        VersionError,
        ProviderError,
        Timeout,
        Cancelled,
        CallbackError,
        IOError,
        OutOfMemory,
        InternalError,
    )
}


def error_class(code: int) -> type[Error]:
    """The exception class of an AF_ERR_* code (Error for an unknown code)."""
    return _BY_CODE.get(code, Error)


# A callback's exception rides on the C error it returns, as that error's
# payload (af_error_new_with): libaf keeps the payload on that node through
# every error wrapped around it, across threads and runs, and runs
# _destroy_payload exactly once when the last error holding it is freed.
#
# The payload is the address of a small C struct (a magic number) that
# Python owns; _PAYLOADS, keyed by that address, keeps the struct
# alive and holds the exception until destroy. A payload is ours only if its
# address is a key of _PAYLOADS (a foreign one, which may not even be a
# pointer, is never dereferenced) and the struct there has our magic.


class _Payload(ctypes.Structure):
    _fields_ = [("magic", ctypes.c_uint64)]


_MAGIC = 0x6C69626166507945  # "libafPyE"
# address -> [the struct, the exception (None once forgotten)]
_PAYLOADS: dict[int, list[Any]] = {}


def _destroy_payload(payload: int | None) -> None:
    # Runs once per payload, on whatever thread frees the last error holding
    # it (ctypes takes the GIL), at interpreter shutdown too: it takes no
    # lock (a dict pop is atomic) and never raises. Dropping the entry
    # releases the exception unless the caller it was raised to still has it.
    try:
        _PAYLOADS.pop(payload or 0, None)
    except BaseException:  # noqa: BLE001 - nothing may unwind into libaf
        pass


_destroy_payload_fn = _lib.DESTROY_FN(_destroy_payload)  # lives as long as the module


def forget_exceptions() -> None:
    """Forgets the exceptions the C errors still alive carry (at exit):
    errors that became values (keep-going, per-item errors) may outlive the
    interpreter, and the exceptions' tracebacks must not outlive the modules
    the frames' objects need to finalize. The payload structs stay until
    their destroy: an error converted later is then a plain libaf error."""
    for entry in list(_PAYLOADS.values()):
        entry[1] = None


def error_from_exception(exc: BaseException, default_code: int) -> int | None:
    """A new owned af_error_t* for a callback to return: it carries exc's
    code if exc is a libaf Error (so a failed operation keeps its code),
    else default_code, its text, and exc itself as its payload, which
    brings exc back in check."""
    code = exc.code if isinstance(exc, Error) and exc.code else default_code
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    msg = text.encode("utf-8", "replace")
    payload = _Payload(_MAGIC)
    addr = ctypes.addressof(payload)
    _PAYLOADS[addr] = [payload, exc]  # before the call: a failing one runs destroy
    err: int | None = _lib.lib.af_error_new_with(code, msg, len(msg), addr, _destroy_payload_fn)
    if not err:  # out of memory (destroy has run): the message alone, if that fits
        err = _lib.lib.af_error_new(code, msg, len(msg))
    return err


def _carried(err: int) -> BaseException | None:
    """The exception err itself carries as our payload, else None."""
    payload = _lib.lib.af_error_payload(err)
    if not payload:
        return None
    entry = _PAYLOADS.get(payload)
    if entry is None or entry[0].magic != _MAGIC:
        return None  # another binding's payload (or one already destroyed)
    exc: BaseException | None = entry[1]
    return exc


# The C functions (and options) libaf's hints name, as a Python caller spells
# them (longest first: a name may start another).
_PYTHON_NAMES = (
    ("AF_FUNCTION_BLOCKING is for options.fn (an async function never blocks a thread)",
     "blocking=True is for plain functions (a coroutine function never blocks a thread)"),
    ("af_register_function_with", "Context.register_function"),
    ("af_register_function_blocking", "Context.register_function(..., blocking=True)"),
    ("af_register_function_async", "Context.register_function (an async def)"),
    ("af_register_function", "Context.register_function"),
    ("af_context_route_fallback", "Context.route_fallback"),
    ("af_context_route", "Context.route"),
    ("af_ir_related_json_with", "Ir.ancestors / Ir.descendants (max_bytes=)"),
    ("af_host_request_fail", "raising from the tool"),
)


def _python_names(message: str) -> str:
    if "af_" not in message and "AF_FUNCTION_" not in message:
        return message
    for c_name, py_name in _PYTHON_NAMES:
        message = message.replace(c_name, py_name)
    return message


def _convert(err: int) -> BaseException:
    """The exception for a borrowed af_error_t*, with its causes chained: a
    node carrying a callback's exception is that exception itself."""
    carried = _carried(err)
    if carried is not None:
        return carried
    message = _python_names((_lib.lib.af_error_message(err) or b"").decode("utf-8", "replace"))
    exc = error_class(_lib.lib.af_error_code(err))(message, _lib.lib.af_error_code(err))
    cause = _lib.lib.af_error_cause(err)
    if cause:
        exc.__cause__ = _convert(cause)
    return exc


def to_exception(err: int) -> BaseException:
    """Converts and frees an owned af_error_t* (the exceptions it carries
    are read first, so freeing it cannot release them)."""
    try:
        return _convert(err)
    finally:
        _lib.lib.af_error_free(err)


def check(err: int | None) -> None:
    """Raises the exception of an af_error_t* result (NULL = success)."""
    if err:
        exc = to_exception(err)
        raise exc from exc.__cause__
