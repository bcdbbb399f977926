#!/usr/bin/env bash
# The SQLite extension in the real sqlite3 shell: routes, af_run (path and
# BLOB, per-item and batched graphs), af_run_agg over 1 000 rows in one
# batched run, per-item errors, and bad input of every kind (a clear SQL
# error, never a crash or a hang).
# Usage: cli_test.sh BUILD_DIR   (BUILD_DIR/lib/libaf_sqlite.so, BUILD_DIR/bin/af,
#                                 BUILD_DIR/bin/af_sql_loop_graph)
set -uo pipefail
BUILD=$(cd "$1" && pwd)
EXT=$BUILD/lib/libaf_sqlite
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; shift; printf '     %s\n' "$@"; }

# sql SCRIPT: runs the extension-loaded shell on SCRIPT (stdout+stderr);
# a shell that crashes or hangs is reported by its exit status.
sql() { timeout 60 sqlite3 -bail :memory: ".load $EXT" "$@" 2>&1; }
# expect NAME WANT SQL...: the shell's output equals WANT.
expect() {
  local name=$1 want=$2 got
  shift 2
  got=$(sql "$@")
  if [ "$got" = "$want" ]; then ok "$name"; else bad "$name" "want: $want" "got:  $got"; fi
}
# expect_error NAME PATTERN SQL...: the last statement fails with an error
# matching PATTERN (grep -E), and the shell exits normally (status 1).
expect_error() {
  local name=$1 pattern=$2 got rc
  shift 2
  got=$(sql "$@")
  rc=$?
  if [ $rc = 1 ] && echo "$got" | grep -qE "$pattern"; then ok "$name"; else bad "$name" "want an error matching: $pattern (exit 1)" "got (exit $rc): $got"; fi
}

"$BUILD/bin/af" demo --save triage.afg --save-item item.afg >/dev/null 2>&1 || { echo "af demo failed"; exit 1; }
"$BUILD/bin/af_sql_loop_graph" loop.afg || { echo "loop_graph failed"; exit 1; }
ECHO="SELECT af_route('*', 'echo', '{\"latency_ms\": 100}');"
REPLY='billing-drafter|Draft a short, friendly reply to this billing question'
ONE="{\"team\":\"billing\",\"urgency\":1,\"reply\":\"$REPLY: Charged twice\",\"review\":{\"ok\":false,\"note\":\"\"}}"

expect "af_route returns 1" "1" "SELECT af_route('*', 'echo', NULL);"
expect "af_run: a graph file and one input" "1
$ONE" "$ECHO" "SELECT af_run('item.afg', '[\"Charged twice\"]');"
expect "af_run: the .afg bytes as a BLOB" "1
$ONE" "$ECHO" "SELECT af_run(readfile('item.afg'), '[\"Charged twice\"]');"
expect "af_run: a batched graph takes the list of tickets" \
  "1
[\"$REPLY: a\",\"$REPLY: b\"]" "$ECHO" \
  "SELECT json_extract(af_run('triage.afg', '[[\"a\",\"b\"]]'), '\$.reply');"
expect "af_run: options {timeout_ms} that do not expire" "1
billing" "$ECHO" \
  "SELECT json_extract(af_run('item.afg', '[\"x\"]', '{\"timeout_ms\": 60000}'), '\$.team');"
expect "af_run's result is JSON to SQLite's JSON functions" "1
[{\"team\":\"billing\"}]" "SELECT af_route('*', 'echo', NULL);" \
  "SELECT json_group_array(json_object('team', json_extract(af_run('item.afg', json_array('x')), '\$.team')));"

# 1 000 rows, 3 LM calls of 100 ms each per row: one batched run keeps them
# in flight together (one after another they would take 300 s).
rows="CREATE TABLE tickets(id INTEGER PRIMARY KEY, body TEXT);
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 1000)
INSERT INTO tickets(body) SELECT 'ticket ' || i FROM c;"
start=$(date +%s%N)
got=$(sql "$ECHO" "$rows" "CREATE TABLE out AS SELECT af_run_agg('item.afg', json_array(body)) AS r FROM tickets;" \
  "SELECT json_array_length(r), json_extract(r, '\$[0].reply'), json_extract(r, '\$[999].reply') FROM out;")
ms=$((($(date +%s%N) - start) / 1000000))
want="1
1000|$REPLY: ticket 1|$REPLY: ticket 1000"
if [ "$got" = "$want" ] && [ $ms -lt 5000 ]; then
  ok "af_run_agg: 1000 rows x 3 calls of 100 ms in one batched run ($ms ms)"
else
  bad "af_run_agg: 1000 rows in one batched run" "want (under 5000 ms): $want" "got ($ms ms): $got"
fi
expect "af_run_agg: one run per GROUP BY group, in row order" "1
0|[\"$REPLY: t0\",\"$REPLY: t2\"]
1|[\"$REPLY: t1\"]" "$ECHO" \
  "CREATE TABLE t(g INT, body TEXT); INSERT INTO t VALUES (0, 't0'), (1, 't1'), (0, 't2');" \
  "SELECT g, (SELECT json_group_array(json_extract(value, '\$.reply')) FROM json_each(r)) FROM (SELECT g, af_run_agg('item.afg', json_array(body)) AS r FROM t GROUP BY g) ORDER BY g;"
expect "af_run_agg: an empty group is []" "1
[]" "$ECHO" "CREATE TABLE t(body TEXT);" "SELECT af_run_agg('item.afg', json_array(body)) FROM t;"

# Per-item errors: a replay file recorded for two tickets answers those; the
# third ticket's calls are not recorded, so that item alone fails.
sql "SELECT af_route('*', 'replay', '{\"path\": \"rec.jsonl\", \"mode\": \"record\", \"upstream\": {\"type\": \"echo\"}}');" \
  "SELECT af_run_agg('item.afg', json_array(b)) FROM (SELECT 'a' AS b UNION ALL SELECT 'b');" >/dev/null
expect "af_run_agg: an item that fails is its error, the others complete" "1
$REPLY: a|NOT_FOUND|$REPLY: b" \
  "SELECT af_route('*', 'replay', '{\"path\": \"rec.jsonl\"}');" \
  "SELECT json_extract(r, '\$[0].reply'), json_extract(r, '\$[1].error.name'), json_extract(r, '\$[2].reply')
   FROM (SELECT af_run_agg('item.afg', json_array(b)) AS r FROM (SELECT 'a' AS b UNION ALL SELECT 'zzz' UNION ALL SELECT 'b'));"

# Bad input: each a clear error naming libaf's code.
expect_error "a corrupt BLOB is FORMAT" "FORMAT: .*magic" "SELECT af_run(x'00112233', '[\"a\"]');"
expect_error "a truncated graph is FORMAT" "FORMAT" \
  "SELECT af_run(substr(readfile('item.afg'), 1, 100), '[\"a\"]');"
expect_error "a graph that is not a file is IO, never waited on" "IO: .*not a regular file" \
  "SELECT af_run('/dev/null', '[\"a\"]');"
mkfifo fifo.afg
expect_error "a FIFO is IO at once" "IO: .*not a regular file" "SELECT af_run('fifo.afg', '[\"a\"]');"
expect_error "a missing file is IO" "IO: cannot open graph" "SELECT af_run('nope.afg', '[\"a\"]');"
expect_error "a graph of the wrong SQL type" "file path \(TEXT\) or the .afg bytes \(BLOB\)" \
  "SELECT af_run(42, '[\"a\"]');"
expect_error "an input that is not JSON" "INVALID_ARGUMENT: .*JSON" "$ECHO" "SELECT af_run('item.afg', 'nope');"
expect_error "an input that is not an array" "INVALID_ARGUMENT: the input must be a JSON array" \
  "$ECHO" "SELECT af_run('item.afg', '{\"a\": 1}');"
expect_error "an input of the wrong kind" "INVALID_ARGUMENT: input\[0\]: expected str, found int" \
  "$ECHO" "SELECT af_run('item.afg', '[1]');"
expect_error "too many inputs" "INVALID_ARGUMENT" "$ECHO" "SELECT af_run('item.afg', '[\"a\", \"b\"]');"
expect_error "af_run_agg: a row of another shape is named" "INVALID_ARGUMENT: row 2: .*not shaped as row 1" \
  "$ECHO" "SELECT af_run_agg('item.afg', b) FROM (SELECT '[\"a\"]' AS b UNION ALL SELECT '[\"a\", \"b\"]');"
expect_error "af_run_agg: a row's input of the wrong kind" "input\[0\]\[1\]: expected str, found a list.*input i of row k\+1" \
  "$ECHO" "SELECT af_run_agg('item.afg', b) FROM (SELECT '[\"a\"]' AS b UNION ALL SELECT '[[\"x\"]]');"
expect_error "af_run_agg: a row that is not JSON is named" "INVALID_ARGUMENT: row 2: invalid JSON" \
  "$ECHO" "SELECT af_run_agg('item.afg', b) FROM (SELECT '[\"a\"]' AS b UNION ALL SELECT 'nope');"
expect_error "af_run_agg: every row names the same graph" "same graph" \
  "$ECHO" "SELECT af_run_agg(g, '[\"a\"]') FROM (SELECT readfile('item.afg') AS g UNION ALL SELECT readfile('triage.afg'));"
expect_error "af_run_agg: every row names the same graph file" "same graph" \
  "$ECHO" "SELECT af_run_agg(g, '[\"a\"]') FROM (SELECT 'item.afg' AS g UNION ALL SELECT 'triage.afg');"
expect_error "unknown run options are refused" "unknown run option \"timeout\"" \
  "$ECHO" "SELECT af_run('item.afg', '[\"a\"]', '{\"timeout\": 5}');"
expect_error "no route for the model is NOT_FOUND" "NOT_FOUND: .*triage-classifier" \
  "SELECT af_run('item.afg', '[\"a\"]');"
expect_error "an unknown provider type" "INVALID_ARGUMENT: provider spec: unknown type" \
  "SELECT af_route('*', 'carrier-pigeon', NULL);"
expect_error "bad provider options" "INVALID_ARGUMENT" "SELECT af_route('*', 'echo', '{\"latency\": 1}');"
expect_error "a graph that loops forever ends at its timeout_ms" "TIMEOUT" \
  "SELECT af_run('loop.afg', '[\"x\"]', '{\"timeout_ms\": 100}');"
expect_error "not usable from a view of a database file (DIRECTONLY)" "unsafe use of af_run" \
  "CREATE VIEW v AS SELECT af_run('item.afg', '[\"a\"]') AS r;" "SELECT * FROM v;"

echo "$pass passed, $fail failed"
[ $fail = 0 ]
