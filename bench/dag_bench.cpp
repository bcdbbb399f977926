// Shared sub-IRs and nested control flow (numbers in docs/PERFORMANCE.md,
// "Shared sub-IRs and nested control flow"): the work of a whole-graph pass
// grows with the distinct sub-IRs, not with the paths through them.
//
//  BM_Fan_<pass>           the crafted fan (fuzz/corpus/graph/fan_sub_irs_json:
//                          19 levels, each using the one below three times,
//                          2.3e9 equations once expanded, 1.5 KB saved):
//                          load, validate, hash, equal, text, dce, cse,
//                          sched, pushforward, batch, cost, compile, and
//                          pullback (refused by the transform budget: its
//                          result is exponential).
//  BM_NestedSwitch_Push/D  pushforward of a traced switch nested D deep;
//  BM_NestedSwitch_Pull/D  pullback (D = 5, 10, 20, 30: linear in D).
//  BM_NestedLoop_Push/D    the same for while_loop nested D deep, whose
//  BM_NestedLoop_Pull/D    rules iterate to a fixpoint (D = 5, 10, 20).
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "rt/env.h"
#include "exec/program.h"
#include "io/afg.h"
#include "ir/query.h"
#include "prims/control_flow.h"
#include "prims/ops.h"
#include "trace/trace.h"
#include "transforms/transforms.h"
#include "value/error.h"

namespace {

using af::IRPtr;
using af::Value;

af::RunEnv& env() {
  static af::RunEnv e;
  return e;
}

// The JSON form fuzz/crafted.py writes for fan(levels).
std::string fan_json(int levels) {
  std::string s =
      R"({"afg":1,"irs":[{"vars":["str"],"in":{"tree":[["*"]],"atoms":["%0"]},"eqns":[],"out":{"lit":true}},)"
      R"({"vars":["str","str"],"in":{"tree":[["*"]],"atoms":["%0"]},)"
      R"("eqns":[{"prim":"concat","out":"%1","in":["%0",{"lit":"!"}]}],"out":{"tree":["*"],"atoms":["%1"]}})";
  for (int k = 1; k <= levels; ++k) {
    const std::string below = std::to_string(k);
    s += R"(,{"vars":["str","str","str"],"in":{"tree":[["*"]],"atoms":["%0"]},"eqns":[)"
         R"({"prim":"switch","out":{"tree":["*"],"atoms":["%1"]},"in":{"tree":["*",["*"]],"atoms":[{"lit":"a"},"%0"]},)"
         R"("params":{"branches":{"ir_map":{"a":)" + below + R"(,"b":)" + below + R"(}}}},)"
         R"({"prim":"while_loop","out":{"tree":["*"],"atoms":["%2"]},"in":{"tree":[["*"]],"atoms":["%1"]},)"
         R"("params":{"body":{"ir":)" + below + R"(},"cond":{"ir":0},"max_iters":{"value":1}}}],)"
         R"("out":{"tree":["*"],"atoms":["%2"]}})";
  }
  return s + "]}";
}

const std::string& fan_bytes() {
  static std::string b = af::io::save_ir(*af::io::graph_from_json(fan_json(19)).ir);
  return b;
}

IRPtr load_fan() {
  const std::string& b = fan_bytes();
  return af::io::load_ir({reinterpret_cast<const uint8_t*>(b.data()), b.size()});
}

template <class F>
void fan_pass(benchmark::State& state, F pass) {
  IRPtr ir = load_fan(), other = load_fan();
  state.counters["file_bytes"] = double(fan_bytes().size());
  try {
    for (auto _ : state) pass(ir, other);
  } catch (const af::Error& e) {
    state.SkipWithError(e.what());
  }
}

void BM_Fan_Load(benchmark::State& state) {
  fan_pass(state, [](const IRPtr&, const IRPtr&) { benchmark::DoNotOptimize(load_fan()); });
}
void BM_Fan_Validate(benchmark::State& state) {
  fan_pass(state, [](const IRPtr& ir, const IRPtr&) { af::validate(*ir); });
}
void BM_Fan_Hash(benchmark::State& state) {
  // The top IR is hashed afresh each time; its sub-IRs' hashes are kept.
  fan_pass(state, [](const IRPtr& ir, const IRPtr&) { benchmark::DoNotOptimize(af::ir_hash(*ir)); });
}
void BM_Fan_Equal(benchmark::State& state) {
  fan_pass(state, [](const IRPtr& a, const IRPtr& b) { benchmark::DoNotOptimize(af::ir_equal(*a, *b)); });
}
void BM_Fan_Text(benchmark::State& state) {
  fan_pass(state, [](const IRPtr& ir, const IRPtr&) { benchmark::DoNotOptimize(af::to_text(*ir)); });
}
void BM_Fan_Dce(benchmark::State& state) {
  fan_pass(state, [](const IRPtr& ir, const IRPtr&) { benchmark::DoNotOptimize(af::dce(*ir, Value())); });
}
void BM_Fan_Cse(benchmark::State& state) {
  fan_pass(state, [](const IRPtr& ir, const IRPtr&) { benchmark::DoNotOptimize(af::cse(*ir)); });
}
void BM_Fan_Sched(benchmark::State& state) {
  fan_pass(state, [](const IRPtr& ir, const IRPtr&) { benchmark::DoNotOptimize(af::sched(*ir)); });
}
void BM_Fan_Pushforward(benchmark::State& state) {
  fan_pass(state, [](const IRPtr& ir, const IRPtr&) { benchmark::DoNotOptimize(af::pushforward(*ir)); });
}
void BM_Fan_Batch(benchmark::State& state) {
  fan_pass(state, [](const IRPtr& ir, const IRPtr&) { benchmark::DoNotOptimize(af::batch(ir, Value())); });
}
void BM_Fan_Cost(benchmark::State& state) {
  fan_pass(state, [](const IRPtr& ir, const IRPtr&) { benchmark::DoNotOptimize(af::cost_json(*ir, 1)); });
}
void BM_Fan_Compile(benchmark::State& state) {
  fan_pass(state, [](const IRPtr& ir, const IRPtr&) { benchmark::DoNotOptimize(af::compile(ir, {})); });
}
// Refused once the transform has built its budget (2^20 variables and
// equations): the time to the refusal.
void BM_Fan_PullbackRefused(benchmark::State& state) {
  IRPtr ir = load_fan();
  for (auto _ : state) {
    try {
      benchmark::DoNotOptimize(af::pullback(*ir));
      state.SkipWithError("the pullback of the fan was not refused");
      return;
    } catch (const af::Error&) {
    }
  }
}

// switch nested `depth` deep (as tests/core/shared_subir_test.cpp).
IRPtr nested_switches(int depth) {
  const Value ex[2] = {Value::str("go"), Value::str("x")};
  IRPtr stop = af::trace([](std::span<const Value> in) { return in[1]; }, ex, Value());
  IRPtr ir = af::trace(
      [](std::span<const Value> in) { return af::op_concat(std::vector<Value>{in[1], Value::str(".")}, env()); },
      ex, Value());
  const std::vector<std::string> names{"go", "stop"};
  for (int k = 1; k <= depth; ++k) {
    const std::vector<IRPtr> branches{ir, stop};
    ir = af::trace(
        [&](std::span<const Value> in) {
          Value y = af::op_concat(std::vector<Value>{in[1], Value::str("k")}, env());
          return af::op_switch(in[0], names, branches, std::vector<Value>{in[0], y}, env());
        },
        ex, Value());
  }
  return ir;
}

// while_loop nested `depth` deep; the innermost body moves a's tangent
// into b, so every loop rule's fixpoint takes two rounds.
IRPtr nested_loops(int depth) {
  const Value state[1] = {Value::list({Value::str("a"), Value::str("b")})};
  IRPtr always = af::trace([](std::span<const Value>) { return Value::boolean(true); }, state, Value());
  IRPtr body = af::trace(
      [](std::span<const Value> in) {
        const Value& s = in[0];
        return Value::list({af::op_concat(std::vector<Value>{s.items()[0], Value::str(".")}, env()),
                            af::op_concat(std::vector<Value>{s.items()[1], s.items()[0]}, env())});
      },
      state, Value());
  for (int k = 1; k < depth; ++k) {
    IRPtr inner = body;
    body = af::trace(
        [&](std::span<const Value> in) {
          const Value& s = in[0];
          Value a = af::op_concat(std::vector<Value>{s.items()[0], Value::str("k")}, env());
          return af::op_while_loop(always, inner, Value::list({a, s.items()[1]}), 1, env());
        },
        state, Value());
  }
  const Value ex[2] = {Value::str("a"), Value::str("b")};
  return af::trace(
      [&](std::span<const Value> in) {
        return af::op_while_loop(always, body, Value::list({in[0], in[1]}), 1, env());
      },
      ex, Value());
}

template <class Make, class F>
void nested(benchmark::State& state, Make make, F transform) {
  IRPtr ir = make(int(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(transform(*ir));
  state.counters["per_level"] =
      benchmark::Counter(double(state.range(0)), benchmark::Counter::kIsIterationInvariantRate |
                                                     benchmark::Counter::kInvert);
}

void BM_NestedSwitch_Push(benchmark::State& state) { nested(state, nested_switches, af::pushforward); }
void BM_NestedSwitch_Pull(benchmark::State& state) { nested(state, nested_switches, af::pullback); }
void BM_NestedLoop_Push(benchmark::State& state) { nested(state, nested_loops, af::pushforward); }
void BM_NestedLoop_Pull(benchmark::State& state) { nested(state, nested_loops, af::pullback); }

}  // namespace

BENCHMARK(BM_Fan_Load)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Fan_Validate)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Fan_Hash)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Fan_Equal)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Fan_Text)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Fan_Dce)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Fan_Cse)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Fan_Sched)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Fan_Pushforward)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Fan_Batch)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Fan_Cost)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Fan_Compile)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Fan_PullbackRefused)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_NestedSwitch_Push)->Arg(5)->Arg(10)->Arg(20)->Arg(30)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_NestedSwitch_Pull)->Arg(5)->Arg(10)->Arg(20)->Arg(30)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_NestedLoop_Push)->Arg(5)->Arg(10)->Arg(20)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_NestedLoop_Pull)->Arg(5)->Arg(10)->Arg(20)->Unit(benchmark::kMicrosecond);
