"""The SQLite extension from Python's sqlite3 module: loading, the batched
aggregate, sqlite3_interrupt cancelling a run from another thread, routes per
connection, and connections used from several threads at once.

Usage: python3 test_sqlite.py BUILD_DIR  (a Python whose sqlite3 module can
load extensions: Debian's python3 can; a pyenv build needs
PYTHON_CONFIGURE_OPTS=--enable-loadable-sqlite-extensions)."""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import unittest

BUILD = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else "build"
EXT = os.path.join(BUILD, "lib", "libaf_sqlite")
REPLY = "billing-drafter|Draft a short, friendly reply to this billing question: "


OPEN = []


def connect(route=True, latency_ms=0):
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    OPEN.append(conn)
    conn.enable_load_extension(True)
    conn.load_extension(EXT)
    conn.enable_load_extension(False)
    if route:
        conn.execute("SELECT af_route('*', 'echo', ?)", (json.dumps({"latency_ms": latency_ms}),))
    return conn


class SqliteExtension(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.item = os.path.join(cls.dir.name, "item.afg")
        cls.loop = os.path.join(cls.dir.name, "loop.afg")
        subprocess.run([os.path.join(BUILD, "bin", "af"), "demo", "--save", os.path.join(cls.dir.name, "t.afg"),
                        "--save-item", cls.item], check=True, capture_output=True)
        subprocess.run([os.path.join(BUILD, "bin", "af_sql_loop_graph"), cls.loop], check=True)

    @classmethod
    def tearDownClass(cls):
        for conn in OPEN:
            conn.close()
        cls.dir.cleanup()

    def test_af_run_and_bytes(self):
        conn = connect()
        graph = open(self.item, "rb").read()
        by_path = json.loads(conn.execute("SELECT af_run(?, ?)", (self.item, '["hi"]')).fetchone()[0])
        by_bytes = json.loads(conn.execute("SELECT af_run(?, ?)", (graph, '["hi"]')).fetchone()[0])
        self.assertEqual(by_path, by_bytes)
        self.assertEqual(by_path["reply"], REPLY + "hi")

    def test_agg_over_a_table_is_one_concurrent_run(self):
        conn = connect(latency_ms=100)
        conn.execute("CREATE TABLE tickets(id INTEGER PRIMARY KEY, body TEXT)")
        conn.executemany("INSERT INTO tickets(body) VALUES (?)", [(f"ticket {i}",) for i in range(1000)])
        t0 = time.monotonic()
        (out,) = conn.execute("SELECT af_run_agg(?, json_array(body)) FROM tickets ORDER BY id",
                              (self.item,)).fetchone()
        elapsed = time.monotonic() - t0
        items = json.loads(out)
        self.assertEqual([x["reply"] for x in items], [REPLY + f"ticket {i}" for i in range(1000)])
        # 3 calls of 100 ms per row, one after another per row: 300 s run one
        # row at a time, about 0.3 s in one batched run.
        self.assertLess(elapsed, 5.0, f"1000 rows took {elapsed:.2f} s")
        print(f"\n  1000 rows x 3 LM calls of 100 ms: {elapsed * 1000:.0f} ms", file=sys.stderr)

    def interrupt_after(self, conn, sql, args, delay=0.3):
        """Runs sql, calls conn.interrupt() after delay; returns (error, seconds from interrupt to error)."""
        fired = []
        timer = threading.Timer(delay, lambda: (fired.append(time.monotonic()), conn.interrupt()))
        timer.start()
        try:
            conn.execute(sql, args).fetchone()
            return None, None
        except sqlite3.OperationalError as e:
            return e, time.monotonic() - fired[0]
        finally:
            timer.cancel()

    def test_interrupt_cancels_a_run_that_never_ends(self):
        conn = connect()
        err, took = self.interrupt_after(conn, "SELECT af_run(?, '[\"x\"]')", (self.loop,))
        self.assertIsNotNone(err)
        self.assertIn("CANCELLED", str(err))
        self.assertLess(took, 0.1, f"cancelled {took * 1000:.0f} ms after sqlite3_interrupt")
        # The connection goes on.
        self.assertEqual(json.loads(conn.execute("SELECT af_run(?, '[\"a\"]')", (self.item,)).fetchone()[0])["team"],
                         "billing")

    def test_interrupt_cancels_calls_in_flight(self):
        conn = connect(latency_ms=60000)
        err, took = self.interrupt_after(
            conn, "SELECT af_run_agg(?, json_array(value)) FROM json_each('[\"a\",\"b\",\"c\"]')", (self.item,))
        self.assertIsNotNone(err)
        self.assertLess(took, 0.1, f"cancelled {took * 1000:.0f} ms after sqlite3_interrupt")

    def test_routes_are_per_connection(self):
        routed, bare = connect(), connect(route=False)
        self.assertIn("billing", routed.execute("SELECT af_run(?, '[\"a\"]')", (self.item,)).fetchone()[0])
        with self.assertRaisesRegex(sqlite3.OperationalError, "NOT_FOUND: .*triage-classifier"):
            bare.execute("SELECT af_run(?, '[\"a\"]')", (self.item,)).fetchone()

    def test_connections_on_several_threads(self):
        results, errors = {}, []

        def work(k):
            try:
                conn = connect(latency_ms=50)
                rows = json.dumps([[f"t{k}-{i}"] for i in range(50)])
                (out,) = conn.execute("SELECT af_run_agg(?, value) FROM json_each(?)", (self.item, rows)).fetchone()
                results[k] = [x["reply"] for x in json.loads(out)]
                conn.close()
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        self.assertEqual(errors, [])
        for k in range(4):
            self.assertEqual(results[k], [REPLY + f"t{k}-{i}" for i in range(50)])

    def test_close_with_nothing_run_and_reload(self):
        for _ in range(3):
            connect(route=False).close()
        conn = connect()
        conn.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
