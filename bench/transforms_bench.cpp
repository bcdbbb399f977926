// Transforms: how long each IR -> IR transform takes, and how fast a batched
// program runs per item (numbers in docs/PERFORMANCE.md, "Transforms").
//
//  BM_Batch_Run_*          a 10-equation string program (5 format + 5
//                          concat) batched over N items, run once per
//                          iteration. Counter sec_per_item_eqn = time /
//                          (N * 10). Target: <= 300 ns. BM_Batch_Baseline
//                          calls the unbatched program N times (the same
//                          work item by item) for the ratio, in one run.
//  BM_Pullback_Chain/N     pullback of an N-equation concat chain (transform
//                          time only); N = 1k, 10k, 100k shows it is linear.
//  BM_Transform_10k_*      every transform of a 10 000-equation IR (a chain
//                          alternating format and concat). Target: < 20 ms.
#include <af/af.h>
#include <benchmark/benchmark.h>

#include <cstring>
#include <initializer_list>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "rt/env.h"
#include "exec/sequential.h"
#include "ir/ir.h"
#include "prims/ops.h"
#include "trace/trace.h"
#include "transforms/transforms.h"
#include "value/value.h"

namespace {

using af::Value;

af::RunEnv& env() {
  static af::RunEnv e;
  return e;
}

// The 10-equation program f(x, y).
af::IRPtr ten_equation_program() {
  const Value ex[2] = {Value::str("x"), Value::str("y")};
  return af::trace(
      [](std::span<const Value> in) {
        auto cat = [](std::vector<Value> v) { return af::op_concat(v, env()); };
        auto fmt = [](const char* t, std::vector<Value> v) { return af::op_format(t, v, Value(), env()); };
        Value a = fmt("Q: {}", {in[0]});
        Value b = cat({a, Value::str(" / "), in[1]});
        Value c = fmt("{}|{}", {b, in[0]});
        Value d = cat({c, Value::str("!")});
        Value e = fmt("<{}>", {d});
        Value f = cat({e, in[1]});
        Value g = fmt("{} {}", {f, a});
        Value h = cat({g, Value::str("?")});
        Value i = fmt("[{}]", {h});
        return cat({i, Value::str(".")});
      },
      ex, Value());
}

std::vector<Value> batch_inputs(size_t n) {
  std::vector<Value> xs, ys;
  xs.reserve(n);
  ys.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    xs.push_back(Value::str("item" + std::to_string(i)));
    ys.push_back(Value::str("y"));
  }
  return {Value::list(std::move(xs)), Value::list(std::move(ys))};
}

void per_item_counters(benchmark::State& state, double item_eqns) {
  state.counters["sec_per_item_eqn"] =
      benchmark::Counter(item_eqns, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void BM_Batch_Run_Cpp(benchmark::State& state) {
  const size_t n = size_t(state.range(0));
  af::IRPtr ir = ten_equation_program();
  af::IRPtr b = af::batch(ir, Value());
  std::vector<Value> in = batch_inputs(n);
  std::vector<Value> leaves = af::check_inputs(*b, in);
  auto plan = af::compile(b);
  {  // untimed check: item 7 equals the unbatched program on item 7
    Value out = plan->ir->out_tree.unflatten(af::run_sequential(*plan, leaves, env()));
    const Value one[2] = {in[0].items()[7], in[1].items()[7]};
    if (ir->eqns.size() != 10 || out.size() != n || !(out.items()[7] == af::call(ir, one, env()))) {
      state.SkipWithError("the batched program does not compute the program per item");
      return;
    }
  }
  for (auto _ : state) {
    Value out = plan->ir->out_tree.unflatten(af::run_sequential(*plan, leaves, env()));
    benchmark::DoNotOptimize(out);
  }
  per_item_counters(state, double(n) * 10);
}

// Records the C API operations of a traced function; the first error wins
// and later operations are skipped.
struct CTrace {
  af_context_t* c;
  af_error_t* err = nullptr;
  std::vector<af_value_t*> owned;

  ~CTrace() {
    for (af_value_t* v : owned) af_value_free(v);
  }
  // Runs op (which makes *v) unless an earlier operation failed.
  template <class Op>
  const af_value_t* make(Op op) {
    if (err) return nullptr;
    af_value_t* v = nullptr;
    err = op(&v);
    owned.push_back(v);
    return v;
  }
  const af_value_t* str(const char* s) {
    return make([&](af_value_t** v) { return af_value_str(c, s, strlen(s), v); });
  }
  const af_value_t* fmt(const char* t, std::initializer_list<const af_value_t*> args) {
    return make([&](af_value_t** v) { return af_format(c, t, strlen(t), args.begin(), args.size(), nullptr, v); });
  }
  const af_value_t* cat(std::initializer_list<const af_value_t*> args) {
    return make([&](af_value_t** v) { return af_concat(c, args.begin(), args.size(), v); });
  }
};

// The 10-equation program of ten_equation_program, through the C API.
af_error_t* ten_equations_c(void*, af_context_t* c, const af_value_t* const* in, size_t, af_value_t** out) {
  CTrace t{c};
  const af_value_t* a = t.fmt("Q: {}", {in[0]});
  const af_value_t* b = t.cat({a, t.str(" / "), in[1]});
  const af_value_t* cc = t.fmt("{}|{}", {b, in[0]});
  const af_value_t* d = t.cat({cc, t.str("!")});
  const af_value_t* e = t.fmt("<{}>", {d});
  const af_value_t* f = t.cat({e, in[1]});
  const af_value_t* g = t.fmt("{} {}", {f, a});
  const af_value_t* h = t.cat({g, t.str("?")});
  const af_value_t* i = t.fmt("[{}]", {h});
  const af_value_t* j = t.cat({i, t.str(".")});
  if (t.err) return std::exchange(t.err, nullptr);
  *out = af_value_clone(j);
  return nullptr;
}

// The same batched run as BM_Batch_Run_Cpp, traced, batched and called
// through the C API (af_trace, af_batch, af_ir_call).
void BM_Batch_Run_C(benchmark::State& state) {
  const size_t n = size_t(state.range(0));
  std::vector<Value> in = batch_inputs(n);
  af_context_t* ctx = nullptr;
  af_value_t* ex[2] = {nullptr, nullptr};
  af_value_t* args[2] = {nullptr, nullptr};
  af_ir_t* traced = nullptr;
  af_ir_t* batched = nullptr;
  const std::string json0 = af::to_json(in[0]), json1 = af::to_json(in[1]);
  af_error_t* err = af_context_new(&ctx);
  if (!err) err = af_value_str(ctx, "x", 1, &ex[0]);
  if (!err) err = af_value_str(ctx, "y", 1, &ex[1]);
  if (!err) err = af_trace(ctx, ten_equations_c, nullptr, ex, 2, nullptr, &traced);
  if (!err) err = af_batch(ctx, traced, nullptr, &batched);
  if (!err) err = af_value_from_json(ctx, json0.data(), json0.size(), &args[0]);
  if (!err) err = af_value_from_json(ctx, json1.data(), json1.size(), &args[1]);
  if (!err && af_ir_eqn_count(traced) != 10)
    err = af_error_new(AF_ERR_INTERNAL, "not 10 equations", 16);
  for (auto _ : state) {
    if (err) break;
    af_value_t* out = nullptr;
    err = af_ir_call(ctx, batched, args, 2, &out);
    af_value_free(out);
  }
  if (err) {
    state.SkipWithError(af_error_message(err));
    af_error_free(err);
  } else {
    per_item_counters(state, double(n) * 10);
  }
  for (af_value_t* v : {ex[0], ex[1], args[0], args[1]}) af_value_free(v);
  af_ir_free(traced);
  af_ir_free(batched);
  af_context_free(ctx);
}

void BM_Batch_Baseline_PerItemCalls(benchmark::State& state) {
  const size_t n = size_t(state.range(0));
  af::IRPtr ir = ten_equation_program();
  std::vector<Value> in = batch_inputs(n);
  auto plan = af::compile(ir);
  for (auto _ : state) {
    for (size_t i = 0; i < n; ++i) {
      const Value leaves[2] = {in[0].items()[i], in[1].items()[i]};
      Value out = plan->ir->out_tree.unflatten(af::run_sequential(*plan, leaves, env()));
      benchmark::DoNotOptimize(out);
    }
  }
  per_item_counters(state, double(n) * 10);
}

af::IRPtr concat_chain(size_t n) {
  const Value ex = Value::str("x");
  return af::trace(
      [n](std::span<const Value> in) {
        Value v = in[0];
        const Value lit = Value::str("x");
        for (size_t i = 0; i < n; ++i) {
          const Value args[2] = {v, lit};
          v = af::op_concat(args, env());
        }
        return v;
      },
      std::span<const Value>(&ex, 1), Value());
}

// A chain alternating format and concat: the 10k IR of the transform targets.
af::IRPtr mixed_chain(size_t n) {
  const Value ex[2] = {Value::str("x"), Value::str("y")};
  return af::trace(
      [n](std::span<const Value> in) {
        Value v = in[0];
        for (size_t i = 0; i < n; ++i) {
          if (i % 2) {
            const Value args[2] = {v, in[1]};
            v = af::op_concat(args, env());
          } else {
            v = af::op_format("({})", std::span<const Value>(&v, 1), Value(), env());
          }
        }
        return v;
      },
      ex, Value());
}

void BM_Pullback_Chain(benchmark::State& state) {
  const size_t n = size_t(state.range(0));
  af::IRPtr ir = concat_chain(n);
  for (auto _ : state) {
    af::IRPtr pb = af::pullback(*ir);
    benchmark::DoNotOptimize(pb.get());
  }
  state.counters["eqns"] = double(n);
  state.counters["sec_per_eqn"] =
      benchmark::Counter(double(n), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

template <class F>
void transform_10k(benchmark::State& state, F f) {
  af::IRPtr ir = mixed_chain(10000);
  {
    af::IRPtr t = f(ir);
    if (!t) {
      state.SkipWithError("the transform made nothing");
      return;
    }
    af::validate(*t);
  }
  for (auto _ : state) {
    af::IRPtr t = f(ir);
    benchmark::DoNotOptimize(t.get());
  }
  state.counters["eqns"] = 10000;
}

void BM_Transform_10k_Batch(benchmark::State& s) { transform_10k(s, [](const af::IRPtr& ir) { return af::batch(ir, Value()); }); }
void BM_Transform_10k_Pushforward(benchmark::State& s) { transform_10k(s, [](const af::IRPtr& ir) { return af::pushforward(*ir); }); }
void BM_Transform_10k_Pullback(benchmark::State& s) { transform_10k(s, [](const af::IRPtr& ir) { return af::pullback(*ir); }); }
void BM_Transform_10k_Dce(benchmark::State& s) { transform_10k(s, [](const af::IRPtr& ir) { return af::dce(*ir, Value()); }); }
void BM_Transform_10k_Cse(benchmark::State& s) { transform_10k(s, [](const af::IRPtr& ir) { return af::cse(*ir); }); }
void BM_Transform_10k_Sched(benchmark::State& s) { transform_10k(s, [](const af::IRPtr& ir) { return af::sched(*ir); }); }

}  // namespace

BENCHMARK(BM_Batch_Run_Cpp)->Arg(100000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Batch_Run_C)->Arg(100000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Batch_Baseline_PerItemCalls)->Arg(100000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Pullback_Chain)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Transform_10k_Batch)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Transform_10k_Pushforward)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Transform_10k_Pullback)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Transform_10k_Dce)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Transform_10k_Cse)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Transform_10k_Sched)->Unit(benchmark::kMillisecond);
