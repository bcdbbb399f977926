// The lazy evaluator and the plan cache (numbers in docs/PERFORMANCE.md).
//
//  BM_Lazy_Record:       one af_concat recorded on a lazy context (the
//                        promise made and freed), C API. Goal <= 1 us.
//  BM_Lazy_Eval100/hit:  af_eval of 100 pending string equations (a chain
//                        of concat from one input) whose structure the plan
//                        cache holds; recording is outside the timing.
//  BM_Lazy_Eval100/miss: the same, but two structures alternate in a cache
//                        of one entry, so every evaluation compiles.
//                        Goal: hit >= 20x faster than miss.
//  BM_PlanCache_Lookup10k / BM_Compile10k: the cache lookup of a 10 000
//                        equation IR (hash + full structural equality
//                        against an equal IR of another allocation) against
//                        compiling it.
#include <af/af.h>
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "chains.h"
#include "exec/plan_cache.h"
#include "exec/program.h"
#include "prims/ops.h"
#include "trace/trace.h"

namespace {

af_context_t* lazy_context(const char* options) {
  af_context_t* c = nullptr;
  if (af_error_t* e = af_context_new_with(options, std::strlen(options), &c)) {
    af_error_free(e);
    return nullptr;
  }
  return c;
}

af_value_t* str(af_context_t* c, const char* s) {
  af_value_t* v = nullptr;
  af_value_str(c, s, std::strlen(s), &v);
  return v;
}

void BM_Lazy_Record(benchmark::State& state) {
  af_context_t* c = lazy_context("{\"lazy\":true}");
  af_value_t* x = str(c, "x");
  const af_value_t* args[2] = {x, x};
  for (auto _ : state) {
    af_value_t* out = nullptr;
    af_error_t* e = af_concat(c, args, 2, &out);
    if (e) {
      state.SkipWithError(af_error_message(e));
      af_error_free(e);
      break;
    }
    af_value_free(out);  // dropped: never runs
  }
  state.SetItemsProcessed(state.iterations());
  af_value_free(x);
  af_context_free(c);
}
BENCHMARK(BM_Lazy_Record);

// Records a chain of n concats from x; `variant` 1 appends "" on the other
// side, so the two variants are different structures.
af_value_t* record_chain(af_context_t* c, af_value_t* x, af_value_t* empty, int n, int variant) {
  af_value_t* prev = af_value_clone(x);
  for (int i = 0; i < n; ++i) {
    const af_value_t* args[2] = {variant ? empty : prev, variant ? prev : empty};
    af_value_t* next = nullptr;
    af_error_t* e = af_concat(c, args, 2, &next);
    af_value_free(prev);
    if (e) {
      af_error_free(e);
      return nullptr;
    }
    prev = next;
  }
  return prev;
}

void BM_Lazy_Eval100(benchmark::State& state) {
  const bool miss = state.range(0) == 1;
  af_context_t* c =
      lazy_context(miss ? "{\"lazy\":true,\"plan_cache\":{\"max_entries\":1}}" : "{\"lazy\":true}");
  af_value_t *x = str(c, "payload"), *empty = str(c, "");
  int variant = 0;
  for (auto _ : state) {
    state.PauseTiming();
    af_value_t* v = record_chain(c, x, empty, 100, miss ? (variant ^= 1) : 0);
    state.ResumeTiming();
    af_error_t* e = v ? af_eval(c, &v, 1) : nullptr;
    state.PauseTiming();
    if (!v || e || !af_value_ready(v)) {
      state.SkipWithError("evaluation failed");
      af_error_free(e);
      af_value_free(v);
      break;
    }
    af_value_free(v);
    state.ResumeTiming();
  }
  af_bytes_t stats{nullptr, 0};
  if (!af_context_stats(c, &stats)) {
    std::string s(reinterpret_cast<const char*>(stats.data), stats.len);
    state.SetLabel(s.substr(0, s.find("},")));  // the plan cache counters
  }
  af_bytes_free(&stats);
  state.counters["eqns"] = 100;
  af_value_free(x);
  af_value_free(empty);
  af_context_free(c);
}
BENCHMARK(BM_Lazy_Eval100)->Arg(0)->Arg(1)->ArgName("miss");

af::IRPtr concat_chain(size_t n) {
  return af_bench::trace_chain_cpp(n, af::Value::str("e"), af::Value::str("x"));
}

void BM_PlanCache_Lookup10k(benchmark::State& state) {
  af::PlanCache cache;
  af::IRPtr stored = concat_chain(10000), asked = concat_chain(10000);  // equal, not shared
  cache.get(stored);
  for (auto _ : state) {
    auto p = cache.get(asked);  // hash + equality, a hit
    benchmark::DoNotOptimize(p);
  }
  if (cache.stats().misses != 1) state.SkipWithError("the lookups were not hits");
}
BENCHMARK(BM_PlanCache_Lookup10k)->Unit(benchmark::kMicrosecond);

void BM_Compile10k(benchmark::State& state) {
  af::IRPtr ir = concat_chain(10000);
  for (auto _ : state) {
    auto p = af::compile(ir);
    benchmark::DoNotOptimize(p);
  }
}
BENCHMARK(BM_Compile10k)->Unit(benchmark::kMicrosecond);

}  // namespace
