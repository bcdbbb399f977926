#!/usr/bin/env bash
# Builds the graph-loader fuzzer with clang + ASan/UBSan in BUILD_DIR, replays
# the saved regressions and the seed corpus, then fuzzes for SECONDS.
# Usage: fuzz/run.sh [BUILD_DIR=build-fuzz] [SECONDS=60]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build-fuzz}
SECONDS_=${2:-60}
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAF_BUILD_FUZZ=ON -DAF_BUILD_TESTS=OFF -DAF_BUILD_BENCH=OFF \
  -DAF_SANITIZE=address,undefined >/dev/null
cmake --build "$BUILD" --target af_fuzz_graph
FUZZ=$BUILD/bin/af_fuzz_graph
# Every saved finding and seed must pass before new inputs are tried.
"$FUZZ" -runs=0 fuzz/regressions fuzz/corpus/graph
# New inputs go to a scratch corpus in the build dir, never into the repo.
mkdir -p "$BUILD/corpus" "$BUILD/findings"
"$FUZZ" -max_total_time="$SECONDS_" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
  -artifact_prefix="$BUILD/findings/" -print_final_stats=1 "$BUILD/corpus" fuzz/corpus/graph
