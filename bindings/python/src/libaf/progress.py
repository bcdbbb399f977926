"""progress=True: a progress bar for long runs.

A tqdm bar (tqdm.auto: a widget in notebooks) when tqdm is installed, else
one plain line on stderr, rewritten in place on a terminal and printed at
most every few seconds elsewhere (a log file). It counts what a user waits
for: a program's LM calls (with its equations done of all beside them), or
a sharded run's items.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, Optional

__all__ = ["ProgressBar"]

#: How often the plain line is printed when stderr is not a terminal.
_LOG_EVERY_S = 5.0


class ProgressBar:
    """Thread-safe: libaf reports progress from its own threads while the
    waiting thread polls the run's LM calls."""

    def __init__(self, unit: str, total: Optional[int] = None, desc: str = "libaf") -> None:
        self._lock = threading.Lock()
        self._unit, self._total, self._desc = unit, total, desc
        self._n = 0
        self._eqns: tuple[int, int] | None = None  # (done, total) equations of a program run
        self._closed = False
        self._start = time.monotonic()
        self._printed = 0.0
        self._tty = sys.stderr.isatty()
        self._bar: Any = None
        try:
            from tqdm.auto import tqdm  # type: ignore[import-untyped,import-not-found,unused-ignore]  # optional
        except ImportError:
            return
        self._bar = tqdm(total=total, unit=f" {unit}", desc=desc, leave=True, dynamic_ncols=True)

    def count(self, n: int, total: Optional[int] = None) -> None:
        """n units done so far (of total, when known)."""
        with self._lock:
            if self._closed or (n == self._n and total == self._total):
                return
            self._n = n
            if total is not None:
                self._total = total
            self._show()

    def equations(self, done: int, total: int) -> None:
        """A program run's equations done, shown beside the count."""
        with self._lock:
            if self._closed:
                return
            self._eqns = (done, total)
            self._show()

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._bar is not None:
                self._bar.close()
            else:
                self._print(final=True)

    def _show(self) -> None:
        if self._bar is not None:
            if self._total is not None and self._bar.total != self._total:
                self._bar.total = self._total
            self._bar.n = self._n
            if self._eqns is not None:
                self._bar.set_postfix_str(f"equations {self._eqns[0]}/{self._eqns[1]}", refresh=False)
            self._bar.refresh()
        else:
            self._print(final=False)

    def _print(self, final: bool) -> None:
        now = time.monotonic()
        if not final and not self._tty and now - self._printed < _LOG_EVERY_S:
            return
        self._printed = now
        of = f"/{self._total}" if self._total is not None else ""
        eqns = f", equations {self._eqns[0]}/{self._eqns[1]}" if self._eqns is not None else ""
        line = f"{self._desc}: {self._n}{of} {self._unit}{eqns}, {now - self._start:.1f} s"
        if self._tty:
            sys.stderr.write("\r" + line + ("\n" if final else ""))
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()
