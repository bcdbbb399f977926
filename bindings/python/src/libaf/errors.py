"""libaf errors as a Python exception hierarchy, one class per AF_ERR_* code.

A C error's cause chain becomes Python's ``__cause__`` chain. When a Python
callback (a traced function, a host tool, a host provider) raises, the
exception is parked under a token written into the C error it returns; when
that error comes back out of libaf, the parked exception itself is put at the
bottom of the chain, so ``raise ... from`` shows the original traceback.
"""

from __future__ import annotations

import itertools
import re
import threading
from collections import OrderedDict

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


# Parked callback exceptions. Bounded: an error libaf swallows (a keep-going
# run turns it into a value) never comes back to claim its exception.
_PARKED: OrderedDict[int, BaseException] = OrderedDict()
_PARKED_MAX = 256
_PARKED_LOCK = threading.Lock()
_TOKENS = itertools.count(1)
_TOKEN_RE = re.compile(r"^\[python exception #(\d+)\] ")
_TOKEN_ANY = re.compile(r"\[python exception #\d+\] ")


def drop_parked() -> None:
    """Forgets the parked exceptions (at exit): errors that became values
    (keep-going, per-item errors) never claim theirs, and their tracebacks
    must not outlive the modules the frames' objects need to finalize."""
    with _PARKED_LOCK:
        _PARKED.clear()


def error_from_exception(exc: BaseException, default_code: int) -> int:
    """A new owned af_error_t* for a callback to return: it carries exc's
    code if exc is a libaf Error (so a failed operation keeps its code),
    else default_code, and a token that brings exc back in raise_error."""
    token = next(_TOKENS)
    with _PARKED_LOCK:
        _PARKED[token] = exc
        while len(_PARKED) > _PARKED_MAX:
            _PARKED.popitem(last=False)
    code = exc.code if isinstance(exc, Error) and exc.code else default_code
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    msg = f"[python exception #{token}] {text}".encode("utf-8", "replace")
    return _lib.lib.af_error_new(code, msg, len(msg))


def _convert(err: int) -> BaseException:
    """The exception for a borrowed af_error_t*, with its causes chained."""
    message = (_lib.lib.af_error_message(err) or b"").decode("utf-8", "replace")
    m = _TOKEN_RE.match(message)
    if m:
        with _PARKED_LOCK:
            parked = _PARKED.pop(int(m.group(1)), None)
        if parked is not None:
            return parked
    # A wrapping error quotes its cause's message: drop the token there too.
    message = _TOKEN_ANY.sub("", message)
    exc = error_class(_lib.lib.af_error_code(err))(message, _lib.lib.af_error_code(err))
    cause = _lib.lib.af_error_cause(err)
    if cause:
        exc.__cause__ = _convert(cause)
    return exc


def to_exception(err: int) -> BaseException:
    """Converts and frees an owned af_error_t*."""
    try:
        return _convert(err)
    finally:
        _lib.lib.af_error_free(err)


def check(err: int | None) -> None:
    """Raises the exception of an af_error_t* result (NULL = success)."""
    if err:
        exc = to_exception(err)
        raise exc from exc.__cause__
