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

#include <span>
#include <string>

#include "rt/env.h"
#include "prims/ops.h"
#include "trace/trace.h"
#include "value/value.h"

namespace {

void set_eqn_counters(benchmark::State& state, int64_t eqns_per_iter) {
  state.SetItemsProcessed(state.iterations() * eqns_per_iter);
  state.counters["eqns"] = benchmark::Counter(double(eqns_per_iter));
  state.counters["eqn_per_s"] =
      benchmark::Counter(double(eqns_per_iter), benchmark::Counter::kIsIterationInvariantRate);
}

// ---------------------------------------------------------------- C++ API

af::IRPtr trace_chain_cpp(size_t n, const af::Value& example, const af::Value& lit,
                          af::RunEnv& env) {
  return af::trace(
      [&](std::span<const af::Value> in) {
        af::Value prev = in[0];
        for (size_t i = 0; i < n; ++i) {
          const af::Value args[2] = {prev, lit};
          prev = af::op_concat(args, env);
        }
        return prev;
      },
      std::span<const af::Value>(&example, 1), af::Value());
}

void BM_Trace_ConcatChain_Cpp(benchmark::State& state) {
  const size_t n = size_t(state.range(0));
  af::RunEnv env;
  const af::Value example = af::Value::str("x");
  const af::Value lit = af::Value::str("x");
  {  // Check once, untimed, that the benchmark traces what it claims.
    af::IRPtr ir = trace_chain_cpp(n, example, lit, env);
    if (ir->eqns.size() != n || ir->eqns.back().prim->name != "concat") {
      state.SkipWithError("the traced IR is not an n-equation concat chain");
      return;
    }
  }
  for (auto _ : state) {
    af::IRPtr ir = trace_chain_cpp(n, example, lit, env);
    benchmark::DoNotOptimize(ir.get());
  }
  set_eqn_counters(state, int64_t(n));
}
BENCHMARK(BM_Trace_ConcatChain_Cpp)->Arg(10000)->Unit(benchmark::kMillisecond);

// ---------------------------------------------------------------- C API

struct ChainSpec {
  size_t n;
  // 0: the literal "x" is made once per trace and reused (a careful caller);
  // 1: af_value_str("x") is made and freed for every equation (a naive one).
  int literal_per_eqn;
};

// The traced function, written as a C user writes it: every handle that
// libaf returns is freed once no longer needed; errors are propagated.
af_error_t* chain_fn(void* user_data, af_context_t* ctx, const af_value_t* const* inputs,
                     size_t n_inputs, af_value_t** out) {
  const ChainSpec* spec = static_cast<const ChainSpec*>(user_data);
  (void)n_inputs;
  af_error_t* err = nullptr;
  af_value_t* lit = nullptr;
  if (!spec->literal_per_eqn && (err = af_value_str(ctx, "x", 1, &lit))) return err;
  af_value_t* prev = af_value_clone(inputs[0]);
  for (size_t i = 0; i < spec->n; ++i) {
    af_value_t* l = lit;
    if (spec->literal_per_eqn && (err = af_value_str(ctx, "x", 1, &l))) break;
    const af_value_t* args[2] = {prev, l};
    af_value_t* next = nullptr;
    err = af_concat(ctx, args, 2, &next);
    if (spec->literal_per_eqn) af_value_free(l);
    if (err) break;
    af_value_free(prev);
    prev = next;
  }
  af_value_free(lit);
  if (err) {
    af_value_free(prev);
    return err;
  }
  *out = prev;
  return nullptr;
}

void BM_Trace_ConcatChain_C(benchmark::State& state) {
  ChainSpec spec{size_t(state.range(0)), int(state.range(1))};
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
