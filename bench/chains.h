// The concat chain every engine benchmark times: y_0 = x (the input),
// y_i = concat(y_{i-1}, lit), traced through the C++ API or the C API.
#pragma once

#include <af/af.h>
#include <benchmark/benchmark.h>

#include <cstdint>
#include <span>

#include "ir/ir.h"
#include "prims/ops.h"
#include "rt/env.h"
#include "trace/trace.h"

namespace af_bench {

// Counters per equation: eqn_per_s and its inverse sec_per_eqn (printed with
// an SI prefix, e.g. "95.2n" = 95.2 ns per equation).
inline void set_eqn_counters(benchmark::State& state, int64_t eqns_per_iter) {
  state.SetItemsProcessed(state.iterations() * eqns_per_iter);
  state.counters["eqn_per_s"] =
      benchmark::Counter(double(eqns_per_iter), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["sec_per_eqn"] =
      benchmark::Counter(double(eqns_per_iter), benchmark::Counter::kIsIterationInvariantRate |
                                                    benchmark::Counter::kInvert);
}

// The chain of n concats from `example`, traced with af::trace.
inline af::IRPtr trace_chain_cpp(size_t n, const af::Value& example, const af::Value& lit) {
  af::RunEnv env;
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

struct ChainSpec {
  size_t n;
  const char* lit = "x";
  size_t lit_len = 1;
  // 0: the literal is made once per trace and reused (a careful caller);
  // 1: it is made and freed for every equation (a naive one).
  int literal_per_eqn = 0;
};

// The chain as an af_trace_fn, written as a C user writes it: every handle
// libaf returns is freed once no longer needed; errors are propagated.
inline af_error_t* chain_fn(void* user_data, af_context_t* ctx, const af_value_t* const* inputs,
                            size_t n_inputs, af_value_t** out) {
  const ChainSpec* spec = static_cast<const ChainSpec*>(user_data);
  (void)n_inputs;
  af_error_t* err = nullptr;
  af_value_t* lit = nullptr;
  if (!spec->literal_per_eqn && (err = af_value_str(ctx, spec->lit, spec->lit_len, &lit))) return err;
  af_value_t* prev = af_value_clone(inputs[0]);
  for (size_t i = 0; i < spec->n; ++i) {
    af_value_t* l = lit;
    if (spec->literal_per_eqn && (err = af_value_str(ctx, spec->lit, spec->lit_len, &l))) break;
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

}  // namespace af_bench
