#!/usr/bin/env bash
# The integration suite against the local model: the C API cases
# (local_model_test), then the af CLI running a saved graph on it. Needs the
# server that tools/local_model.sh starts:
#   bash tools/local_model.sh run bash tests/local_model/run.sh [BUILD_DIR]
# Ends with one line "N passed, N failed".
set -uo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "${1:-$SRC/build}" && pwd)
passed=0
failed=0
if [ -z "${AF_LOCAL_MODEL_URL:-}" ]; then
  echo "local model suite: AF_LOCAL_MODEL_URL is not set; run it through tools/local_model.sh run"
  echo "0 passed, 1 failed"
  exit 1
fi

start=$(date +%s)
"$BUILD/bin/local_model_test" | tee "${TMPDIR:-/tmp}/af-local-model-cases.$$"
line=$(grep -E "^[0-9]+ passed, [0-9]+ failed$" "${TMPDIR:-/tmp}/af-local-model-cases.$$" | tail -1)
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
# bounds.
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
start=$(date +%s)
if "$BUILD/bin/af" demo --save "$T/triage.afg" >"$T/demo.txt" 2>&1 &&
   "$BUILD/bin/af" run "$T/triage.afg" --input '[["I was charged twice for my March invoice.", "The app crashes when I upload a photo."]]' \
     --provider openai --provider-options "$AF_LOCAL_MODEL_OPTIONS" --stream >"$T/out.json" 2>"$T/err.txt" &&
   python3 - "$T/out.json" <<'PY'
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
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
