"""Run journal overhead (docs/PERFORMANCE.md "Run journals").

A batched program of one LM call per item over 10 000 items, against echo
with 10 ms latency and 100 calls in flight: a provider answering 10 000
calls/s. Interleaved rounds of: no journal, a fresh journal (every call
recorded), and a full one (every call answered from it, none asked). Prints
wall time, calls/s and CPU per call for each, the overhead of recording
against no journal, and the journal's size per call. A second table does
the same against echo without latency (the CPU-bound worst case).

    LIBAF_LIBRARY=build-bench/lib/libaf.so PYTHONPATH=bindings/python/src \\
        python3 bench/journal/journal_bench.py [--items N] [--rounds R]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import libaf


def classify(ticket: libaf.Value) -> libaf.Value:
    return libaf.lm_call([{"role": "user", "content": libaf.format("Classify: {}", ticket)}], "m")


def timed(fn) -> tuple[float, float]:
    w, c = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w, time.process_time() - c


def table(title: str, echo: dict, items: list[str], rounds: int, tmp: Path) -> None:
    with libaf.Context() as ctx:
        ctx.route("*", libaf.Provider.echo(**echo))
        program = libaf.trace(classify, "t", ctx=ctx).batch(ctx=ctx).compile(ctx)
        runs: dict[str, list[tuple[float, float]]] = {"no journal": [], "recording": [], "resuming": []}
        size = 0
        for r in range(rounds):
            journal = tmp / f"{title[:4]}-{r}.afj"
            runs["no journal"].append(timed(lambda: program(items, ctx=ctx)))
            runs["recording"].append(timed(lambda: program(items, ctx=ctx, journal=journal)))
            runs["resuming"].append(timed(lambda: program(items, ctx=ctx, journal=journal)))
            libaf.journal_compact(journal)
            size = journal.stat().st_size
            assert libaf.journal_summary(journal)["calls"] == len(items)
    n = len(items)
    print(f"\n{title}: {n} calls per run, {rounds} rounds interleaved (first round | median)")
    print(f"| run | wall s | calls/s | CPU µs/call |")
    print(f"|---|---|---|---|")
    for name, xs in runs.items():
        wall = statistics.median(w for w, _ in xs)
        cpu = statistics.median(c for _, c in xs)
        print(f"| {name} | {xs[0][0]:.3f} \\| {wall:.3f} | {n / wall:,.0f} | {1e6 * cpu / n:.1f} |")
    base = statistics.median(w for w, _ in runs["no journal"])
    rec = statistics.median(w for w, _ in runs["recording"])
    cpu_base = statistics.median(c for _, c in runs["no journal"])
    cpu_rec = statistics.median(c for _, c in runs["recording"])
    print(f"recording / no journal: wall {rec / base:.3f}x, CPU +{1e6 * (cpu_rec - cpu_base) / n:.1f} µs per call; "
          f"journal size {size / n:.0f} bytes per call ({size / 1e6:.2f} MB)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    items = [f"ticket {i}: the printer on floor {i % 7} is out of toner again" for i in range(a.items)]
    with tempfile.TemporaryDirectory() as d:
        table("echo, 10 ms latency, 100 in flight (10 000 calls/s)",
              {"latency_ms": 10, "max_in_flight": 100}, items, a.rounds, Path(d))
        table("echo, no latency (CPU-bound worst case)", {}, items, a.rounds, Path(d))


if __name__ == "__main__":
    main()
