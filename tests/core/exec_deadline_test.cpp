// Every run can be stopped: a control-flow primitive that loops without LM
// calls (while_loop, while_scan, scan, map, and a switch branch holding such
// a loop) ends with TIMEOUT close to its deadline, a cancelled async run
// frees its worker, and destroying the context then returns. The loops poll
// RunEnv::check_stop (exec/env.h) every iteration.
#include <gtest/gtest.h>

#include <chrono>
#include <limits>
#include <memory>
#include <thread>

#include "exec/context.h"
#include "exec/executor.h"
#include "exec/program.h"
#include "ir/ir.h"
#include "prims/control_flow.h"
#include "prims/ops.h"
#include "ir/registry.h"
#include "trace/trace.h"
#include "transforms/batch.h"
#include "transforms/builder.h"
#include "value/error.h"

namespace af {
namespace {

constexpr int64_t kForever = std::numeric_limits<int64_t>::max();

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Traces fn on examples, a JSON list of positional inputs.
IRPtr trace_on(const char* examples, const std::function<Value(std::span<const Value>)>& fn) {
  return trace(fn, from_json(examples).items(), Value());
}

// Each case: a program that never finishes by itself.
struct Case {
  const char* name;
  std::function<IRPtr(RunEnv&)> make;
  const char* inputs;  // JSON list of positional inputs
};

IRPtr spin_loop(RunEnv& env) {
  IRPtr always = trace_on(R"(["x"])", [&](auto in) { return op_match(in[0], in[0], env); });
  IRPtr same = trace_on(R"(["x"])", [&](auto in) { return in[0]; });
  return trace_on(R"(["x"])", [&, always, same](auto in) { return op_while_loop(always, same, in[0], uint64_t(kForever), env); });
}

std::vector<Case> cases() {
  return {
      {"while_loop", spin_loop, R"(["s"])"},
      {"switch", [](RunEnv& env) {
         IRPtr loop = spin_loop(env);
         IRPtr done = trace_on(R"(["x"])", [](auto in) { return in[0]; });
         const std::vector<std::string> names{"done", "loop"};
         const std::vector<IRPtr> branches{done, loop};
         return trace_on(R"(["k", "x"])", [&](auto in) {
           return op_switch(in[0], names, branches, std::vector<Value>{in[1]}, env);
         });
       }, R"(["loop", "s"])"},
      {"map", [](RunEnv& env) { return batch(spin_loop(env), from_json("[true]")); }, R"([["a", "b"]])"},
      {"while_scan", [](RunEnv& env) {
         IRPtr always = trace_on(R"(["x"])", [&](auto in) { return op_match(in[0], in[0], env); });
         IRPtr same = trace_on(R"(["x"])", [](auto in) { return in[0]; });
         Params p;
         p.set("cond", flat_signature(*always));
         p.set("body", flat_signature(*same));
         p.set("max_iters", Value::integer(kForever));
         return trace_on(R"(["x"])", [&](auto in) {
           return bind_flat(prim("while_scan"), p, {in[0]}, env).items()[0];
         });
       }, R"(["s"])"},
      // A literal count no memory could hold: nothing may be sized by it.
      {"scan", [](RunEnv& env) {
         IRPtr body = trace_on(R"(["c"])", [](auto in) { return Value::list({in[0], in[0]}); });
         Params p;
         p.set("body", flat_signature(*body));
         p.set("n_xs", Value::integer(0));
         p.set("reverse", Value::boolean(false));
         return trace_on(R"(["x"])", [&](auto in) {
           return bind_flat(prim("scan"), p, {Value::integer(kForever), in[0]}, env).items()[0];
         });
       }, R"(["s"])"},
  };
}

// Generous bound: the loops stop within microseconds of the deadline; a
// loaded machine may delay the timer thread or the waiting one.
constexpr double kSlackMs = 800;

TEST(ExecDeadline, EveryControlFlowLoopEndsAtTheRunDeadline) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    ExecContext ctx;
    RunEnv env{&ctx};
    IRPtr ir = c.make(env);
    // The case holds the primitive it is named for (a literal count for scan).
    EXPECT_NE(to_text(*ir).find(std::string(c.name) + "["), std::string::npos) << to_text(*ir);
    auto prog = compile(ir);
    RunOptions o;
    o.timeout_ms = 100;
    auto t0 = Clock::now();
    try {
      run_sync(env, prog, from_json(c.inputs).items(), o);
      ADD_FAILURE() << "finished";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Code::Timeout) << e.what();
    }
    double took = ms_since(t0);
    EXPECT_GE(took, 95);
    EXPECT_LT(took, 100 + kSlackMs);
  }
}

TEST(ExecDeadline, AsyncRunsTimeOutAndTheContextThenGoes) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    auto ctx = std::make_unique<ExecContext>();
    RunEnv env{ctx.get()};
    auto prog = compile(c.make(env));
    RunOptions o;
    o.timeout_ms = 100;
    auto t0 = Clock::now();
    Future f = run_async(env, prog, from_json(c.inputs).items(), o);
    try {
      f.wait();
      ADD_FAILURE() << "finished";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Code::Timeout) << e.what();
    }
    EXPECT_LT(ms_since(t0), 100 + kSlackMs);
    // The worker that ran the loop is free again: the context's destructor
    // joins it.
    t0 = Clock::now();
    ctx.reset();
    EXPECT_LT(ms_since(t0), kSlackMs);
  }
}

TEST(ExecDeadline, ARunStillLoopingIsStoppedWhenItsContextGoes) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    auto ctx = std::make_unique<ExecContext>();
    RunEnv env{ctx.get()};
    auto prog = compile(c.make(env));
    Future f = run_async(env, prog, from_json(c.inputs).items());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // let it spin
    auto t0 = Clock::now();
    ctx.reset();
    EXPECT_LT(ms_since(t0), kSlackMs);
    ASSERT_TRUE(f.ready());
    try {
      f.wait();
      ADD_FAILURE() << "finished";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Code::Cancelled) << e.what();
    }
  }
}

}  // namespace
}  // namespace af
