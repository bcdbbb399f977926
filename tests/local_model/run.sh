#!/usr/bin/env bash
# The integration suite against the local model: the C API cases
# (local_model_test), then the README's demo (af demo: trace, batch, save,
# run the saved file) on it, one query through the SQLite extension, the
# scan example (examples/rolling_summary) and the agent (examples/agent). Needs the
# server that tools/local_model.sh starts:
#   bash tools/local_model.sh run bash tests/local_model/run.sh [BUILD_DIR]
# Ends with one line "N passed, N failed".
#
# Slow is not wrong: the suite has a time budget (AF_LOCAL_MODEL_BUDGET,
# seconds, default 600). A case the model is still computing for when its
# time is up, or that would start past the budget, is skipped with the
# reason, not failed; libaf waiting on an idle server, or a wrong answer,
# fails (local_model_test.c says how each case is judged).
set -uo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "${1:-$SRC/build}" && pwd)
passed=0
failed=0
skipped=0
if [ -z "${AF_LOCAL_MODEL_URL:-}" ]; then
  echo "local model suite: AF_LOCAL_MODEL_URL is not set; run it through tools/local_model.sh run"
  echo "0 passed, 1 failed"
  exit 1
fi

start=$(date +%s)
export AF_LOCAL_MODEL_DEADLINE=$((start + ${AF_LOCAL_MODEL_BUDGET:-600}))
"$BUILD/bin/local_model_test" | tee "${TMPDIR:-/tmp}/af-local-model-cases.$$"
line=$(grep -E "^[0-9]+ passed, [0-9]+ failed$" "${TMPDIR:-/tmp}/af-local-model-cases.$$" | tail -1)
skipped=$(grep -E "^[0-9]+ skipped$" "${TMPDIR:-/tmp}/af-local-model-cases.$$" | tail -1 | cut -d' ' -f1)
skipped=${skipped:-0}
rm -f "${TMPDIR:-/tmp}/af-local-model-cases.$$"
if [ -n "$line" ]; then
  passed=$((passed + ${line%% passed*}))
  failed=$((failed + $(echo "$line" | sed -E 's/.* ([0-9]+) failed/\1/')))
else
  echo "local_model_test gave no summary"
  failed=$((failed + 1))
fi
echo "-- C API cases: $(($(date +%s) - start)) s"

# The README's real-model demo, as `tools/local_model.sh demo --stream` runs
# it: af demo traces, batches and saves the triage program and runs the saved
# file on the sample tickets with --provider openai, streaming, with per-item
# errors. Every ticket gets an answer of the program's shape (each field its
# kind and bounds) or its own error; an error may only be the model's (SCHEMA:
# its reply failed validation after the re-asks), and at least one ticket is
# answered. Its requests may take as long as the budget allows (slowness is
# judged as in the C cases: is the model computing when time is up?).
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# A case whose time ran out (exit 124): slow if the model is still
# computing, else libaf waits on an idle server. timed_out NAME WHAT
timed_out() {
  if bash "$SRC/tools/local_model.sh" busy; then
    echo "SKIP $1: slow, not wrong: the model was still computing after $left s"
    skipped=$((skipped + 1))
  else
    echo "FAIL $1: $2 still waits after $left s on an idle model server"
    failed=$((failed + 1))
  fi
}
start=$(date +%s)
left=$((AF_LOCAL_MODEL_DEADLINE - start))
opts=$(python3 -c 'import json, os
o = json.loads(os.environ["AF_LOCAL_MODEL_OPTIONS"])
o["timeout_ms"] = 3600000
print(json.dumps(o))')
if [ "$left" -le 0 ]; then
  echo "SKIP demo: slow, not wrong: the suite's time budget is spent"
  skipped=$((skipped + 1))
else
  rc=0
  (cd "$T" && timeout "$left" "$BUILD/bin/af" demo --provider openai --provider-options "$opts" --stream) \
    >"$T/demo.txt" 2>"$T/err.txt" || rc=$?
  if [ "$rc" = 124 ]; then
    timed_out demo "af demo"
  elif { [ "$rc" = 0 ] || [ "$rc" = 3 ]; } && python3 - "$T/demo.txt" "$rc" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
out = json.loads(lines[next(i for i, l in enumerate(lines) if l.startswith("== af run ")) + 1])
assert sorted(out) == ["reply", "review", "team", "urgency"], out
def error(v):
    return isinstance(v, dict) and list(v) == ["error"] and set(v["error"]) == {"code", "name", "message"}
answered = 0
for i in range(3):
    item = [out["team"][i], out["urgency"][i], out["reply"][i], out["review"]["ok"][i], out["review"]["note"][i]]
    if any(error(v) for v in item):
        assert all(v == item[0] for v in item), ("an item's error is in each of its places", item)
        assert item[0]["error"]["name"] == "SCHEMA", ("only the model's reply may fail", item[0])
        print(f"     ticket {i}: {item[0]['error']['message'][:160]}")
        continue
    team, urgency, reply, ok, note = item
    assert team in ("billing", "technical"), team
    assert isinstance(urgency, int) and 1 <= urgency <= 5, urgency
    assert isinstance(reply, str), reply
    assert isinstance(ok, bool), ok
    assert isinstance(note, str) and len(note) <= 80, note
    answered += 1
assert answered >= 1, "no ticket was answered"
assert (int(sys.argv[2]) == 3) == (answered < 3), "the exit status says whether an item failed"
print(f"     {answered} of 3 tickets answered")
PY
  then
    grep -q "^\[equation " "$T/err.txt" && echo "ok   demo ($(($(date +%s) - start)) s)" && passed=$((passed + 1)) ||
      { echo "FAIL demo: nothing streamed"; failed=$((failed + 1)); }
  else
    echo "FAIL demo (exit $rc)"
    cat "$T/demo.txt" "$T/err.txt" 2>/dev/null | tail -20 | sed 's/^/  | /'
    failed=$((failed + 1))
  fi
fi
# One SQL query against the model: the SQLite extension (hosts/sqlite)
# runs the per-ticket triage program on a ticket through af_run_agg (one
# batched run), its LM calls routed to the model with af_route. The answer
# is judged as the demo's: the program's shape, or the model's SCHEMA error.
start=$(date +%s)
left=$((AF_LOCAL_MODEL_DEADLINE - start))
if [ "$left" -le 0 ]; then
  echo "SKIP sqlite: slow, not wrong: the suite's time budget is spent"
  skipped=$((skipped + 1))
else
  rc=0
  (cd "$T" && "$BUILD/bin/af" demo --save batched.afg --save-item item.afg >/dev/null 2>&1) || rc=$?
  [ "$rc" != 0 ] || timeout "$left" sqlite3 -bail :memory: ".load $BUILD/lib/libaf_sqlite" \
    "SELECT af_route('*', 'openai', '$opts');" \
    "SELECT af_run_agg('$T/item.afg', json_array('I was charged twice for my March invoice.'));" \
    >"$T/sql.txt" 2>&1 || rc=$?
  if [ "$rc" = 124 ]; then
    timed_out sqlite af_run_agg
  elif [ "$rc" = 0 ] && python3 - "$T/sql.txt" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert lines[0] == "1", lines
(item,) = json.loads(lines[1])
if list(item) == ["error"]:
    assert item["error"]["name"] == "SCHEMA", ("only the model's reply may fail", item)
    print(f"     the model's reply failed validation: {item['error']['message'][:160]}")
else:
    assert item["team"] in ("billing", "technical"), item
    assert isinstance(item["urgency"], int) and 1 <= item["urgency"] <= 5, item
    assert isinstance(item["reply"], str) and isinstance(item["review"]["ok"], bool), item
    print(f"     team {item['team']}, urgency {item['urgency']}")
PY
  then
    echo "ok   sqlite: af_run_agg on the model ($(($(date +%s) - start)) s)"
    passed=$((passed + 1))
  else
    echo "FAIL sqlite (exit $rc)"
    tail -20 "$T/sql.txt" | sed 's/^/  | /'
    failed=$((failed + 1))
  fi
fi
# The scan example on the model: a document summarized chunk by chunk
# (af_scan threads the summary); each of its four steps answers with text.
start=$(date +%s)
left=$((AF_LOCAL_MODEL_DEADLINE - start))
if [ "$left" -le 0 ]; then
  echo "SKIP rolling_summary: slow, not wrong: the suite's time budget is spent"
  skipped=$((skipped + 1))
else
  rc=0
  AF_SUMMARY_URL=$AF_LOCAL_MODEL_URL timeout "$left" "$BUILD/bin/rolling_summary_example" >"$T/summary.txt" 2>&1 ||
    rc=$?
  if [ "$rc" = 124 ]; then
    timed_out rolling_summary "the scan example"
  elif [ "$rc" = 0 ] && [ "$(grep -cE '^after chunk [1-4]: .*[^ ]' "$T/summary.txt")" = 4 ]; then
    echo "ok   rolling_summary: af_scan on the model ($(($(date +%s) - start)) s)"
    passed=$((passed + 1))
  else
    echo "FAIL rolling_summary (exit $rc)"
    tail -20 "$T/summary.txt" | sed 's/^/  | /'
    failed=$((failed + 1))
  fi
fi
# The agent example on the model: a traced while_loop over lm_tool_call
# (tools, a switch to host functions in a scan), batched, saved and
# reloaded; greedy, so the reloaded program must answer the same. The model
# decides whether to call tools: each question gets an answer line (shape).
start=$(date +%s)
left=$((AF_LOCAL_MODEL_DEADLINE - start))
if [ "$left" -le 0 ]; then
  echo "SKIP agent: slow, not wrong: the suite's time budget is spent"
  skipped=$((skipped + 1))
else
  rc=0
  (cd "$T" && AF_AGENT_URL=$AF_LOCAL_MODEL_URL timeout "$left" "$BUILD/bin/agent_example") >"$T/agent.txt" 2>&1 ||
    rc=$?
  if [ "$rc" = 124 ]; then
    timed_out agent "the agent example"
  elif [ "$rc" = 0 ] && [ "$(grep -c '^A: ' "$T/agent.txt")" = 2 ] && grep -q "answered the same" "$T/agent.txt"; then
    echo "ok   agent: tool calling on the model ($(($(date +%s) - start)) s)"
    sed 's/^/     /' "$T/agent.txt" | head -12
    passed=$((passed + 1))
  else
    echo "FAIL agent (exit $rc)"
    tail -20 "$T/agent.txt" | sed 's/^/  | /'
    failed=$((failed + 1))
  fi
fi
[ "$skipped" = 0 ] || echo "$skipped skipped (slow, not wrong)"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
