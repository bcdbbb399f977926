"""Python binding overhead on small programs, one line per row.

    LIBAF_LIBRARY=/work/main/build/lib/libaf.so PYTHONPATH=/work/main/bindings/python/src \
        python3 bench/python/small_programs.py [--quick] [--no-c] [--rows program5,to_value,trace]
        [--profile lazy|eager|plain20]   (cProfile of one row instead)

CPU time (time.process_time) over enough iterations; the best of --repeat
runs (default 3) per row. Rows:

  program5/messages/{lazy,eager}  the 5-operation program of the Python issue:
      format a prompt from the input, build [{"role": "system", ...},
      {"role": "user", "content": <the prompt>}], lm_call model "m" (echo
      provider), concat the reply with a suffix, match it against a literal;
      the result read (bool) every iteration. us CPU per iteration.
  program5/c_shape/{lazy,eager}   bench/lazy_bench.cpp's BM_Program5 shape
      (format, lm_call, format, lm_call, concat; one user message each), the
      result read (str) every iteration: the row to put beside the C number.
  to_value/plain20                a 20-leaf JSON-like dict/list tree to a Value
      (us per tree), the same tree every time / a different one each time.
  to_value/messages_with_value    the messages tree holding one Value (the
      prompt) to a Value (us per tree).
  trace/concat_chain_10k          tracing y_i = concat(y_{i-1}, "x"), 10 000
      equations (equations/s; bench/trace_bench.cpp's chain).
  trace/lm_calls_10k              tracing 10 000 lm_call equations (s per trace).
  trace/lm_calls_100k             tracing 100 000 lm_call equations (s per trace;
      the issue's goal: <= 1 s).

The C numbers (--no-c to skip) come from an af_bench binary already built in
build/ or build-bench/ (BM_Program5 and BM_Trace_ConcatChain_C); this script
never builds one.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import subprocess
import sys
import time
from pathlib import Path

import libaf

ROOT = Path(__file__).resolve().parents[2]
SYSTEM = "You are a ticket classifier. Answer with one word."


def best_of(repeat: int, n: int, fn) -> float:
    """Best CPU seconds per call of fn() over repeat runs of n calls."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        for i in range(n):
            fn(i)
        best = min(best, (time.process_time() - t0) / n)
    return best


def echo_context(lazy: bool) -> libaf.Context:
    ctx = libaf.Context(lazy=lazy)
    ctx.route("*", libaf.Provider.echo())
    return ctx


def program5_messages(ctx: libaf.Context):
    def run(i: int) -> bool:
        ticket = f"ticket {i}"
        prompt = libaf.format("Classify: {}", ticket, ctx=ctx)
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}]
        reply = libaf.lm_call(messages, "m", ctx=ctx)
        text = libaf.concat(reply, " (done)", ctx=ctx)
        ok = libaf.match(text, "m|Classify: ticket 0 (done)", ctx=ctx)
        return bool(ok)

    return run


def program5_c_shape(ctx: libaf.Context):
    def run(i: int) -> str:
        t = f"ticket {i}"
        p = libaf.format("Classify: {}", t, ctx=ctx)
        a = libaf.lm_call([{"role": "user", "content": p}], "m", ctx=ctx)
        q = libaf.format("Summarize {} as {}", t, a, ctx=ctx)
        b = libaf.lm_call([{"role": "user", "content": q}], "m", ctx=ctx)
        return str(libaf.concat(a, b, ctx=ctx))

    return run


def check_programs() -> None:
    """Untimed: the programs compute what they claim, lazy and eager alike."""
    for lazy in (True, False):
        ctx = echo_context(lazy)
        assert program5_messages(ctx)(0) is True
        assert program5_messages(ctx)(1) is False
        got = program5_c_shape(ctx)(7)
        assert got == "m|Classify: ticket 7m|Summarize ticket 7 as m|Classify: ticket 7", got
        ctx.close()


PLAIN20 = {
    "id": 12345,
    "title": "Printer on fire",
    "score": 0.75,
    "open": True,
    "owner": None,
    "tags": ["hardware", "urgent", "floor-3"],
    "history": [
        {"at": 1700000000, "by": "ana", "note": "reported"},
        {"at": 1700000300, "by": "bob", "note": "confirmed", "weight": -0.0},
    ],
    "meta": {"source": "email", "lang": "en", "retries": 2, "ratio": 1e-3, "limit": -(2**63)},
}


def count_leaves(obj) -> int:
    if isinstance(obj, dict):
        return sum(count_leaves(x) for x in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(count_leaves(x) for x in obj)
    return 1


def trace_chain(n: int):
    def chain(x):
        y = x
        for _ in range(n):
            y = libaf.concat(y, "x")
        return y

    return chain


def trace_lm_calls(n: int):
    def calls(x):
        out = []
        for _ in range(n):
            out.append(libaf.lm_call([{"role": "user", "content": x}], "m"))
        return libaf.concat(*out[-2:])

    return calls


def c_numbers() -> dict[str, float] | str:
    """us per iteration of BM_Program5 (lazy, traced) and eqn/s of
    BM_Trace_ConcatChain_C from a prebuilt af_bench, or why there are none."""
    for rel in ("build/bin/af_bench", "build-bench/bin/af_bench"):
        exe = ROOT / rel
        if exe.exists() and os.access(exe, os.X_OK):
            break
    else:
        return "no af_bench binary in build/ or build-bench/ (not built by this script)"
    try:
        proc = subprocess.run(
            [str(exe), "--benchmark_filter=BM_Program5|BM_Trace_ConcatChain_C", "--benchmark_format=json",
             "--benchmark_min_time=0.5"],
            capture_output=True, text=True, timeout=300,
        )
        data = json.loads(proc.stdout)
    except Exception as e:  # noqa: BLE001 - a missing number is reported, not fatal
        return f"{exe.relative_to(ROOT)} failed: {e}"
    out: dict[str, float] = {"_exe": str(exe.relative_to(ROOT))}  # type: ignore[dict-item]
    for b in data.get("benchmarks", []):
        name = b["name"]
        unit = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}[b.get("time_unit", "ns")]
        if name.startswith("BM_Program5"):
            out[name] = b["cpu_time"] * unit
        elif name.startswith("BM_Trace_ConcatChain_C"):
            out[name] = b.get("eqn_per_s", b.get("items_per_second", 0.0))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer iterations")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-c", action="store_true", help="skip the C numbers")
    ap.add_argument("--profile", metavar="ROW", help="cProfile one row (lazy, eager, plain20) instead")
    ap.add_argument("--rows", default="all", help="comma-separated row prefixes (program5,to_value,trace)")
    args = ap.parse_args()
    scale = 0.2 if args.quick else 1.0
    n_prog = max(200, int(3000 * scale))
    n_conv = max(2000, int(20000 * scale))
    rep = args.repeat

    check_programs()
    assert count_leaves(PLAIN20) == 20

    if args.profile:
        ctx = echo_context(args.profile != "eager")
        fn = {"lazy": program5_messages(ctx), "eager": program5_messages(ctx),
              "plain20": lambda i: libaf.to_value(PLAIN20)}[args.profile]
        for i in range(200):
            fn(i)
        prof = cProfile.Profile()
        prof.enable()
        for i in range(n_prog):
            fn(i)
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)
        return

    want = args.rows.split(",") if args.rows != "all" else None

    def wanted(name: str) -> bool:
        return want is None or any(name.startswith(w) for w in want)

    print(f"# libaf {libaf.__dict__.get('__version__', '')} python {sys.version.split()[0]}, "
          f"library {os.environ.get('LIBAF_LIBRARY', '(installed)')}, "
          f"value.py {Path(libaf.value.__file__).resolve()}", flush=True)
    c = None if args.no_c or not wanted("program5") and not wanted("trace") else c_numbers()
    cinfo = c if isinstance(c, dict) else {}
    if isinstance(c, str):
        print(f"# C: {c}")
    elif c:
        print(f"# C numbers from {c['_exe']} (same machine, this run)")

    def cnum(key: str, fmt: str) -> str:
        v = cinfo.get(key)
        return f"   C: {fmt.format(v)}" if isinstance(v, float) else ""

    for lazy in (True, False):
        mode = "lazy" if lazy else "eager"
        ctx = echo_context(lazy)
        if wanted("program5"):
            fn = program5_messages(ctx)
            for i in range(100):
                fn(i)
            us = best_of(rep, n_prog, fn) * 1e6
            print(f"program5/messages/{mode:5s}        {us:8.1f} us CPU/iter", flush=True)
            fn = program5_c_shape(ctx)
            for i in range(100):
                fn(i)
            us = best_of(rep, n_prog, fn) * 1e6
            ckey = "BM_Program5/lazy0_traced1_retrace2:0" if lazy else "BM_Program5/lazy0_traced1_retrace2:1"
            clabel = "lazy" if lazy else "traced-once (C has no eager row)"
            note = cnum(ckey, "{:.1f} us CPU/iter (BM_Program5 " + clabel + ")")
            print(f"program5/c_shape/{mode:5s}         {us:8.1f} us CPU/iter{note}", flush=True)
        ctx.close()

    if wanted("to_value"):
        us = best_of(rep, n_conv, lambda i: libaf.to_value(PLAIN20)) * 1e6
        print(f"to_value/plain20                {us:8.2f} us/tree (20 leaves, the same tree every time)", flush=True)
        trees = [dict(PLAIN20, id=i, title=f"Printer {i} on fire") for i in range(n_conv)]
        us = best_of(rep, n_conv, lambda i: libaf.to_value(trees[i])) * 1e6
        print(f"to_value/plain20_distinct       {us:8.2f} us/tree (20 leaves, a different tree each time)", flush=True)
        del trees
        ctx = echo_context(True)
        prompt = libaf.format("Classify: {}", "t", ctx=ctx)
        msgs = lambda i: libaf.to_value(  # noqa: E731
            [{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}])
        us = best_of(rep, n_conv, msgs) * 1e6
        print(f"to_value/messages_with_value    {us:8.2f} us/tree", flush=True)
        del prompt
        ctx.close()

    if wanted("trace"):
        ctx = echo_context(False)
        n = 10_000
        chain = trace_chain(n)
        ir = libaf.trace(chain, "x", ctx=ctx)
        assert ir.eqn_count == n and ir.prims[-1] == "concat"
        del ir
        s = best_of(rep, 1, lambda i: libaf.trace(chain, "x", ctx=ctx))
        note = cnum("BM_Trace_ConcatChain_C/n:10000/literal_per_eqn:1", "{:.3g} eqn/s (literal per eqn)")
        print(f"trace/concat_chain_10k          {n / s:8.3g} eqn/s ({s * 1e3:.1f} ms/trace){note}", flush=True)
        calls = trace_lm_calls(n)
        ir = libaf.trace(calls, "x", ctx=ctx)
        assert ir.prims.count("lm_call") == n, ir.prims[:5]
        del ir
        s = best_of(rep, 1, lambda i: libaf.trace(calls, "x", ctx=ctx))
        print(f"trace/lm_calls_10k              {s:8.3f} s/trace ({n / s:.3g} calls/s)", flush=True)
        calls = trace_lm_calls(10 * n)
        s = best_of(rep, 1, lambda i: libaf.trace(calls, "x", ctx=ctx))
        print(f"trace/lm_calls_100k             {s:8.3f} s/trace ({10 * n / s:.3g} calls/s)", flush=True)
        ctx.close()


if __name__ == "__main__":
    main()
