// The af_bench entry point. The benchmarks live in the other bench/*.cpp
// files (see bench/README.md for what each one measures).
#include <benchmark/benchmark.h>

BENCHMARK_MAIN();
