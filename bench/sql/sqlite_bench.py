"""The SQLite extension's costs, from Python's sqlite3 (Debian's python3):

- af_run_agg over N rows of the triage program against echo with a fixed
  latency per call: the first query of a connection (load, batch, compile)
  and the next one (the batched program kept), against the latency floor
  (3 dependent calls per row);
- af_run per row with zero latency: what one row costs through SQL when the
  work is nothing (the graph found by content, one run), beside af_run_agg.

Usage: /usr/bin/python3 bench/sql/sqlite_bench.py BUILD_DIR [ROWS] [LATENCY_MS]"""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time

build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
rows = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
latency = int(sys.argv[3]) if len(sys.argv) > 3 else 100

tmp = tempfile.mkdtemp()
item = os.path.join(tmp, "item.afg")
subprocess.run([os.path.join(build, "bin", "af"), "demo", "--save", os.path.join(tmp, "b.afg"), "--save-item", item],
               check=True, capture_output=True)


def connect(latency_ms):
    conn = sqlite3.connect(":memory:")
    conn.enable_load_extension(True)
    conn.load_extension(os.path.join(build, "lib", "libaf_sqlite"))
    conn.execute("SELECT af_route('*', 'echo', ?)", (json.dumps({"latency_ms": latency_ms}),))
    conn.execute("CREATE TABLE tickets(id INTEGER PRIMARY KEY, body TEXT)")
    conn.executemany("INSERT INTO tickets(body) VALUES (?)", [(f"ticket {i}",) for i in range(rows)])
    return conn


def timed(conn, sql, *args):
    t0 = time.perf_counter()
    conn.execute(sql, args).fetchall()
    return (time.perf_counter() - t0) * 1000


AGG = "SELECT af_run_agg(?, json_array(body)) FROM tickets"
EACH = "SELECT af_run(?, json_array(body)) FROM tickets"
conn = connect(latency)
first = timed(conn, AGG, item)
steady = min(timed(conn, AGG, item) for _ in range(3))
print(f"af_run_agg, {rows} rows x 3 calls of {latency} ms: first query {first:.0f} ms, "
      f"next {steady:.0f} ms (floor {3 * latency} ms)")
conn = connect(0)
timed(conn, AGG, item)
agg0 = min(timed(conn, AGG, item) for _ in range(3))
each0 = min(timed(conn, EACH, item) for _ in range(3))
print(f"zero latency, {rows} rows: af_run_agg {agg0:.1f} ms ({agg0 * 1000 / rows:.1f} us/row), "
      f"af_run per row {each0:.1f} ms ({each0 * 1000 / rows:.1f} us/row)")
