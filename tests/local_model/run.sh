#!/usr/bin/env bash
# The integration suite against the local model: the C API cases
# (local_model_test), then the af CLI running a saved graph on it. Needs the
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

# The af CLI: the main command's saved graph, run with --provider openai on
# the model; the result has the program's shape, each field its kind and
# bounds. Its requests may take as long as the budget allows (slowness is
# judged as in the C cases: is the model computing when time is up?).
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
start=$(date +%s)
left=$((AF_LOCAL_MODEL_DEADLINE - start))
opts=$(python3 -c 'import json, os
o = json.loads(os.environ["AF_LOCAL_MODEL_OPTIONS"])
o["timeout_ms"] = 3600000
print(json.dumps(o))')
if [ "$left" -le 0 ]; then
  echo "SKIP cli-run-openai: slow, not wrong: the suite's time budget is spent"
  skipped=$((skipped + 1))
else
  rc=0
  "$BUILD/bin/af" demo --save "$T/triage.afg" >"$T/demo.txt" 2>&1 &&
    timeout "$left" "$BUILD/bin/af" run "$T/triage.afg" \
      --input '[["I was charged twice for my March invoice.", "The app crashes when I upload a photo."]]' \
      --provider openai --provider-options "$opts" --stream >"$T/out.json" 2>"$T/err.txt" || rc=$?
  if [ "$rc" = 124 ]; then
    if bash "$SRC/tools/local_model.sh" busy; then
      echo "SKIP cli-run-openai: slow, not wrong: the model was still computing after $left s"
      skipped=$((skipped + 1))
    else
      echo "FAIL cli-run-openai: af run still waits after $left s on an idle model server"
      failed=$((failed + 1))
    fi
  elif [ "$rc" = 0 ] && python3 - "$T/out.json" <<'PY'
import json, sys
out = json.load(open(sys.argv[1]))
assert sorted(out) == ["reply", "review", "team", "urgency"], out
assert len(out["team"]) == 2 and all(t in ("billing", "technical") for t in out["team"]), out["team"]
assert all(isinstance(u, int) and 1 <= u <= 5 for u in out["urgency"]), out["urgency"]
assert all(isinstance(r, str) for r in out["reply"]), out["reply"]
assert all(isinstance(ok, bool) for ok in out["review"]["ok"]), out["review"]
assert all(isinstance(n, str) and len(n) <= 80 for n in out["review"]["note"]), out["review"]
PY
  then
    grep -q "^\[equation " "$T/err.txt" && echo "ok   cli-run-openai ($(($(date +%s) - start)) s)" && passed=$((passed + 1)) ||
      { echo "FAIL cli-run-openai: nothing streamed"; failed=$((failed + 1)); }
  else
    echo "FAIL cli-run-openai"
    cat "$T/demo.txt" "$T/out.json" "$T/err.txt" 2>/dev/null | tail -20 | sed 's/^/  | /'
    failed=$((failed + 1))
  fi
fi
[ "$skipped" = 0 ] || echo "$skipped skipped (slow, not wrong)"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
