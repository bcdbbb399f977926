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
//  BM_Program5/{lazy,traced,retrace}: a 5-operation LM program (format,
//                        lm_call, format, lm_call, concat; echo provider, no
//                        latency) on a new ticket each iteration, its result
//                        read: built on a lazy context (a plan-cache hit
//                        after the first), traced once and called, or
//                        traced and compiled every iteration.
//  BM_Lazy_Chain/N:      x = concat(x, "b") N times on a lazy context (older
//                        promises freed), then the result read: time for all
//                        of it, and the process's peak resident memory
//                        (peak_rss_mb: run it alone, --benchmark_filter).
//                        Goal: 1M operations in under 1 GB.
//  BM_PlanCache_Lookup10k / BM_Compile10k: the cache lookup of a 10 000
//                        equation IR (hash + full structural equality
//                        against an equal IR of another allocation) against
//                        compiling it.
#include <af/af.h>
#include <benchmark/benchmark.h>

#include <sys/resource.h>

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

// The 5-operation program on ticket t (ctx: lazy, eager or tracing).
af_value_t* message(af_context_t* c, const af_value_t* content) {
  const char* keys[] = {"role", "content"};
  size_t lens[] = {4, 7};
  af_value_t* role = str(c, "user");
  const af_value_t* vals[] = {role, content};
  af_value_t *m = nullptr, *msgs = nullptr;
  af_error_free(af_value_dict(c, keys, lens, vals, 2, &m));
  const af_value_t* items[] = {m};
  af_error_free(af_value_list(c, items, 1, &msgs));
  af_value_free(role);
  af_value_free(m);
  return msgs;
}

af_value_t* program5(af_context_t* c, const af_value_t* t, const af_value_t* model) {
  af_value_t *p = nullptr, *a = nullptr, *q = nullptr, *b = nullptr, *out = nullptr;
  af_error_t* e = af_format(c, "Classify: {}", 12, &t, 1, nullptr, &p);
  af_value_t* m1 = message(c, p);
  if (!e) e = af_lm_call(c, m1, model, &a);
  const af_value_t* qa[] = {t, a};
  if (!e) e = af_format(c, "Summarize {} as {}", 18, qa, 2, nullptr, &q);
  af_value_t* m2 = message(c, q);
  if (!e) e = af_lm_call(c, m2, model, &b);
  const af_value_t* parts[] = {a, b};
  if (!e) e = af_concat(c, parts, 2, &out);
  af_error_free(e);
  for (af_value_t* v : {p, a, q, b, m1, m2}) af_value_free(v);
  return out;
}

af_error_t* program5_trace(void*, af_context_t* c, const af_value_t* const* in, size_t, af_value_t** out) {
  *out = program5(c, in[0], in[1]);
  return *out ? nullptr : af_error_new(AF_ERR_INTERNAL, "program5 failed", 15);
}

void BM_Program5(benchmark::State& state) {
  const int mode = int(state.range(0));  // 0 lazy, 1 traced once, 2 traced every time
  af_context_t* c = lazy_context(mode == 0 ? "{\"lazy\":true}" : "{}");
  af_provider_t* echo = nullptr;
  af_error_free(af_provider_echo_new("{}", 2, &echo));
  af_error_free(af_context_route(c, "*", 1, echo));
  af_value_t* model = str(c, "m");
  af_value_t* example = str(c, "ticket");
  const af_value_t* examples[] = {example, model};
  af_program_t* traced = nullptr;
  if (mode == 1) {
    af_ir_t* ir = nullptr;
    af_error_free(af_trace(c, program5_trace, nullptr, examples, 2, nullptr, &ir));
    af_error_free(af_compile(c, ir, &traced));
    af_ir_free(ir);
  }
  uint64_t n = 0;
  for (auto _ : state) {
    std::string text = "ticket " + std::to_string(n++);
    af_value_t* t = str(c, text.c_str());
    af_value_t* out = nullptr;
    const af_value_t* in[] = {t, model};
    if (mode == 0) {
      out = program5(c, t, model);
    } else if (mode == 1) {
      af_error_free(af_program_call(c, traced, in, 2, &out));
    } else {
      af_ir_t* ir = nullptr;
      af_program_t* prog = nullptr;
      af_error_free(af_trace(c, program5_trace, nullptr, in, 2, nullptr, &ir));
      af_error_free(af_compile(c, ir, &prog));
      af_error_free(af_program_call(c, prog, in, 2, &out));
      af_program_free(prog);
      af_ir_free(ir);
    }
    af_bytes_t json{nullptr, 0};
    af_error_t* e = out ? af_value_to_json(out, &json) : af_error_new(AF_ERR_INTERNAL, "no result", 9);
    if (e) {
      state.SkipWithError(af_error_message(e));
      af_error_free(e);
      af_value_free(t);
      af_value_free(out);
      break;
    }
    af_bytes_free(&json);
    af_value_free(out);
    af_value_free(t);
  }
  af_bytes_t stats{nullptr, 0};
  if (!af_context_stats(c, &stats)) {
    std::string s(reinterpret_cast<const char*>(stats.data), stats.len);
    state.SetLabel(s.substr(0, s.find(",\"evictions")));
  }
  af_bytes_free(&stats);
  af_program_free(traced);
  af_value_free(example);
  af_value_free(model);
  af_provider_free(echo);
  af_context_free(c);
}
BENCHMARK(BM_Program5)->Arg(0)->Arg(1)->Arg(2)->ArgName("lazy0_traced1_retrace2");

void BM_Lazy_Chain(benchmark::State& state) {
  const int64_t n = state.range(0);
  for (auto _ : state) {
    af_context_t* c = lazy_context("{\"lazy\":true}");
    af_value_t *x = str(c, "x"), *b = str(c, "b"), *v = af_value_clone(x);
    for (int64_t i = 0; i < n; ++i) {
      const af_value_t* args[2] = {v, b};
      af_value_t* next = nullptr;
      af_error_free(af_concat(c, args, 2, &next));
      af_value_free(v);
      v = next;
    }
    const char* text = nullptr;
    size_t len = 0;
    if (af_error_t* e = af_value_get_str(v, &text, &len)) {
      state.SkipWithError(af_error_message(e));
      af_error_free(e);
    } else if (len != size_t(n) + 1) {
      state.SkipWithError("wrong length");
    }
    af_value_free(v);
    af_value_free(b);
    af_value_free(x);
    af_context_free(c);
  }
  struct rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  state.counters["peak_rss_mb"] = double(ru.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}
BENCHMARK(BM_Lazy_Chain)->Arg(1000000)->Arg(40000)->Iterations(1)->Unit(benchmark::kMillisecond);

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
