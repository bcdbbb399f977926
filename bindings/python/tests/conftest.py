"""Shared fixtures: a fresh context per test and the repository's paths."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import libaf

#: The libaf repository (tests/conformance lives there); LIBAF_SOURCE_DIR
#: overrides it when the tests run from a copy.
REPO = Path(os.environ.get("LIBAF_SOURCE_DIR", Path(__file__).resolve().parents[3]))
GOLDEN = REPO / "tests" / "conformance" / "graphs"


@pytest.fixture(scope="module")
def lm_server() -> str:
    """tests/lm_server/server.py on an ephemeral 127.0.0.1 port."""
    proc = subprocess.Popen(
        [sys.executable, str(REPO / "tests" / "lm_server" / "server.py"), "--lifetime", "300"],
        stdout=subprocess.PIPE,
        text=True,
    )
    line = proc.stdout.readline() if proc.stdout else ""
    if not line.startswith("PORT "):
        proc.kill()
        pytest.fail(f"the test LM server did not start: {line!r}")
    yield f"http://127.0.0.1:{int(line.split()[1])}/v1"
    proc.terminate()
    proc.wait(10)


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
