"""Errors: one exception class per libaf code, causes chained."""

from __future__ import annotations

import asyncio
import ctypes
import gc
import sys
import threading
import time
import weakref
from typing import Callable

import pytest
from conftest import cause_of

import libaf
from libaf import _lib, errors

CODES = {
    1: libaf.InvalidArgument, 2: libaf.NotFound, 3: libaf.SchemaError, 4: libaf.FormatError,
    5: libaf.VersionError, 6: libaf.ProviderError, 7: libaf.Timeout, 8: libaf.Cancelled,
    9: libaf.CallbackError, 10: libaf.IOError, 11: libaf.OutOfMemory, 12: libaf.InternalError,
}


@pytest.mark.parametrize("code,cls", CODES.items())
def test_each_code_has_its_class(code: int, cls: type) -> None:
    assert errors.error_class(code) is cls
    assert issubclass(cls, libaf.Error) and cls.code == code
    # Its name is libaf's (af_error_code_name: the one table of names).
    assert cls.name == _lib.lib.af_error_code_name(code).decode()


def test_python_bases_make_errors_catchable_idiomatically() -> None:
    assert issubclass(libaf.InvalidArgument, ValueError)
    assert issubclass(libaf.NotFound, LookupError)
    assert issubclass(libaf.Timeout, TimeoutError)
    assert issubclass(libaf.IOError, OSError)


def test_error_carries_code_name_and_message(ctx: libaf.Context) -> None:
    with pytest.raises(libaf.InvalidArgument) as e:
        libaf.format("{", "x", ctx=ctx)
    assert e.value.code == 1 and e.value.name == "INVALID_ARGUMENT"
    assert "brace" in e.value.message or "{" in e.value.message


def test_exception_in_a_callback_is_the_cause(ctx: libaf.Context) -> None:
    class Boom(Exception):
        pass

    def traced(x: libaf.Value) -> libaf.Value:
        raise Boom("from the traced function")

    with pytest.raises(libaf.CallbackError) as e:
        libaf.trace(traced, "x", ctx=ctx)
    assert isinstance(e.value.__cause__, Boom)
    assert "from the traced function" in str(e.value)
    # The exception rides on the C error as its payload: the message is its text alone.
    assert str(e.value).endswith("failed: Boom: from the traced function"), str(e.value)


def test_libaf_error_inside_a_callback_keeps_its_class(ctx: libaf.Context) -> None:
    def traced(x: libaf.Value) -> libaf.Value:
        return libaf.format("{} {}", x)  # missing positional argument

    # The operation's own error escapes the trace as itself, not wrapped in
    # the CallbackError libaf reports for the traced function.
    with pytest.raises(libaf.InvalidArgument) as e:
        libaf.trace(traced, "x", ctx=ctx)
    assert "format" in str(e.value)
    assert e.value.__context__ is None


# -- callback exceptions ride on their C errors (af_error_new_with payloads) ----

SAME = "the same text for every failure"
ROUNDS = 200


class Tagged(Exception):
    """A callback's failure; every one has the message SAME."""


def _messages(exc: BaseException) -> list[str]:
    out = []
    cur: BaseException | None = exc
    while cur is not None:
        out.append(str(cur))
        cur = cur.__cause__
    return out


def _released(*refs: weakref.ref) -> bool:
    """Whether every referent is gone once gc has run; libaf's threads may
    still be letting go of their copies of an error, so this waits a little."""
    for _ in range(200):
        gc.collect()
        if all(r() is None for r in refs):
            return True
        time.sleep(0.01)
    return False


def _register_failing(ctx: libaf.Context, flavour: str, made: dict) -> Callable[[str], None]:
    """A call failing with a new Tagged(SAME), stored in made under its key,
    made through a host tool of the given flavour, a trace or a host provider."""

    def fail(key: object) -> None:
        exc = made[str(key)] = Tagged(SAME)
        raise exc

    if flavour in ("sync", "blocking"):
        ctx.register_function("t.fail", fail, "str", blocking=flavour == "blocking")
        return lambda key: ctx.host_call("t.fail", key)
    if flavour == "async":
        async def fail_later(key: libaf.Value) -> str:
            await asyncio.sleep(0)
            fail(key)
            return ""

        ctx.register_function("t.fail", fail_later, "str")
        return lambda key: ctx.host_call("t.fail", key)
    if flavour == "trace":
        return lambda key: libaf.trace(lambda x: fail(key), "x", ctx=ctx)
    assert flavour == "provider"
    ctx.route("m", libaf.Provider.host(lambda req: fail(req.messages[-1]["content"])))
    return lambda key: libaf.lm_call([{"role": "user", "content": key}], "m", ctx=ctx)


FLAVOURS = ["sync", "blocking", "async", "trace", "provider"]


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_concurrent_failures_with_one_message_get_their_own_exceptions(ctx: libaf.Context, flavour: str) -> None:
    made: dict[str, Tagged] = {}
    call = _register_failing(ctx, flavour, made)
    wanted = libaf.ProviderError if flavour == "provider" else libaf.CallbackError
    wrong: list[str] = []
    tops: set[str] = set()
    lock = threading.Lock()

    def caller(who: int) -> None:
        for i in range(ROUNDS):
            key = f"{who}:{i}"
            try:
                call(key)
            except wanted as e:
                got = cause_of(e, Tagged)
                mine = made.pop(key, None)
                with lock:
                    tops.add(str(e))
                    if mine is None or got is not mine:
                        wrong.append(f"{key}: {got!r} is not {mine!r}")
                    if any("exception #" in m or "[python" in m for m in _messages(e)):
                        wrong.append(f"{key}: a carrier token in {_messages(e)}")
            except BaseException as e:  # noqa: BLE001 - reported below
                with lock:
                    wrong.append(f"{key}: {type(e).__name__}: {e}")
            else:
                with lock:
                    wrong.append(f"{key}: did not fail")

    threads = [threading.Thread(target=caller, args=(who,)) for who in (1, 2)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # the two callers interleave as often as they can
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert not wrong, wrong[:5]
    assert not made
    # Every failure reads the same: nothing in a message tells them apart.
    assert len(tops) == 1 and SAME in next(iter(tops)), tops


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_a_handled_callback_exception_is_released(ctx: libaf.Context, flavour: str) -> None:
    made: dict[str, Tagged] = {}
    call = _register_failing(ctx, flavour, made)
    with pytest.raises(libaf.Error) as e:
        call("k")
    exc = made.pop("k")
    assert cause_of(e.value, Tagged) is exc
    ref = weakref.ref(exc)
    del exc, e
    assert _released(ref)


def test_an_exception_crossing_a_trace_keeps_its_identity(ctx: libaf.Context) -> None:
    made: dict[str, Tagged] = {}

    def inner(x: libaf.Value) -> libaf.Value:
        exc = made["inner"] = Tagged(SAME)
        raise exc

    def outer(x: libaf.Value) -> libaf.Value:
        return libaf.trace(inner, "y", ctx=ctx)(x)  # its CallbackError is not caught here

    with pytest.raises(libaf.CallbackError) as e:
        libaf.trace(outer, "x", ctx=ctx)
    inner_error = e.value.__cause__
    assert isinstance(inner_error, libaf.CallbackError) and inner_error is not e.value
    assert inner_error.__cause__ is made["inner"]
    assert all("[python" not in m for m in _messages(e.value)), _messages(e.value)
    ref = weakref.ref(made.pop("inner"))
    del e, inner_error
    assert _released(ref)


def test_an_exception_crossing_a_host_tool_and_a_host_provider_keeps_its_identity(ctx: libaf.Context) -> None:
    made: dict[str, Tagged] = {}

    def provider(req: libaf.LmRequest) -> str:
        exc = made[req.messages[-1]["content"]] = Tagged(SAME)
        raise exc

    ctx.route("m", libaf.Provider.host(provider))
    asks = libaf.trace(lambda q: libaf.lm_call([{"role": "user", "content": q}], "m"), "q", ctx=ctx).compile(ctx)
    # The tool runs a program whose LM call fails: that ProviderError (the
    # provider's exception its cause) leaves the tool, crossing two callbacks.
    ctx.register_function("t.ask", lambda q: asks(q), "str", blocking=True)
    program = libaf.trace(lambda q: libaf.host_call("t.ask", q), "q", ctx=ctx).compile(ctx)
    for i in range(20):
        with pytest.raises(libaf.CallbackError) as e:
            program(f"q{i}")
        provider_error = cause_of(e.value, libaf.ProviderError)
        assert provider_error is not None
        assert cause_of(provider_error, Tagged) is made[f"q{i}"]
        assert all("[python" not in m for m in _messages(e.value)), _messages(e.value)
    refs = [weakref.ref(made.pop(f"q{i}")) for i in range(20)]
    del e, provider_error
    assert _released(*refs)


def test_an_exception_in_an_item_error_value_is_released_with_it(ctx: libaf.Context) -> None:
    made: dict[str, Tagged] = {}

    def lookup(key: libaf.Value) -> str:
        if str(key).startswith("bad"):
            exc = made[str(key)] = Tagged(SAME)
            raise exc
        return str(key)

    ctx.register_function("t.lookup", lookup, "str")
    p = libaf.trace(lambda k: libaf.host_call("t.lookup", k), "k", ctx=ctx).batch(ctx=ctx).compile(ctx)
    out = p(["a", "bad1"], item_errors=True)
    err = out.to_py()[1]["error"]
    assert err["name"] == "CALLBACK" and SAME in err["message"] and "[python" not in err["message"]
    ref = weakref.ref(made.pop("bad1"))
    del out, p
    assert _released(ref)


def test_another_bindings_payload_is_not_mistaken_for_ours() -> None:
    # Not one of ours, whatever it points at: a non-pointer, or memory
    # that even starts with our magic number.
    look_alike = errors._Payload(errors._MAGIC)
    for payload in (1, ctypes.addressof(look_alike)):
        err = _lib.lib.af_error_new_with(6, b"foreign", 7, payload, _lib.DESTROY_FN())
        with pytest.raises(libaf.ProviderError) as e:
            errors.check(err)
        assert str(e.value) == "foreign" and e.value.__cause__ is None


EXIT_SCRIPT = """
import time, libaf
class Tagged(Exception):
    pass
def lookup(k):
    raise Tagged("kept")
def slow_fail(req):
    time.sleep(0.2)
    raise Tagged("late")
ctx = libaf.Context()
ctx.register_function("t.lookup", lookup, "str")
ctx.route("m", libaf.Provider.host(slow_fail))
p = libaf.trace(lambda k: libaf.host_call("t.lookup", k), "k", ctx=ctx).batch(ctx=ctx).compile(ctx)
kept = p(["a", "b"], item_errors=True)  # error values carrying exceptions, alive at exit
print(kept.to_py()[0]["error"]["name"])
ask = libaf.trace(lambda q: libaf.lm_call([{"role": "user", "content": q}], "m"), "q", ctx=ctx).compile(ctx)
f = ask.start("q")  # fails in flight while the interpreter exits
time.sleep(0.05)
print("exiting")
"""


def test_interpreter_exits_cleanly_with_callback_exceptions_alive() -> None:
    import os
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-c", EXIT_SCRIPT], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["CALLBACK", "exiting"]
    assert "Exception ignored" not in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_hints_name_python_methods_not_c_functions() -> None:
    with libaf.Context() as ctx:
        with pytest.raises(libaf.NotFound) as tool:
            libaf.host_call("nowhere", ctx=ctx)
        assert "Context.register_function" in str(tool.value) and "af_register_function" not in str(tool.value)
        with pytest.raises(libaf.NotFound) as route:
            libaf.lm_call([{"role": "user", "content": "hi"}], "m", ctx=ctx)
        assert "Context.route" in str(route.value) and "af_context_route" not in str(route.value)
