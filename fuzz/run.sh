#!/usr/bin/env bash
# Builds the libFuzzer targets with clang + ASan/UBSan in BUILD_DIR, replays
# every saved regression and seed, then fuzzes for SECONDS in all: half for
# the graph loader, a quarter each for JSON values and schemas with replies.
# Usage: fuzz/run.sh [BUILD_DIR=build-fuzz] [SECONDS=120]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build-fuzz}
SECONDS_=${2:-120}
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAF_BUILD_FUZZ=ON -DAF_BUILD_TESTS=OFF -DAF_BUILD_BENCH=OFF \
  -DAF_SANITIZE=address,undefined >/dev/null
cmake --build "$BUILD" --target af_fuzz_graph af_fuzz_value_json af_fuzz_schema

# fuzz TARGET SECONDS MAX_LEN SAVED_DIRS...: replays the saved inputs (every
# one must pass before new ones are tried), then fuzzes. New inputs go to a
# scratch corpus in the build dir, never into the repo; findings to
# BUILD/findings/TARGET-*.
fuzz() {
  local target=$1 seconds=$2 max_len=$3
  shift 3
  local bin=$BUILD/bin/af_fuzz_$target
  "$bin" -runs=0 "$@"
  mkdir -p "$BUILD/corpus/$target" "$BUILD/findings"
  "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len="$max_len" \
    -dict="fuzz/dict/$target.dict" -artifact_prefix="$BUILD/findings/$target-" -print_final_stats=1 \
    "$BUILD/corpus/$target" "$@"
}
fuzz graph $((SECONDS_ / 2)) 65536 fuzz/regressions fuzz/corpus/graph
fuzz value_json $((SECONDS_ / 4)) 4096 fuzz/corpus/value_json
fuzz schema $((SECONDS_ / 4)) 4096 fuzz/corpus/schema
