"""The package itself: versions, exports, and how it finds libaf.so."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from conftest import REPO

import libaf
from libaf import _lib


def test_versions() -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+", libaf.version())
    assert libaf.abi_version() == libaf.ABI_VERSION == 1


def test_every_export_exists() -> None:
    missing = [name for name in libaf.__all__ if not hasattr(libaf, name)]
    assert not missing


def test_a_missing_library_is_a_clear_import_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    env = dict(os.environ, LIBAF_LIBRARY=str(tmp_path / "nope" / "libaf.so"))
    r = subprocess.run([sys.executable, "-c", "import libaf"], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode != 0
    assert "ImportError: cannot load libaf from" in r.stderr and "LIBAF_LIBRARY" in r.stderr


def test_the_generated_declarations_are_applied() -> None:
    # _abi.py is generated from af.h (capi/abi/afabi.py; CI fails when it is
    # stale); importing libaf applies every signature, so a library missing a
    # function fails the import, naming it.
    assert "af_options_json" in _lib.SIGNATURES
    for name, (restype, argtypes) in _lib.SIGNATURES.items():
        fn = getattr(_lib.lib, name)
        assert fn.restype is restype and list(fn.argtypes) == argtypes, name
