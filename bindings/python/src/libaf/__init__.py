"""libaf for Python: trace LM programs into graphs, transform, compile,
save and run them, over libaf's C API.

    import libaf

    @libaf.trace
    def greet(name):
        return libaf.format("Hello, {}!", name)

    print(greet("World").to_py())          # Hello, World!
    print(greet.ir("x"))                   # the traced IR

Values convert to and from plain Python data (None, bool, int, float, str,
list, dict). Errors are subclasses of libaf.Error, one per libaf error code,
with the C cause chain (and any Python exception raised in a callback) as
``__cause__``.
"""

from __future__ import annotations

import ctypes
import json
from typing import Any, Callable

from . import _lib
from ._lib import AF_ABI_VERSION as ABI_VERSION, lib as _c
from .context import Context, current, default_context, is_tracing
from .errors import (
    CallbackError,
    Cancelled,
    Error,
    FormatError,
    InternalError,
    InvalidArgument,
    IOError,
    NotFound,
    OutOfMemory,
    ProviderError,
    SchemaError,
    Timeout,
    VersionError,
    check,
)
from .graph import graph_from_json, graph_to_json, graph_verify
from .ir import Ir
from .journal import journal_compact, journal_summary
from .ops import (
    checkpoint,
    concat,
    depends,
    fold,
    format,
    host_call,
    lm_call,
    lm_schema_call,
    lm_tool_call,
    match,
    named,
    scan,
    stop_gradient,
    switch,
    tag,
    tool_results,
    while_loop,
)
from .program import CancelToken, Future, Program, RunOptions, profile_event
from .provider import LmRequest, Provider
from .schema import Doc, Length, Pattern, Range, as_type, schema_of
from .trace import Traced, trace
from .value import Kind, Value, to_py, to_value
from .walk import Step, Walk

__all__ = [
    "ABI_VERSION", "version", "abi_version", "options",
    "Context", "default_context", "is_tracing",
    "Value", "Kind", "to_value", "to_py",
    "trace", "Traced", "Ir", "Program", "RunOptions", "CancelToken", "Future", "profile_event",
    "journal_summary", "journal_compact",
    "Walk", "Step", "Provider", "LmRequest",
    "format", "concat", "match", "stop_gradient", "depends", "checkpoint", "tag", "named", "fold",
    "switch", "while_loop", "scan", "lm_call", "lm_schema_call", "lm_tool_call", "tool_results", "host_call",
    "register_function", "tool", "route",
    "schema_of", "as_type", "Range", "Length", "Pattern", "Doc",
    "graph_verify", "graph_to_json", "graph_from_json",
    "Error", "InvalidArgument", "NotFound", "SchemaError", "FormatError", "VersionError",
    "ProviderError", "Timeout", "Cancelled", "CallbackError", "IOError", "OutOfMemory",
    "InternalError",
]


def version() -> str:
    """"MAJOR.MINOR.PATCH" of the loaded libaf."""
    version: str = _c.af_version().decode()
    return version


def abi_version() -> int:
    """AF_ABI_VERSION of the loaded libaf."""
    abi: int = _c.af_abi_version()
    return abi


def options() -> dict[str, Any]:
    """Every option libaf reads from JSON options (af_options_json): for
    "af_context_new_with" (Context(**options)), "af_provider_new" (per type:
    Provider.echo, Provider.openai, ...) and "af_provider_set_options", a
    list of {"key", "kind", "default", "min", "max", "doc", "keys"}."""
    b = _lib.Bytes()
    check(_c.af_options_json(ctypes.byref(b)))
    described: dict[str, Any] = json.loads(_lib.take_bytes(b))
    return described


def register_function(
    name: str,
    fn: Callable[..., Any],
    result_kinds: Any,
    ctx: Context | None = None,
    *,
    blocking: bool = False,
    pure: bool = False,
) -> None:
    """Registers a host tool on ctx (default context): see Context.register_function."""
    current(ctx).register_function(name, fn, result_kinds, blocking=blocking, pure=pure)


def tool(
    name: str, result_kinds: Any, ctx: Context | None = None, *, blocking: bool = False, pure: bool = False
) -> Callable[[Callable[..., Any]], Callable[..., Value]]:
    """Decorator registering a host tool on ctx (default context): see Context.tool."""
    return current(ctx).tool(name, result_kinds, blocking=blocking, pure=pure)


def route(model_pattern: str, provider: Provider, ctx: Context | None = None) -> None:
    """Routes models matching model_pattern to provider on ctx (default context)."""
    current(ctx).route(model_pattern, provider)


__version__ = "0.1.0"
