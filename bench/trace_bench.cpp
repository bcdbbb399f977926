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

#include <malloc.h>

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

// Heap bytes in use: small chunks plus the large ones glibc maps directly.
size_t heap_in_use() {
  const struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

// Memory held by a traced IR: heap bytes in use (glibc's mallinfo2) with the
// IR alive, minus before the trace, per equation. The chain's literal is one
// shared value, so this is the IR's own structure: Eqn, its input and output
// vectors, the var table. One iteration = trace, measure, free.
void BM_Trace_BytesPerEqn(benchmark::State& state) {
  ChainSpec spec{.n = size_t(state.range(0))};
  af_context_t* ctx = nullptr;
  af_value_t* example = nullptr;
  af_error_t* err = af_context_new(&ctx);
  if (!err) err = af_value_str(ctx, "x", 1, &example);
  double per_eqn = 0;
  for (auto _ : state) {
    if (err) break;
    const size_t before = heap_in_use();
    af_ir_t* ir = nullptr;
    err = af_trace(ctx, chain_fn, &spec, &example, 1, nullptr, &ir);
    const size_t after = heap_in_use();
    if (!err && af_ir_eqn_count(ir) != spec.n) err = af_error_new(AF_ERR_INTERNAL, "wrong size", 10);
    per_eqn = double(after - before) / double(spec.n);
    af_ir_free(ir);
  }
  if (err) state.SkipWithError(af_error_message(err));
  state.counters["bytes_per_eqn"] = per_eqn;
  af_error_free(err);
  af_value_free(example);
  af_context_free(ctx);
}
BENCHMARK(BM_Trace_BytesPerEqn)->Arg(1000000)->Unit(benchmark::kMillisecond)->Iterations(2);
