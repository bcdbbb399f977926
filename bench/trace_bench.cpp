// Tracing throughput: a chain of N concat equations,
//   y_0 = x (the input placeholder), y_i = concat(y_{i-1}, "x"),
// traced through the C++ API (af::trace + af::op_concat) and through the C
// API (af_trace + af_concat, with af_value_t handles made and freed the way a
// C caller does). One iteration = one whole trace, IR construction and
// destruction included. Reported as equations per second (target: >= 1e6).
//
// Tracing never runs the equations, so the chain's strings never exist here:
// the cost is purely recording (no O(n^2) string growth, unlike calling).
#include <af/af.h>
#include <benchmark/benchmark.h>

#include "chains.h"

namespace {

using af_bench::ChainSpec;
using af_bench::chain_fn;
using af_bench::set_eqn_counters;
using af_bench::trace_chain_cpp;

void BM_Trace_ConcatChain_Cpp(benchmark::State& state) {
  const size_t n = size_t(state.range(0));
  const af::Value example = af::Value::str("x");
  const af::Value lit = af::Value::str("x");
  {  // Check once, untimed, that the benchmark traces what it claims.
    af::IRPtr ir = trace_chain_cpp(n, example, lit);
    if (ir->eqns.size() != n || ir->eqns.back().prim->name != "concat") {
      state.SkipWithError("the traced IR is not an n-equation concat chain");
      return;
    }
  }
  for (auto _ : state) {
    af::IRPtr ir = trace_chain_cpp(n, example, lit);
    benchmark::DoNotOptimize(ir.get());
  }
  set_eqn_counters(state, int64_t(n));
}
BENCHMARK(BM_Trace_ConcatChain_Cpp)->Arg(10000)->Unit(benchmark::kMillisecond);

// ---------------------------------------------------------------- C API

void BM_Trace_ConcatChain_C(benchmark::State& state) {
  ChainSpec spec{.n = size_t(state.range(0)), .literal_per_eqn = int(state.range(1))};
  af_context_t* ctx = nullptr;
  af_value_t* example = nullptr;
  if (af_error_t* e = af_context_new(&ctx)) {
    state.SkipWithError(af_error_message(e));
    af_error_free(e);
    return;
  }
  af_error_t* err = af_value_str(ctx, "x", 1, &example);
  af_ir_t* ir = nullptr;
  if (!err) err = af_trace(ctx, chain_fn, &spec, &example, 1, nullptr, &ir);
  if (err || af_ir_eqn_count(ir) != spec.n) {
    state.SkipWithError(err ? af_error_message(err) : "the traced IR has the wrong size");
  } else {
    for (auto _ : state) {
      af_ir_t* t = nullptr;
      af_error_t* e = af_trace(ctx, chain_fn, &spec, &example, 1, nullptr, &t);
      if (e) {
        state.SkipWithError(af_error_message(e));
        af_error_free(e);
        break;
      }
      af_ir_free(t);
    }
    set_eqn_counters(state, int64_t(spec.n));
  }
  af_error_free(err);
  af_ir_free(ir);
  af_value_free(example);
  af_context_free(ctx);
}
BENCHMARK(BM_Trace_ConcatChain_C)
    ->ArgNames({"n", "literal_per_eqn"})
    ->Args({10000, 0})
    ->Args({10000, 1})
    ->Unit(benchmark::kMillisecond);

}  // namespace
