"""Errors: one exception class per libaf code, causes chained."""

from __future__ import annotations

import pytest

import libaf
from libaf import errors

CODES = {
    1: libaf.InvalidArgument, 2: libaf.NotFound, 3: libaf.SchemaError, 4: libaf.FormatError,
    5: libaf.VersionError, 6: libaf.ProviderError, 7: libaf.Timeout, 8: libaf.Cancelled,
    9: libaf.CallbackError, 10: libaf.IOError, 11: libaf.OutOfMemory, 12: libaf.InternalError,
}


@pytest.mark.parametrize("code,cls", CODES.items())
def test_each_code_has_its_class(code: int, cls: type) -> None:
    assert errors.error_class(code) is cls
    assert issubclass(cls, libaf.Error) and cls.code == code


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
    assert "python exception #" not in str(e.value)  # the carrier token is internal


def test_libaf_error_inside_a_callback_keeps_its_class(ctx: libaf.Context) -> None:
    def traced(x: libaf.Value) -> libaf.Value:
        return libaf.format("{} {}", x)  # missing positional argument

    with pytest.raises(libaf.Error) as e:
        libaf.trace(traced, "x", ctx=ctx)
    chain = []
    exc: BaseException | None = e.value
    while exc is not None:
        chain.append(type(exc))
        exc = exc.__cause__
    assert libaf.InvalidArgument in chain
