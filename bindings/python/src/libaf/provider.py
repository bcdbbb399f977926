"""LM providers: where lm_call requests go."""

from __future__ import annotations

import asyncio
import concurrent.futures
import ctypes
import inspect
import json
import threading
from typing import Any, Awaitable, Callable, Union

from . import _callbacks, _lib
from ._handles import Guarded
from ._lib import lib
from ._loops import call_soon
from .errors import check, error_from_exception

__all__ = ["Provider", "LmRequest"]

_PROVIDER = 6  # AF_ERR_PROVIDER


class LmRequest(Guarded):
    """One LM request, as a host provider sees it. Thread-safe: stream()
    from another thread racing the answer completes or raises RuntimeError
    ("already answered"); the answer waits for no stream() in progress, it
    is delivered when the last one returns."""

    def __init__(self, ptr: int, provider: str = "a host provider") -> None:
        # The calls using the request now, and the answer (which frees it)
        # left for the last of them (_handles.Guarded).
        self._uses: list[None] = []
        self._orphan: list[Callable[[], None]] = []
        self._ptr: int | None = ptr
        self._provider = provider  # for messages: which Python function answers
        b = _lib.Bytes()
        check(lib.af_lm_request_json(ptr, ctypes.byref(b)))
        #: {"model", "messages", ["schema", "json_schema"], ["tools"], ["tags"]}
        self.json: dict[str, Any] = json.loads(_lib.take_bytes(b))

    @property
    def model(self) -> str:
        model: str = self.json["model"]
        return model

    @property
    def messages(self) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = self.json["messages"]
        return messages

    @property
    def schema(self) -> Any:
        """The schema node tree of a structured-output call, else None."""
        return self.json.get("schema")

    @property
    def tools(self) -> list[dict[str, Any]] | None:
        """The tools a tool-calling call (lm_tool_call) offers, else None.
        Answer such a request with {"content": str | None, "tool_calls":
        [{"id", "name", "arguments"}]} (as data or as its JSON text)."""
        return self.json.get("tools")

    @property
    def streaming(self) -> bool:
        """True when the run wants the reply in pieces (stream())."""
        return bool(self.json.get("stream"))

    def stream(self, text: str) -> None:
        """Sends a piece of the reply before the provider returns it (ignored
        unless streaming)."""
        data = text.encode("utf-8")
        check(self._using(lib.af_lm_request_stream, data, len(data)))

    def restart_stream(self) -> None:
        """What was streamed so far does not count: the reply starts over."""
        check(self._using(lib.af_lm_request_stream, None, 0))

    @property
    def cancelled(self) -> bool:
        """True once the run no longer wants the answer (False once answered)."""
        if not self._ptr:
            return False
        try:
            return bool(self._using(lib.af_lm_request_cancelled))
        except RuntimeError:  # answered meanwhile
            return False

    def _closed_error(self) -> BaseException:
        return RuntimeError("the LM request was already answered")

    def _finish(self, reply: Any = None, exc: BaseException | None = None) -> None:
        """Answers the request (consuming the handle) once no call using it
        is in progress; a second answer is ignored."""
        if not self._ptr:
            return
        if exc is None and not isinstance(reply, str):
            kind = "lm_call" if self.schema is None else "lm_schema_call"
            call = f"{'lm_tool_call' if self.tools is not None else kind} to model {self.model!r}"
            if self.schema is None and self.tools is None:
                exc = TypeError(f"host provider {self._provider} answered an {call} with "
                                f"{type(reply).__name__} {reply!r:.80}: the reply to an lm_call must be a str")
            else:
                try:
                    reply = json.dumps(reply, allow_nan=False, ensure_ascii=False)
                except (TypeError, ValueError) as e:
                    exc = TypeError(f"host provider {self._provider} answered an {call} with data JSON "
                                    f"cannot hold: {e}")
        if exc is not None:
            error = exc

            def fail(ptr: int) -> None:
                lib.af_error_free(lib.af_lm_request_fail(ptr, error_from_exception(error, _PROVIDER)))

            self._close(fail)
            return
        data = reply.encode("utf-8", "surrogatepass")

        def complete(ptr: int) -> None:
            err = lib.af_lm_request_complete(ptr, data, len(data))
            if err:  # invalid UTF-8: the request has already failed with it
                lib.af_error_free(err)

        self._close(complete)

    def __repr__(self) -> str:
        return f"<libaf.LmRequest model={self.json.get('model')!r}>"


HostFn = Callable[[LmRequest], Union[str, Any, Awaitable[Any]]]

_pool: concurrent.futures.ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _worker_pool() -> concurrent.futures.ThreadPoolExecutor:
    """Threads for synchronous host providers: libaf's submit callback must
    return quickly, so a blocking Python provider runs here instead."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = concurrent.futures.ThreadPoolExecutor(max_workers=32, thread_name_prefix="libaf-provider")
        return _pool


# The tasks of coroutine providers in flight: a loop keeps only weak
# references to its tasks.
_tasks: "set[asyncio.Task[None]]" = set()


def _keep(task: "asyncio.Task[None]") -> None:
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)


def _host_submit(fn: HostFn) -> Callable[[int], None]:
    is_coro = inspect.iscoroutinefunction(fn)
    name = getattr(fn, "__qualname__", None) or repr(fn)

    def answer(req: LmRequest) -> None:
        try:
            reply = fn(req)
        except BaseException as exc:  # noqa: BLE001
            req._finish(exc=exc)
            return
        req._finish(reply)

    async def answer_async(req: LmRequest) -> None:
        try:
            reply = await fn(req)  # type: ignore[misc]
        except BaseException as exc:  # noqa: BLE001 - CancelledError included
            req._finish(exc=exc)
            return
        req._finish(reply)

    def submit(ptr: int) -> None:
        try:
            req = LmRequest(ptr, name)
        except BaseException as exc:  # noqa: BLE001
            lib.af_error_free(lib.af_lm_request_fail(ptr, error_from_exception(exc, _PROVIDER)))
            return
        if is_coro:
            call_soon(lambda: _keep(asyncio.get_running_loop().create_task(answer_async(req))))
        else:
            _worker_pool().submit(answer, req)

    return submit


class Provider:
    """An LM provider. Reference counted in libaf: it may be routed in several
    contexts, and its max-in-flight limit is shared by all of them."""

    __slots__ = ("_ptr",)
    _ptr: int | None

    def __init__(self) -> None:
        raise TypeError("use Provider.echo(), .openai(), .replay() or .host(fn)")

    @classmethod
    def _make(cls, ctor: Any, options: dict[str, Any] | None, kwargs: dict[str, Any]) -> "Provider":
        if options is not None and kwargs:
            raise TypeError("pass options as a dict or as keywords, not both")
        opts = options if options is not None else kwargs
        if not isinstance(opts, dict):
            raise TypeError(f"provider options must be a dict, got {type(opts).__name__}")
        text = json.dumps(opts).encode("utf-8")
        out = ctypes.c_void_p()
        check(ctor(text, len(text), ctypes.byref(out)))
        p = object.__new__(cls)
        p._ptr = out.value
        return p

    @classmethod
    def from_spec(cls, spec: dict[str, Any] | None = None, **kwargs: Any) -> "Provider":
        """Any built-in type from a spec naming it: ``{"type": "anthropic",
        ...options}`` (echo, openai, anthropic, ollama or replay), so a whole
        provider can come from a config file. ``Provider.from_spec(type=
        "ollama", base_url=...)`` is the same."""
        return cls._make(lib.af_provider_new, spec, kwargs)

    @classmethod
    def echo(cls, options: dict[str, Any] | None = None, **kwargs: Any) -> "Provider":
        """Deterministic and offline: answers "<model>|<last message>".
        Options: latency_ms, or latency_min_ms + latency_max_ms + seed;
        max_in_flight, name."""
        return cls._make(lib.af_provider_echo_new, options, kwargs)

    @classmethod
    def openai(cls, options: dict[str, Any] | None = None, **kwargs: Any) -> "Provider":
        """Any OpenAI-compatible endpoint. Options: base_url (required),
        api_key_env (the variable holding the key), max_in_flight,
        timeout_ms, max_retries, backoff_ms, backoff_max_ms, extra, name."""
        return cls._make(lib.af_provider_openai_new, options, kwargs)

    @classmethod
    def replay(cls, options: dict[str, Any] | None = None, **kwargs: Any) -> "Provider":
        """Answers from a recorded JSON Lines file. Options: path (required),
        mode ("replay" or "record"), upstream (a provider spec for record)."""
        return cls._make(lib.af_provider_replay_new, options, kwargs)

    @classmethod
    def host(cls, fn: HostFn) -> "Provider":
        """Python answers: fn(request: LmRequest) returns the reply text (or,
        for a schema or tool call, JSON data), or raises to fail the request (the
        exception becomes the cause of the run's error). A plain function
        runs on a worker thread; a coroutine function on libaf's event loop."""
        if not callable(fn):
            raise TypeError(f"Provider.host() needs a callable, got {type(fn).__name__}")
        h = _callbacks.new_handle(_host_submit(fn))
        out = ctypes.c_void_p()
        check(lib.af_provider_host_new(_callbacks.submit_trampoline, h, _callbacks.destroy_trampoline,
                                       ctypes.byref(out)))
        p = object.__new__(cls)
        p._ptr = out.value
        return p

    @property
    def _handle(self) -> int | None:
        return self._ptr

    def __del__(self) -> None:
        _lib.release(self, lib.af_provider_free)

    def set_max_in_flight(self, n: int) -> None:
        """Changes the limit (0 = unlimited)."""
        if not isinstance(n, int) or not 0 <= n < 2**32:
            raise ValueError(f"max_in_flight must be an int in [0, 2**32), got {n!r}")
        check(lib.af_provider_set_max_in_flight(self._ptr, n))

    def set_options(self, options: dict[str, Any] | None = None, **kwargs: Any) -> None:
        """Changes the options every provider takes: max_in_flight,
        requests_per_minute, tokens_per_minute, schema_retries (keys not
        given keep their values)."""
        if options is not None and kwargs:
            raise TypeError("pass options as a dict or as keywords, not both")
        text = json.dumps(options if options is not None else kwargs).encode("utf-8")
        check(lib.af_provider_set_options(self._ptr, text, len(text)))

    def stats(self) -> dict[str, Any]:
        """{"submitted", "started", "finished", "in_flight", "queued",
        "peak_in_flight", "max_in_flight", "prompt_tokens",
        "completion_tokens", "requests_per_minute", "tokens_per_minute",
        "rate_waits", "schema_retries"}."""
        b = _lib.Bytes()
        check(lib.af_provider_stats(self._ptr, ctypes.byref(b)))
        stats: dict[str, Any] = json.loads(_lib.take_bytes(b))
        return stats

    def __repr__(self) -> str:
        return "<libaf.Provider>"
