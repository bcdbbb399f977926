#!/usr/bin/env bash
# The PostgreSQL extension in a real PostgreSQL server of its own: initdb into
# a temporary directory (as an unprivileged user when run as root), a free
# port on 127.0.0.1, CREATE EXTENSION af, the SQLite suite's cases, then
# statement_timeout and pg_cancel_backend cancelling runs; the server is
# stopped by its PID at the end.
#
# The extension is installed the way `make install` installs it, into a
# staging tree (DESTDIR) beside a copy of the server binary, which finds its
# share and lib directories relative to itself: nothing outside the
# temporary directory is written.
# Usage: pg_test.sh BUILD_DIR   (BUILD_DIR/postgres holds the PGXS build,
#                                BUILD_DIR/bin/af and af_sql_loop_graph)
set -uo pipefail
BUILD=$(cd "$1" && pwd)
SRC=$(cd "$(dirname "$0")/.." && pwd)
PG_CONFIG=${PG_CONFIG:-pg_config}
BINDIR=$($PG_CONFIG --bindir)
WORK=$(mktemp -d)
chmod 755 "$WORK"
PGPID=
cleanup() {
  if [ -n "$PGPID" ] && kill -0 "$PGPID" 2>/dev/null; then
    kill -INT "$PGPID"
    for _ in $(seq 100); do kill -0 "$PGPID" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; shift; printf '     %s\n' "$@"; }

# --- The extension, installed into the staging tree beside a server copy.
STAGE=$WORK/stage
PKG_CONFIG_PATH="$BUILD" make -s -C "$BUILD/postgres" -f "$SRC/Makefile" install DESTDIR="$STAGE" \
  PG_CONFIG="$PG_CONFIG" >"$WORK/install.log" 2>&1 || { cat "$WORK/install.log"; echo "0 passed, 1 failed"; exit 1; }
mkdir -p "$STAGE$BINDIR"
cp "$BINDIR/postgres" "$STAGE$BINDIR/postgres"
for dir in "$($PG_CONFIG --pkglibdir)" "$($PG_CONFIG --sharedir)" "$($PG_CONFIG --sharedir)/extension"; do
  mkdir -p "$STAGE$dir"
  for f in "$dir"/*; do [ -e "$STAGE$f" ] || ln -s "$f" "$STAGE$f"; done
done

# --- A server of its own. PostgreSQL refuses to run as root.
AS=()
if [ "$(id -u)" = 0 ]; then AS=(runuser -u nobody --); fi
DATA=$WORK/data
mkdir -p "$DATA"
[ ${#AS[@]} = 0 ] || chown nobody "$DATA"
"${AS[@]}" "$BINDIR/initdb" -D "$DATA" -U postgres --auth=trust -E UTF8 --no-locale >"$WORK/initdb.log" 2>&1 \
  || { cat "$WORK/initdb.log"; echo "0 passed, 1 failed"; exit 1; }
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"${AS[@]}" "$STAGE$BINDIR/postgres" -D "$DATA" -p "$PORT" -c listen_addresses=127.0.0.1 \
  -c unix_socket_directories="$DATA" >"$WORK/server.log" 2>&1 &
PGPID=$!
for _ in $(seq 100); do
  "$BINDIR/pg_isready" -q -h 127.0.0.1 -p "$PORT" && break
  sleep 0.1
done
"$BINDIR/pg_isready" -q -h 127.0.0.1 -p "$PORT" || { cat "$WORK/server.log"; echo "0 passed, 1 failed"; exit 1; }

cd "$WORK"
"$BUILD/bin/af" demo --save triage.afg --save-item item.afg >/dev/null 2>&1 || { echo "af demo failed"; exit 1; }
"$BUILD/bin/af_sql_loop_graph" loop.afg || exit 1
chmod 644 ./*.afg

# psql on the test database; extra arguments go first (-c ... in order).
q() { timeout 120 psql -X -q -A -t -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PORT" -U "${PGUSER_AS:-postgres}" -d aftest "$@" 2>&1; }
psql -X -q -h 127.0.0.1 -p "$PORT" -U postgres -d postgres -c "CREATE DATABASE aftest" >/dev/null
# expect NAME WANT SQL...: the output of the statements equals WANT.
expect() {
  local name=$1 want=$2 got args=()
  shift 2
  for s in "$@"; do args+=(-c "$s"); done
  got=$(q "${args[@]}")
  if [ "$got" = "$want" ]; then ok "$name"; else bad "$name" "want: $want" "got:  $got"; fi
}
# expect_error NAME PATTERN SQL...: the last statement fails with an ERROR
# matching PATTERN; the backend did not crash.
expect_error() {
  local name=$1 pattern=$2 got args=()
  shift 2
  for s in "$@"; do args+=(-c "$s"); done
  got=$(q "${args[@]}")
  if echo "$got" | grep -qE "ERROR: .*$pattern"; then ok "$name"; else bad "$name" "want an ERROR matching: $pattern" "got: $got"; fi
}

ECHO="SET af.routes = '{\"*\": {\"type\": \"echo\", \"options\": {\"latency_ms\": 100}}}'"
ITEM="pg_read_binary_file('$WORK/item.afg')"
REPLY='billing-drafter|Draft a short, friendly reply to this billing question'

expect "CREATE EXTENSION af" "" "CREATE EXTENSION af"
expect "af_run: the .afg bytes (bytea) and one input" "$REPLY: Charged twice|billing" "$ECHO" \
  "SELECT r->>'reply', r->>'team' FROM (SELECT af_run($ITEM, '[\"Charged twice\"]') AS r) s"
expect "af_run: a graph file of the server (superuser)" "billing" "$ECHO" \
  "SELECT af_run('$WORK/item.afg', '[\"x\"]')->>'team'"
expect "af_run: a batched graph takes the list of tickets" "[\"$REPLY: a\", \"$REPLY: b\"]" "$ECHO" \
  "SELECT af_run('$WORK/triage.afg', '[[\"a\", \"b\"]]')->'reply'"
expect "af_run: NULL graph or input gives NULL" "t" "SELECT af_run(NULL::bytea, '[\"x\"]') IS NULL"
expect "af_run: options {timeout_ms} that do not expire" "billing" "$ECHO" \
  "SELECT af_run($ITEM, '[\"x\"]', '{\"timeout_ms\": 60000}')->>'team'"

q -c "CREATE TABLE graphs(name text PRIMARY KEY, afg bytea)" \
  -c "INSERT INTO graphs VALUES ('triage', $ITEM)" \
  -c "CREATE TABLE tickets(id serial PRIMARY KEY, body text)" \
  -c "INSERT INTO tickets(body) SELECT 'ticket ' || i FROM generate_series(1, 1000) i" >/dev/null
start=$(date +%s%N)
got=$(q -c "$ECHO" -c "SELECT jsonb_array_length(r), r->0->>'reply', r->999->>'reply' FROM (
  SELECT af_run_agg(g.afg, jsonb_build_array(t.body) ORDER BY t.id) AS r
  FROM tickets t, graphs g WHERE g.name = 'triage') s")
ms=$((($(date +%s%N) - start) / 1000000))
want="1000|$REPLY: ticket 1|$REPLY: ticket 1000"
if [ "$got" = "$want" ] && [ $ms -lt 5000 ]; then
  ok "af_run_agg: 1000 rows x 3 calls of 100 ms in one batched run ($ms ms)"
else
  bad "af_run_agg: 1000 rows in one batched run" "want (under 5000 ms): $want" "got ($ms ms): $got"
fi
expect "af_run_agg: docs/PLUGIN_HOSTS.md's worked example (one row per ticket)" "1|billing|$REPLY: ticket 1
1000|billing|$REPLY: ticket 1000" "$ECHO" "WITH run AS (
  SELECT af_run_agg(g.afg, jsonb_build_array(t.body) ORDER BY t.id) AS r,
         array_agg(t.id ORDER BY t.id) AS ids
  FROM tickets t, graphs g WHERE g.name = 'triage')
SELECT run.ids[a.n] AS id, a.item->>'team' AS team, a.item->>'reply' AS reply
FROM run, jsonb_array_elements(run.r) WITH ORDINALITY AS a(item, n) WHERE a.n IN (1, 1000) ORDER BY id"
expect "af_run_agg: one run per GROUP BY group" "0|2
1|1" "$ECHO" \
  "SELECT g, jsonb_array_length(af_run_agg($ITEM, jsonb_build_array(b))) FROM (VALUES (0, 'a'), (1, 'b'), (0, 'c')) v(g, b) GROUP BY g ORDER BY g"
expect "af_run_agg: an empty group is []" "[]" "$ECHO" \
  "SELECT af_run_agg($ITEM, jsonb_build_array(body)) FROM tickets WHERE false"
: >"$WORK/rec.jsonl"
chmod 666 "$WORK/rec.jsonl" # the server (another user) records into it
q -c "SET af.routes = '{\"*\": {\"type\": \"replay\", \"options\": {\"path\": \"$WORK/rec.jsonl\", \"mode\": \"record\", \"upstream\": {\"type\": \"echo\"}}}}'" \
  -c "SELECT af_run_agg($ITEM, jsonb_build_array(b)) FROM (VALUES ('a'), ('b')) v(b)" >/dev/null
expect "af_run_agg: an item that fails is its error, the others complete" "$REPLY: a|NOT_FOUND|$REPLY: b" \
  "SET af.routes = '{\"*\": {\"type\": \"replay\", \"options\": {\"path\": \"$WORK/rec.jsonl\"}}}'" \
  "SELECT r->0->>'reply', r->1->'error'->>'name', r->2->>'reply' FROM (SELECT af_run_agg($ITEM, jsonb_build_array(b) ORDER BY n) AS r FROM (VALUES (1, 'a'), (2, 'zzz'), (3, 'b')) v(n, b)) s"
q -c "ALTER DATABASE aftest SET af.routes = '{\"*\": {\"type\": \"echo\"}}'" >/dev/null
expect "af.routes set per database" "billing" "SELECT af_run($ITEM, '[\"x\"]')->>'team'"

mkfifo "$WORK/fifo.afg"
chmod 666 "$WORK/fifo.afg"
expect_error "a corrupt bytea is FORMAT" "FORMAT: .*magic" "SELECT af_run('\\x00112233'::bytea, '[\"a\"]')"
expect_error "a truncated graph is FORMAT" "FORMAT" "SELECT af_run(substring($ITEM from 1 for 100), '[\"a\"]')"
expect_error "a FIFO is IO at once" "IO: .*not a regular file" "SELECT af_run('$WORK/fifo.afg', '[\"a\"]')"
expect_error "a missing file is IO" "IO: cannot open graph" "SELECT af_run('$WORK/nope.afg', '[\"a\"]')"
expect_error "an input that is not an array" "INVALID_ARGUMENT: the input must be a JSON array" \
  "SELECT af_run($ITEM, '{\"a\": 1}')"
expect_error "an input of the wrong kind" "INVALID_ARGUMENT: input\[0\]: expected str, found int" \
  "SELECT af_run($ITEM, '[1]')"
expect_error "af_run_agg: a row of another shape is named" "INVALID_ARGUMENT: row 2: .*not shaped as row 1" \
  "SELECT af_run_agg($ITEM, b ORDER BY n) FROM (VALUES (1, '[\"a\"]'::jsonb), (2, '[\"a\", \"b\"]')) v(n, b)"
expect_error "af_run_agg: a NULL input is named" "af_run_agg: row 2: the graph and the input must not be NULL" \
  "SELECT af_run_agg($ITEM, b ORDER BY n) FROM (VALUES (1, '[\"a\"]'::jsonb), (2, NULL)) v(n, b)"
expect_error "af_run_agg: every row names the same graph" "same graph" \
  "SELECT af_run_agg(g, '[\"a\"]') FROM (VALUES ($ITEM), (pg_read_binary_file('$WORK/triage.afg'))) v(g)"
expect_error "unknown run options are refused" "unknown run option \"timeout\"" \
  "SELECT af_run($ITEM, '[\"a\"]', '{\"timeout\": 5}')"
expect_error "no route for the model is NOT_FOUND" "NOT_FOUND: .*triage-classifier" \
  "SET af.routes = ''" "SELECT af_run($ITEM, '[\"a\"]')"
expect_error "af.routes of an unknown provider type" "af.routes: INVALID_ARGUMENT: provider spec: unknown type" \
  "SET af.routes = '{\"*\": {\"type\": \"carrier-pigeon\"}}'" "SELECT af_run($ITEM, '[\"a\"]')"
expect_error "af.routes that is not JSON" "af.routes: INVALID_ARGUMENT" \
  "SET af.routes = 'nope'" "SELECT af_run($ITEM, '[\"a\"]')"
expect_error "a graph that loops forever ends at its timeout_ms" "TIMEOUT" \
  "SELECT af_run('$WORK/loop.afg', '[\"x\"]', '{\"timeout_ms\": 100}')"
q -c "CREATE ROLE plain LOGIN" -c "GRANT SELECT ON graphs TO plain" >/dev/null
PGUSER_AS=plain expect_error "a plain user cannot set af.routes" "permission denied to set parameter \"af.routes\"" \
  "SELECT af_run(afg, '[\"a\"]') FROM graphs" "SET af.routes = '{}'"
PGUSER_AS=plain expect_error "a plain user cannot read server files" "needs the privileges of pg_read_server_files" \
  "SELECT af_run('$WORK/item.afg', '[\"a\"]')"
PGUSER_AS=plain expect "a plain user runs graphs from a table" "billing" \
  "SELECT af_run(afg, '[\"a\"]')->>'team' FROM graphs"

# --- Cancel and statement_timeout: the run ends within 100 ms of either.
# The elapsed time is read inside the server (clock_timestamp), from a DO
# block that traps the cancel by name.
CANCEL_MS="DO \$\$ DECLARE t0 timestamptz := clock_timestamp(); BEGIN
  PERFORM af_run('$WORK/loop.afg', '[\"x\"]');
EXCEPTION WHEN query_canceled THEN
  RAISE NOTICE 'cancelled % % ms', SQLERRM, round(extract(epoch FROM clock_timestamp() - t0) * 1000);
END \$\$"
got=$(q -c "SET statement_timeout = '300ms'" -c "$CANCEL_MS")
ms=$(echo "$got" | sed -nE 's/.* ([0-9]+) ms$/\1/p')
if echo "$got" | grep -q "statement timeout" && [ -n "$ms" ] && [ "$ms" -lt 400 ]; then
  ok "statement_timeout = 300ms cancels a run that never ends (${ms} ms)"
else
  bad "statement_timeout cancels the run within 100 ms" "got: $got"
fi
# pg_cancel_backend from another session, on runs spinning and on LM calls in flight.
for what in "a run that never ends|af_run('$WORK/loop.afg', '[\"x\"]')" \
            "LM calls in flight|af_run_agg($ITEM, jsonb_build_array(body)) FROM tickets"; do
  name=${what%%|*}
  call=${what#*|}
  q -c "SET af.routes = '{\"*\": {\"type\": \"echo\", \"options\": {\"latency_ms\": 60000}}}'" -c "SET application_name = 'victim'" \
    -c "DO \$\$ DECLARE t0 timestamptz := clock_timestamp(); BEGIN PERFORM $call;
        EXCEPTION WHEN query_canceled THEN RAISE NOTICE 'cancelled at %', extract(epoch FROM clock_timestamp()); END \$\$" \
    >"$WORK/victim.out" &
  victim=$!
  sleep 1
  # OFFSET 0: the filter runs first (the canceller must not cancel itself).
  sent=$(q -c "SELECT extract(epoch FROM clock_timestamp()), pg_cancel_backend(pid)
    FROM (SELECT pid FROM pg_stat_activity WHERE application_name = 'victim' OFFSET 0) v" | cut -d'|' -f1)
  wait $victim
  at=$(sed -nE 's/.*cancelled at ([0-9.]+).*/\1/p' "$WORK/victim.out")
  ms=$(python3 -c "print(round(($at - $sent) * 1000))" 2>/dev/null)
  if [ -n "$sent" ] && [ -n "$ms" ] && [ "$ms" -lt 100 ]; then
    ok "pg_cancel_backend cancels $name ($ms ms)"
  else
    bad "pg_cancel_backend cancels $name within 100 ms" "sent at: $sent" "victim: $(cat "$WORK/victim.out")"
  fi
done
expect "the session goes on after a cancel" "billing" "SET af.routes = '{\"*\": {\"type\": \"echo\"}}'" \
  "SET statement_timeout = '300ms'" "DO \$\$ BEGIN PERFORM af_run('$WORK/loop.afg', '[\"x\"]'); EXCEPTION WHEN query_canceled THEN NULL; END \$\$" \
  "SELECT af_run($ITEM, '[\"x\"]')->>'team'"
if grep -qE "terminated by signal|server process .* was terminated" "$WORK/server.log"; then
  bad "no backend crashed" "$(grep -E 'terminated' "$WORK/server.log" | head -3)"
else
  ok "no backend crashed"
fi


echo "$pass passed, $fail failed"
[ $fail = 0 ]
