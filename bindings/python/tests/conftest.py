"""Shared fixtures: a fresh context per test and the repository's paths."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import libaf

#: The libaf repository (tests/conformance lives there); LIBAF_SOURCE_DIR
#: overrides it when the tests run from a copy.
REPO = Path(os.environ.get("LIBAF_SOURCE_DIR", Path(__file__).resolve().parents[3]))
GOLDEN = REPO / "tests" / "conformance" / "graphs"


@pytest.fixture
def ctx() -> libaf.Context:
    with libaf.Context() as c:
        yield c


def cause_of(exc: BaseException, kind: type) -> BaseException | None:
    """The first exception of type kind along exc's __cause__ chain."""
    cause: BaseException | None = exc
    while cause is not None and not isinstance(cause, kind):
        cause = cause.__cause__
    return cause


def hello(x: libaf.Value) -> libaf.Value:
    """The program of tests/conformance/graphs/hello.afg and of the C tests'
    hello_fn: concat(format("Hello, {}!", x), "?")."""
    return libaf.format("Hello, {}!", x) + "?"
