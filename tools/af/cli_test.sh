#!/usr/bin/env bash
# The af CLI end to end, as a user runs it: demo, verify (good, truncated,
# bit-flipped, JSON), show, dot, convert both ways (byte-exact), run with
# and without a provider, per-item errors, a profile, and usage errors.
# Usage: cli_test.sh AF_BINARY SOURCE_DIR
set -uo pipefail
AF=$(realpath "$1")
SRC=$(realpath "$2")
GRAPHS=$SRC/tests/conformance/graphs
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T"
fails=0
check() {  # check NAME EXPECTED_STATUS FRAGMENT -- command...
  local name=$1 want=$2 frag=$3
  shift 4
  "$@" >out.txt 2>err.txt
  local got=$?
  if [ "$got" != "$want" ] || { [ -n "$frag" ] && ! grep -qF -- "$frag" out.txt err.txt; }; then
    echo "FAIL $name: status $got (want $want), fragment '$frag'"
    sed 's/^/  | /' out.txt err.txt
    fails=$((fails + 1))
  else
    echo "ok   $name"
  fi
}

check demo 0 '"billing-drafter|Draft a short, friendly reply to this billing question: How do I change the card' -- "$AF" demo
check demo-saved 0 '"ok":true' -- "$AF" verify triage.afg
check demo-prints-dot 0 'doubleoctagon' -- "$AF" demo --save t3.afg
check demo-tickets 0 '"team":["technical","billing"]' -- "$AF" demo --save t2.afg 'one "quoted" ticket' two
check demo-ticket-escaping 0 'question: a\ttab \"q\" back\\slash' -- "$AF" demo --save t4.afg "$(printf 'a\ttab "q" back\\slash')"
check demo-long-ticket 0 ': aaaaaaaaaa' -- "$AF" demo --save t5.afg "$(head -c 5000 /dev/zero | tr '\0' a)"
check demo-every-ticket-runs 0 '300 LM calls' -- "$AF" demo --save t6.afg $(seq 1 100)
check demo-invalid-utf8 1 'UTF-8' -- "$AF" demo --save t7.afg "$(printf 'bad \377 byte')"
check run-demo-saved 0 '"urgency":[1]' -- "$AF" run triage.afg --input '[["x"]]' --provider echo
check options 0 '"af_context_new_with":[{"key":"lazy","kind":"bool"' -- "$AF" options
check run-demo-empty-batch 1 'empty' -- "$AF" run triage.afg --input '[[]]' --provider echo
# --item-errors: a batched program's item whose switch key is unknown gets
# its error in its place, the other item its answer; exit 3 says one failed.
cp "$GRAPHS/batched_control_flow.afg" bcf.afg
check run-item-errors 3 'af: item 1 failed: NOT_FOUND: ' -- \
  "$AF" run bcf.afg --input '[["loud","nope"],["a","b"]]' --item-errors
check run-item-errors-output 3 '{"switched":["a!",{"error":{"code":' -- \
  "$AF" run bcf.afg --input '[["loud","nope"],["a","b"]]' --item-errors
check run-item-errors-all-ok 0 '"switched":["a!","(b)"]' -- \
  "$AF" run bcf.afg --input '[["loud","quiet"],["a","b"]]' --item-errors
check run-without-item-errors 1 'no branch is named "nope"' -- "$AF" run bcf.afg --input '[["loud","nope"],["a","b"]]'
# A deadline, and SIGTERM / SIGINT, end a run whose calls take 5 s: at once,
# cleanly (the run's error, the summary, exit 1 / 143 / 130).
slow='{"latency_ms":5000}'
check run-timeout 1 'did not finish within its timeout of 300 ms' -- "$AF" run triage.afg --input '[["x"]]' --provider echo --provider-options "$slow" --timeout-ms 300
check run-timeout-usage 2 '--timeout-ms takes a positive integer' -- "$AF" run triage.afg --input '[["x"]]' --timeout-ms -5
for sig in TERM INT; do
  started=$(date +%s%N)
  "$AF" run triage.afg --input '[["x"]]' --provider echo --provider-options "$slow" >out.txt 2>err.txt &
  pid=$!
  sleep 0.5
  kill -$sig $pid
  wait $pid
  got=$?
  ms=$((($(date +%s%N) - started) / 1000000))
  want=$([ $sig = TERM ] && echo 143 || echo 130)
  if [ "$got" = "$want" ] && grep -q "cancelled by SIG$sig" err.txt && grep -q "error 8: the run was cancelled" err.txt && [ "$ms" -lt 3000 ]; then
    echo "ok   run-sig$sig"
  else
    echo "FAIL run-sig$sig: status $got (want $want) after $ms ms"
    sed 's/^/  | /' out.txt err.txt
    fails=$((fails + 1))
  fi
done
# The rest works on the golden hello graph (format, concat, a literal).
cp "$GRAPHS/hello.afg" hello.afg
check run-saved 0 '"Hello, Ada!?"' -- "$AF" run hello.afg --input '["Ada"]'
check show 0 'concat(%1, "?")' -- "$AF" show hello.afg
check dot 0 'digraph' -- "$AF" dot hello.afg

size=$(stat -c %s hello.afg)
head -c $((size - 5)) hello.afg >truncated.afg
check verify-truncated 1 'truncated' -- "$AF" verify truncated.afg
cp hello.afg flipped.afg
printf '\x55' | dd of=flipped.afg bs=1 seek=$((size - 9)) conv=notrunc status=none
check verify-bitflip 1 'checksum' -- "$AF" verify flipped.afg
cp hello.afg huge.afg
printf '\xff\xff\xff\xff\xff\xff\xff\x7f' | dd of=huge.afg bs=1 seek=32 conv=notrunc status=none
check verify-huge-declared-size 1 'declared graph size' -- "$AF" verify huge.afg
"$AF" convert hello.afg --to json -o hello.json
sed 's/"concat"/"no_such_prim"/' hello.json >unknown.json
check unknown-primitive 1 'no_such_prim' -- "$AF" convert unknown.json --from json -o unknown.afg
deep=$(printf '[%.0s' $(seq 300))$(printf ']%.0s' $(seq 300))
sed "s/{\"lit\":\"?\"}/{\"lit\":$deep}/" hello.json >deep.json
check deep-nesting 1 'deep' -- "$AF" convert deep.json --from json -o deep.afg
sed 's/"%1"/"%9"/' hello.json >range.json
check out-of-range-index 1 '%9' -- "$AF" convert range.json --from json -o range.afg
check verify-json 1 'af convert' -- "$AF" verify hello.json
# Not a regular file: refused at once, never read (a FIFO would block, /dev/zero never ends).
check verify-dev-zero 1 'not a regular file' -- timeout 10 "$AF" verify /dev/zero
mkfifo fifo.afg
check verify-fifo 1 'not a regular file' -- timeout 10 "$AF" verify fifo.afg
check show-fifo 1 'not a regular file' -- timeout 10 "$AF" show fifo.afg
check run-fifo 1 'not a regular file' -- timeout 10 "$AF" run fifo.afg --input '[]'
check verify-directory 1 'not a regular file' -- timeout 10 "$AF" verify .
truncate -s 1100M sparse.afg
check verify-too-large 1 'over the 1073741824 bytes limit' -- timeout 10 "$AF" verify sparse.afg
rm -f sparse.afg
check from-json 0 '' -- "$AF" convert hello.json --from json -o back.afg
if ! cmp -s hello.afg back.afg; then echo "FAIL convert round trip: bytes differ"; fails=$((fails + 1)); fi
check golden-from-json 0 '' -- "$AF" convert "$GRAPHS/control_flow.json" --from json -o cf.afg
if ! cmp -s "$GRAPHS/control_flow.afg" cf.afg; then echo "FAIL golden JSON -> bytes differ"; fails=$((fails + 1)); fi

check run-control-flow 0 '{"switched":"hi!","looped":"hi..."}' -- \
  "$AF" run "$GRAPHS/control_flow.afg" --input '["loud","hi"]'
check run-missing-key 1 'error 2' -- "$AF" run "$GRAPHS/control_flow.afg" --input '["shout","hi"]'
check run-missing-host-function 1 'golden.shout' -- "$AF" run "$GRAPHS/host_and_lm.afg" --input '["x"]'

cat >lm.json <<'JSON'
{"afg": 1, "producer": "cli test", "host_functions": [], "irs": [{"vars": ["str","str"], "in": ["%0"],
 "eqns": [{"prim":"lm_call","out":"%1","in":["%0",{"lit":"m"}],"params":{"roles":{"value":["user"]}}}],
 "out": "%1"}]}
JSON
"$AF" convert lm.json --from json -o lm.afg
check run-lm-no-route 1 'error 2' -- "$AF" run lm.afg --input '["hi"]'
check run-lm-echo 0 '"m|hi"' -- "$AF" run lm.afg --input '["hi"]' --provider echo
check run-lm-profile 0 'profile written' -- \
  "$AF" run lm.afg --input '["hi"]' --provider echo --provider-options '{"latency_ms": 1}' --profile prof.json
if ! grep -q traceEvents prof.json 2>/dev/null; then echo "FAIL profile: no trace events"; fails=$((fails + 1)); fi
check run-bad-provider 1 'echo, openai, anthropic, ollama or replay' -- "$AF" run lm.afg --input '["hi"]' --provider nope
check run-bad-input 1 'JSON list' -- "$AF" run lm.afg --input '{"a":1}'
check run-no-input 2 '--input JSON is required' -- "$AF" run lm.afg
check unknown-command 2 'unknown command' -- "$AF" frobnicate x

# The run summary: echo's words as tokens (the drafter's reply has 11 words,
# each schema reply 1).
check run-summary 0 'af: 3 LM calls, 38 prompt + 13 completion tokens, 0 retries' -- "$AF" run triage.afg --input '[["x y"]]' --provider echo
# Streaming: each reply on stderr as it arrives, under its equation and
# item; the result on stdout is the one of a run without streaming.
check run-stream 0 '[equation 3, item 0] billing-drafter|Draft a short' -- \
  "$AF" run triage.afg --input '[["x y"]]' --provider echo --stream
"$AF" run triage.afg --input '[["x y"]]' --provider echo >plain.json 2>/dev/null
"$AF" run triage.afg --input '[["x y"]]' --provider echo --stream >streamed.json 2>/dev/null
if ! cmp -s plain.json streamed.json; then echo "FAIL run-stream: the result differs"; fails=$((fails + 1)); fi
check run-stream-tag 0 '"team":["billing"]' -- \
  "$AF" run triage.afg --input '[["x"]]' --provider echo --stream --stream-tag nothing-tagged
if grep -q '\[equation' err.txt; then echo "FAIL run-stream-tag: untagged equations streamed"; fails=$((fails + 1)); fi
check run-stream-tag-alone 2 '--stream-tag TAG needs --stream' -- "$AF" run triage.afg --input '[["x"]]' --stream-tag t
check demo-provider 0 '[equation 5, item 2] {"ok":false,"note":""}' -- \
  "$AF" demo --save t8.afg --provider echo --provider-options '{"name":"local"}' --stream
check demo-options-alone 2 '--provider-options needs --provider' -- "$AF" demo --provider-options '{}'
check run-failed-summary 1 'af: 0 LM calls' -- "$AF" run lm.afg --input '["hi"]'
# Name paths (the example names its steps): in the text, and in the profile's
# request events (a drafter's call, inside the switch named "draft").
check show-name-paths 0 '@name="classify"' -- "$AF" show triage.afg
check run-triage-profile 0 'profile written' -- \
  "$AF" run triage.afg --input '[["x"]]' --provider echo --profile tprof.json
if ! grep -q '"model":"billing-drafter".*"name_path":\["draft"\]' tprof.json 2>/dev/null; then
  echo "FAIL triage profile: no drafter request under the name path draft"; fails=$((fails + 1))
fi
check run-summary-models 0 'af:   triage-reviewer: 1 LM calls, 21 prompt + 1 completion tokens' -- "$AF" run triage.afg --input '[["x y"]]' --provider echo
# Inspection: the JSON form, a slice of one output that runs, the dry-run cost.
check show-json 0 '"topological_order":[' -- "$AF" show --json hello.afg
check show-json-after 0 '"prim":"concat"' -- "$AF" show hello.afg --json
check slice 0 'team.afg: ' -- "$AF" slice triage.afg --outputs team -o team.afg
check slice-runs 0 '[["billing"]]' -- "$AF" run team.afg --input '[["x"]]' --provider echo
check slice-from-inputs 1 'not among the chosen inputs' -- "$AF" slice triage.afg --outputs reply --inputs -o x.afg
check slice-bad-path 1 'output path "nope"' -- "$AF" slice triage.afg --outputs nope -o x.afg
check slice-no-outputs 2 'at least one output' -- "$AF" slice triage.afg -o x.afg
check slice-no-out 2 '-o OUT' -- "$AF" slice triage.afg --outputs team
check cost 0 '"total":{"calls":12,"models":{"billing-drafter":4,"triage-classifier":4,"triage-reviewer":4}}' -- "$AF" cost triage.afg --batch 4
check cost-critical-path 0 '"critical_path":{"calls":3' -- "$AF" cost triage.afg
check cost-bad-batch 2 'positive integer' -- "$AF" cost triage.afg --batch 0
# Run journals: a rerun answers every LM call from the journal; show,
# compact, and the journal of other inputs or a file that is not one refused.
IN='[["printer on fire","refund"]]'
check journal-first 0 'af: 6 LM calls' -- "$AF" run triage.afg --input "$IN" --provider echo --journal j/run.afj
check journal-mode 0 '600' -- stat -c %a j/run.afj
check journal-resume 0 'af: 0 LM calls, 0 prompt + 0 completion tokens, 0 retries, 0.00 s in flight, 0.00 s queued, 6 answered from the journal' -- "$AF" run triage.afg --input "$IN" --provider echo --journal j/run.afj
check journal-resume-same-output 0 '"billing-drafter|Draft a short, friendly reply to this billing question: refund"' -- "$AF" run triage.afg --input "$IN" --provider echo --journal j/run.afj
check journal-show 0 'triage-reviewer: 2 calls' -- "$AF" journal show j/run.afj
check journal-show-json 0 '"calls":6' -- "$AF" journal show j/run.afj --json
check journal-compact 0 '' -- "$AF" journal compact j/run.afj
check journal-after-compact 0 'af: 0 LM calls' -- "$AF" run triage.afg --input "$IN" --provider echo --journal j/run.afj
check journal-other-inputs 1 'belongs to a run of other inputs' -- "$AF" run triage.afg --input '[["other"]]' --provider echo --journal j/run.afj
printf 'not a journal' > notj.afj
check journal-not-a-journal 1 'error 4' -- "$AF" run triage.afg --input "$IN" --provider echo --journal notj.afj
check journal-not-a-journal-kept 0 'not a journal' -- cat notj.afj
head -c 5000 j/run.afj > trunc.afj
check journal-truncated 1 'error 4' -- "$AF" run triage.afg --input "$IN" --provider echo --journal trunc.afj
check journal-show-missing 1 'no such file' -- "$AF" journal show nope.afj
check journal-usage 2 'journal: say show FILE' -- "$AF" journal list j/run.afj
echo "cli: $fails failed"
[ "$fails" = 0 ]
