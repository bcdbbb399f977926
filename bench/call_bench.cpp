// Calling a traced chain of N concat equations. Target: <= 250 ns per
// equation. Two chains, reported separately (see bench/README.md):
//
//  Bounded (the honest engine-overhead measure):
//    y_0 = x (a str of `payload` bytes), y_i = concat(y_{i-1}, "")
//    Every equation is a real concat on the previous result (a strict
//    dependency chain, nothing can be skipped or reordered), and every
//    equation builds a new string of exactly `payload` bytes, so the work per
//    equation is constant and the time per equation is the engine's overhead
//    plus one fixed-size string build.
//
//  Growing (the naive chain, the same IR that trace_bench.cpp traces):
//    y_0 = x = "x", y_i = concat(y_{i-1}, "x")
//    y_i has i+1 bytes, so one call copies ~N^2/2 bytes (50 MB for N=10000):
//    its time per equation is dominated by memcpy/malloc, not by the engine.
//
// Each family is run through the C++ API (af::compile once, the sequential
// driver per iteration; plus af::call, which checks and compiles on every
// call) and through the C API (af_ir_call, which compiles once per IR
// structure through the context's plan cache and wraps
// input/output handles per call). BM_Floor_* does the same string builds
// with no engine at all, so engine overhead = Call - Floor, in one run.
//
// Counters: eqn_per_s is equations per second; sec_per_eqn is its inverse,
// printed with an SI prefix (e.g. "95.2n" = 95.2 ns per equation). Both use
// CPU time, like the Time/CPU columns.
#include <af/af.h>
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <span>
#include <string>
#include <vector>

#include "chains.h"
#include "exec/sequential.h"
#include "value/value.h"

namespace {

constexpr int64_t kN = 10000;

using af_bench::set_eqn_counters;

// Bytes the chain's equations write per call: sum of the output lengths.
int64_t chain_bytes(bool growing, int64_t n, int64_t payload) {
  return growing ? (n * (n + 1)) / 2 + n /* y_i has i+1 bytes */ : n * payload;
}

// ---------------------------------------------------------------- C++ API

struct CppChain {
  af::Value input;
  af::IRPtr ir;
  std::string expected;
};

// growing: concat(prev, "x") from "x"; else concat(prev, "") from `payload`
// bytes of 'p'.
CppChain make_cpp_chain(bool growing, size_t n, size_t payload) {
  CppChain c;
  c.input = af::Value::str(growing ? std::string("x") : std::string(payload, 'p'));
  c.ir = af_bench::trace_chain_cpp(n, c.input, af::Value::str(growing ? "x" : ""));
  c.expected = growing ? std::string(n + 1, 'x') : std::string(payload, 'p');
  return c;
}

bool output_ok(const af::Value& out, const CppChain& c) {
  return out.kind() == af::Kind::Str && out.as_str() == c.expected;
}

// af::compile once, the sequential driver per iteration (inputs checked once, untimed).
void call_run_cpp(benchmark::State& state, bool growing) {
  const size_t n = size_t(state.range(0));
  const size_t payload = growing ? 1 : size_t(state.range(1));
  CppChain c = make_cpp_chain(growing, n, payload);
  af::RunEnv env;
  auto plan = af::compile(c.ir);
  const std::vector<af::Value> leaves = af::check_inputs(*c.ir, std::span(&c.input, 1));
  if (c.ir->eqns.size() != n || !output_ok(plan->ir->out_tree.unflatten(af::run_sequential(*plan, leaves, env)), c)) {
    state.SkipWithError("the chain does not compute what it claims");
    return;
  }
  for (auto _ : state) {
    af::Value out = plan->ir->out_tree.unflatten(af::run_sequential(*plan, leaves, env));
    benchmark::DoNotOptimize(out);
  }
  set_eqn_counters(state, int64_t(n));
  state.SetBytesProcessed(state.iterations() * chain_bytes(growing, int64_t(n), int64_t(payload)));
}

// af::call per iteration: check_inputs + compile + run every time.
void call_call_cpp(benchmark::State& state, bool growing) {
  const size_t n = size_t(state.range(0));
  const size_t payload = growing ? 1 : size_t(state.range(1));
  CppChain c = make_cpp_chain(growing, n, payload);
  af::RunEnv env;
  if (!output_ok(af::call(c.ir, std::span(&c.input, 1), env), c)) {
    state.SkipWithError("the chain does not compute what it claims");
    return;
  }
  for (auto _ : state) {
    af::Value out = af::call(c.ir, std::span(&c.input, 1), env);
    benchmark::DoNotOptimize(out);
  }
  set_eqn_counters(state, int64_t(n));
  state.SetBytesProcessed(state.iterations() * chain_bytes(growing, int64_t(n), int64_t(payload)));
}

void BM_Call_Bounded_CppRun(benchmark::State& s) { call_run_cpp(s, false); }
void BM_Call_Bounded_CppCall(benchmark::State& s) { call_call_cpp(s, false); }
void BM_Call_Growing_CppRun(benchmark::State& s) { call_run_cpp(s, true); }
void BM_Call_Growing_CppCall(benchmark::State& s) { call_call_cpp(s, true); }

// ---------------------------------------------------------------- floor

// The string work of the bounded chain without the engine: N times build a
// `payload`-byte str Value from the previous one the way concat's impl does
// (reserve + append + Value::str), keeping every result alive until the end
// like the interpreter's slot array does.
void BM_Floor_Bounded_StrBuild(benchmark::State& state) {
  const size_t n = size_t(state.range(0));
  const size_t payload = size_t(state.range(1));
  const af::Value input = af::Value::str(std::string(payload, 'p'));
  const af::Value lit = af::Value::str("");
  std::vector<af::Value> slots;
  for (auto _ : state) {
    slots.assign(n + 1, af::Value());
    slots[0] = input;
    for (size_t i = 1; i <= n; ++i) {
      const std::string& a = slots[i - 1].as_str();
      const std::string& b = lit.as_str();
      std::string s;
      s.reserve(a.size() + b.size());
      s += a;
      s += b;
      slots[i] = af::Value::str(std::move(s));
    }
    benchmark::DoNotOptimize(slots.back());
    slots.clear();
  }
  set_eqn_counters(state, int64_t(n));
}

// ---------------------------------------------------------------- C API

void call_c(benchmark::State& state, bool growing) {
  const size_t n = size_t(state.range(0));
  const size_t payload = growing ? 1 : size_t(state.range(1));
  const std::string input_str = growing ? std::string("x") : std::string(payload, 'p');
  const std::string expected = growing ? std::string(n + 1, 'x') : input_str;
  af_bench::ChainSpec spec{.n = n, .lit = growing ? "x" : "", .lit_len = growing ? size_t(1) : size_t(0)};

  af_context_t* ctx = nullptr;
  af_value_t* input = nullptr;
  af_ir_t* ir = nullptr;
  af_value_t* out = nullptr;
  af_error_t* err = af_context_new(&ctx);
  if (!err) err = af_value_str(ctx, input_str.data(), input_str.size(), &input);
  if (!err) err = af_trace(ctx, af_bench::chain_fn, &spec, &input, 1, nullptr, &ir);
  if (!err) err = af_ir_call(ctx, ir, &input, 1, &out);  // also compiles (once, plan cache)
  const char* s = nullptr;
  size_t len = 0;
  if (!err) err = af_value_get_str(out, &s, &len);
  if (err || af_ir_eqn_count(ir) != n || std::string(s, len) != expected) {
    state.SkipWithError(err ? af_error_message(err) : "the chain does not compute what it claims");
  } else {
    for (auto _ : state) {
      af_value_t* o = nullptr;
      af_error_t* e = af_ir_call(ctx, ir, &input, 1, &o);
      if (e) {
        state.SkipWithError(af_error_message(e));
        af_error_free(e);
        break;
      }
      af_value_free(o);
    }
    set_eqn_counters(state, int64_t(n));
    state.SetBytesProcessed(state.iterations() *
                            chain_bytes(growing, int64_t(n), int64_t(payload)));
  }
  af_error_free(err);
  af_value_free(out);
  af_ir_free(ir);
  af_value_free(input);
  af_context_free(ctx);
}

// The first call of a freshly traced IR through the C API: af_ir_call on a
// new handle in a new context (nothing cached), i.e. hash + compile + run —
// what a program called once pays. Tracing, the context and freeing are
// outside the timed part. Compare with BM_Call_Bounded_C (later calls).
void BM_FirstCall_C(benchmark::State& state) {
  const size_t n = size_t(state.range(0));
  af_bench::ChainSpec spec{.n = n, .lit = "", .lit_len = 0};
  long faults = 0;
  for (auto _ : state) {
    state.PauseTiming();
    af_context_t* ctx = nullptr;
    af_value_t* input = nullptr;
    af_ir_t* ir = nullptr;
    af_value_t* out = nullptr;
    af_error_t* err = af_context_new(&ctx);
    if (!err) err = af_value_str(ctx, "p", 1, &input);
    if (!err) err = af_trace(ctx, af_bench::chain_fn, &spec, &input, 1, nullptr, &ir);
    rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    state.ResumeTiming();
    if (!err) err = af_ir_call(ctx, ir, &input, 1, &out);
    state.PauseTiming();
    getrusage(RUSAGE_SELF, &r1);
    faults += r1.ru_minflt - r0.ru_minflt;
    if (err) {
      state.SkipWithError(af_error_message(err));
      af_error_free(err);
    }
    af_value_free(out);
    af_ir_free(ir);
    af_value_free(input);
    af_context_free(ctx);
    state.ResumeTiming();
    if (err) break;
  }
  set_eqn_counters(state, int64_t(n));
  state.counters["faults_per_call"] = double(faults) / double(state.iterations());
}
BENCHMARK(BM_FirstCall_C)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);

void BM_Call_Bounded_C(benchmark::State& s) { call_c(s, false); }
void BM_Call_Growing_C(benchmark::State& s) { call_c(s, true); }

// payload 1 fits std::string's small buffer (one allocation per equation:
// the Value's heap node); payload 256 adds a second allocation and a copy.
#define AF_BOUNDED_ARGS                  \
  ArgNames({"n", "payload"})             \
      ->Args({kN, 1})                    \
      ->Args({kN, 256})                  \
      ->Unit(benchmark::kMicrosecond)

BENCHMARK(BM_Floor_Bounded_StrBuild)->AF_BOUNDED_ARGS;
BENCHMARK(BM_Call_Bounded_CppRun)->AF_BOUNDED_ARGS;
BENCHMARK(BM_Call_Bounded_CppCall)->AF_BOUNDED_ARGS;
BENCHMARK(BM_Call_Bounded_C)->AF_BOUNDED_ARGS;

BENCHMARK(BM_Call_Growing_CppRun)->ArgName("n")->Arg(kN)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Call_Growing_CppCall)->ArgName("n")->Arg(kN)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Call_Growing_C)->ArgName("n")->Arg(kN)->Unit(benchmark::kMillisecond);

}  // namespace
