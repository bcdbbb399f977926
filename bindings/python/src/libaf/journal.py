"""Run journals: durable LM-call records that let a run resume.

A journal is a SQLite file that records each LM call a program run
completes (``program(..., journal=path)`` or ``RunOptions(journal=path)``),
committed before the call's result is used. It belongs to one program and
one list of inputs (their hashes are stored when it is created): rerunning
the same program on the same inputs with the same journal answers every
recorded call from it without reaching the provider, and asks the providers
only the rest, so a run killed at any moment resumes where it stopped. Host
tools run again. The file is created 0600, with missing parent directories:
it holds the LM replies in clear.

To forget a journal, delete the file and its ``-wal`` and ``-shm`` siblings.
"""

from __future__ import annotations

import ctypes
import json
import os
from typing import Any

from . import _lib
from ._lib import lib
from .errors import check

__all__ = ["journal_summary", "journal_compact"]


def _path(path: str | os.PathLike[str]) -> bytes:
    p = os.fsencode(path)
    if not p:
        raise ValueError("journal path must not be empty")
    return p


def journal_summary(path: str | os.PathLike[str]) -> dict[str, Any]:
    """What a run journal holds, as a dict::

        {"program": "<hash hex>", "inputs": "<hash hex>", "calls": N,
         "prompt_tokens": N, "completion_tokens": N,
         "models": {"<model>": {"calls": N, "prompt_tokens": N,
                                "completion_tokens": N}}}

    A journal is a SQLite file recording each LM call a run with
    ``journal=path`` completed; rerunning the same program on the same inputs
    with it answers those calls without reaching the provider. It is created
    0600 and holds the LM replies. Read-only: a run may be writing
    the journal meanwhile. Raises libaf.NotFound (no such file),
    libaf.FormatError (not a journal, or corrupt), libaf.IOError. Fields may
    be added."""
    p = _path(path)
    b = _lib.Bytes()
    check(lib.af_journal_summary_json(p, len(p), ctypes.byref(b)))
    summary: dict[str, Any] = json.loads(_lib.take_bytes(b))
    return summary


def journal_compact(path: str | os.PathLike[str]) -> None:
    """Compacts a run journal that no run is writing: folds its write-ahead
    log into the file and frees unused pages. The journal stays valid and
    resumable.

    A journal is a SQLite file recording each LM call a run with
    ``journal=path`` completed; rerunning the same program on the same inputs
    with it answers those calls without reaching the provider. It is created
    0600 and holds the LM replies. Raises as journal_summary, and
    libaf.IOError while a run holds the journal."""
    p = _path(path)
    check(lib.af_journal_compact(p, len(p)))
