// The compiled Program and the dataflow executor, on test primitives: an
// async one that answers from its own thread after a delay (counting how
// many are in flight at once), and a sync one that fails.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "expect_error.h"
#include "rt/async.h"
#include "exec/context.h"
#include "exec/executor.h"
#include "exec/program.h"
#include "prims/control_flow.h"
#include "prims/ops.h"
#include "ir/registry.h"
#include "trace/trace.h"
#include "value/error.h"

namespace af {
namespace {

std::atomic<int> g_in_flight{0}, g_peak{0}, g_cancel_hooks{0};

AbstractOut str_out(const Params&, std::span<const Aval>, const TreeDef&) {
  return AbstractOut{{Aval{Kind::Str, 0}}, TreeDef::leaf()};
}

// exec_test.delay(x; ms P) -> x + "." after ms, completed from another thread.
void delay_async(const Eqn& e, std::span<const Value> in, std::shared_ptr<AsyncOp> op, RunEnv&) {
  int64_t ms = e.params.value("ms").as_int();
  std::string s = in[0].as_str() + ".";
  int now = ++g_in_flight;
  for (int p = g_peak; now > p && !g_peak.compare_exchange_weak(p, now);) {
  }
  auto cancelled = std::make_shared<std::atomic<bool>>(false);
  op->on_cancel([cancelled] {
    *cancelled = true;
    ++g_cancel_hooks;
  });
  std::thread([op, ms, s, cancelled] {
    for (int64_t t = 0; t < ms && !*cancelled; ++t) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    --g_in_flight;
    op->succeed({Value::str(s)});
  }).detach();
}

void fail_impl(const Eqn&, std::span<const Value>, std::span<Value>, RunEnv&) {
  throw Error(Code::Provider, "exec_test.fail always fails");
}

const Prim& delay_prim() {
  static const Prim* p = [] {
    Prim d;
    d.name = "exec_test.delay";
    d.cost = 100;
    d.impl = [](const Eqn& e, std::span<const Value> in, std::span<Value> out, RunEnv& env) {
      run_async_blocking(e, in, out, env);
    };
    d.impl_async = delay_async;
    d.abstract_eval = str_out;
    return register_prim(d);
  }();
  return *p;
}

const Prim& fail_prim() {
  static const Prim* p = [] {
    Prim f;
    f.name = "exec_test.fail";
    f.impl = fail_impl;
    f.abstract_eval = str_out;
    return register_prim(f);
  }();
  return *p;
}

struct Env {
  ExecContext ctx;
  RunEnv env{&ctx};
};

Value delay(const Value& x, int64_t ms, RunEnv& env) {
  Params p;
  p.set("ms", Value::integer(ms));
  return bind_flat(delay_prim(), std::move(p), {x}, env);
}

IRPtr trace1(const std::function<Value(const Value&, RunEnv&)>& f, RunEnv& env) {
  std::vector<Value> ex{Value::str("x")};
  return trace([&](std::span<const Value> in) { return f(in[0], env); }, ex, Value());
}

TEST(ExecProgram, DceCseAndPriorities) {
  Env e;
  IRPtr ir = trace1(
      [](const Value& x, RunEnv& env) {
        Value a = op_concat(std::vector<Value>{x, Value::str("!")}, env);
        Value b = op_concat(std::vector<Value>{x, Value::str("!")}, env);  // same as a: merged
        op_concat(std::vector<Value>{x, Value::str("unused")}, env);      // dead
        Value slow = delay(delay(a, 1, env), 1, env);                       // a chain of two
        Value fast = delay(b, 2, env);  // differs by its param: kept
        return Value::list({slow, fast});
      },
      e.env);
  auto prog = compile(ir);
  EXPECT_EQ(prog->merged_cse, 1u);
  EXPECT_EQ(prog->removed_dce, 1u);
  ASSERT_EQ(prog->nodes.size(), 4u);  // concat, delay, delay, delay
  EXPECT_EQ(prog->nodes[0].priority, 1 + 100 + 100);  // concat -> delay -> delay
  EXPECT_EQ(prog->critical_path, 201);
  EXPECT_EQ(prog->roots, std::vector<uint32_t>{0});
  EXPECT_EQ(prog->n_async, 3u);
  Value out = run_sync(e.env, prog, {Value::str("q")});
  EXPECT_EQ(to_json(out), R"(["q!..","q!."])");
}

// A switch whose branch does async work runs async (holding no thread) and
// weighs like its heaviest branch; a switch over cheap work stays inline.
TEST(ExecProgram, ControlFlowAroundAsyncWorkIsAsyncAndWeighsLikeIt) {
  Env e;
  IRPtr slow = trace1([](const Value& x, RunEnv& env) { return delay(delay(x, 1, env), 1, env); }, e.env);
  IRPtr cheap = trace1([](const Value& x, RunEnv& env) { return op_concat(std::vector<Value>{x, x}, env); }, e.env);
  const std::vector<std::string> names{"a", "b"};
  auto with_branches = [&](IRPtr a, IRPtr b) {
    const std::vector<IRPtr> branches{a, b};
    return trace1([&](const Value& x, RunEnv& env) { return op_switch(x, names, branches, std::vector<Value>{x}, env); },
                  e.env);
  };
  auto async_prog = compile(with_branches(slow, cheap));
  ASSERT_EQ(async_prog->nodes.size(), 1u);
  EXPECT_TRUE(async_prog->nodes[0].async);
  EXPECT_EQ(async_prog->nodes[0].priority, 200);  // switch (0) + the slow branch's two delays
  auto sync_prog = compile(with_branches(cheap, cheap));
  EXPECT_FALSE(sync_prog->nodes[0].async);
  EXPECT_EQ(sync_prog->nodes[0].priority, 1);
  EXPECT_EQ(to_json(run_sync(e.env, async_prog, {Value::str("a")})), R"("a..")");
  EXPECT_EQ(to_json(run_sync(e.env, async_prog, {Value::str("b")})), R"("bb")");
  EXPECT_EQ(to_json(run_sync(e.env, sync_prog, {Value::str("a")})), R"("aa")");
  EXPECT_AF_ERROR(run_sync(e.env, async_prog, {Value::str("zz")}), Code::NotFound, "no branch is named \"zz\"");
}

TEST(ExecDataflow, IndependentAsyncWorkOverlaps) {
  Env e;
  IRPtr ir = trace1(
      [](const Value& x, RunEnv& env) {
        std::vector<Value> outs;
        for (int i = 0; i < 16; ++i)
          outs.push_back(delay(op_concat(std::vector<Value>{x, Value::str(std::to_string(i))}, env), 40, env));
        return Value::list(outs);
      },
      e.env);
  auto prog = compile(ir);
  g_peak = 0;
  auto t0 = std::chrono::steady_clock::now();
  Value out = run_sync(e.env, prog, {Value::str("q")});
  EXPECT_EQ(g_peak.load(), 16);
  EXPECT_EQ(out.items()[15], Value::str("q15."));
  // Async runs go through the scheduler's workers; they overlap too (the
  // delay is long so that the claim holds on a slow, sanitized build).
  IRPtr slow = trace1(
      [](const Value& x, RunEnv& env) {
        std::vector<Value> outs;
        for (int i = 0; i < 16; ++i)
          outs.push_back(delay(op_concat(std::vector<Value>{x, Value::str(std::to_string(i))}, env), 400, env));
        return Value::list(outs);
      },
      e.env);
  prog = compile(slow);
  g_peak = 0;
  std::vector<Future> fs;
  for (int i = 0; i < 8; ++i) fs.push_back(run_async(e.env, prog, {Value::str("r")}));
  for (auto& f : fs) EXPECT_EQ(f.wait().items()[0], Value::str("r0."));
  EXPECT_GE(g_peak.load(), 64);
  EXPECT_LE(e.ctx.scheduler()->worker_count(), 4u);
  (void)t0;
}

TEST(ExecDataflow, FailureCancelsInFlightWork) {
  Env e;
  IRPtr ir = trace1(
      [](const Value& x, RunEnv& env) {
        Value slow = delay(x, 5000, env);
        Value bad = bind_flat(fail_prim(), Params(), {delay(x, 5, env)}, env);
        return Value::list({slow, bad});
      },
      e.env);
  auto prog = compile(ir);
  g_cancel_hooks = 0;
  auto t0 = std::chrono::steady_clock::now();
  try {
    run_sync(e.env, prog, {Value::str("q")});
    ADD_FAILURE();
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), Code::Provider);
    EXPECT_NE(std::string(err.what()).find("always fails"), std::string::npos);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
  EXPECT_EQ(g_cancel_hooks.load(), 1);
  // keep_going: the slow branch completes, the failed leaf is an error value.
  RunOptions o;
  o.keep_going = true;
  IRPtr ir2 = trace1(
      [](const Value& x, RunEnv& env) {
        Value ok = delay(x, 5, env);
        Value bad = bind_flat(fail_prim(), Params(), {x}, env);
        Value downstream = delay(bad, 5, env);  // depends on the failure
        return Value::list({ok, downstream});
      },
      e.env);
  Value out = run_sync(e.env, compile(ir2), {Value::str("q")}, o);
  EXPECT_EQ(out.items()[0], Value::str("q."));
  const Value* err = out.items()[1].find("error");
  ASSERT_NE(err, nullptr);
  EXPECT_EQ(*err->find("code"), Value::integer(int64_t(Code::Provider)));
  EXPECT_EQ(*err->find("name"), Value::str("PROVIDER"));
}

TEST(ExecDataflow, FuturesCancelAndTimeOut) {
  Env e;
  IRPtr ir = trace1([](const Value& x, RunEnv& env) { return delay(x, 5000, env); }, e.env);
  auto prog = compile(ir);
  Future f = run_async(e.env, prog, {Value::str("q")});
  std::atomic<int> done{0};
  f.on_done([&] { ++done; });
  EXPECT_FALSE(f.ready());
  f.cancel();
  EXPECT_TRUE(f.ready());
  EXPECT_EQ(done.load(), 1);
  try {
    f.wait();
    ADD_FAILURE();
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), Code::Cancelled);
  }
  RunOptions o;
  o.timeout_ms = 30;
  try {
    run_sync(e.env, prog, {Value::str("q")}, o);
    ADD_FAILURE();
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), Code::Timeout);
  }
}

TEST(ExecDataflow, ProgressAndProfile) {
  Env e;
  IRPtr ir = trace1(
      [](const Value& x, RunEnv& env) {
        Value a = delay(x, 2, env);
        return op_concat(std::vector<Value>{a, delay(x, 3, env)}, env);
      },
      e.env);
  RunOptions o;
  std::vector<uint64_t> seen;
  o.progress = [&](uint64_t done, uint64_t total) {
    EXPECT_EQ(total, 3u);
    seen.push_back(done);
  };
  o.profile = true;
  Future f = run_async(e.env, compile(ir), {Value::str("q")}, o);
  EXPECT_EQ(f.wait(), Value::str("q.q."));
  EXPECT_EQ(seen, (std::vector<uint64_t>{1, 2, 3}));
  Value profile = from_json(f.profile_json());
  const Value* events = profile.find("traceEvents");
  ASSERT_NE(events, nullptr);
  int begins = 0, completes = 0;
  for (const Value& ev : events->items()) {
    const std::string& ph = ev.find("ph")->as_str();
    begins += ph == "b";
    completes += ph == "X";
  }
  EXPECT_EQ(begins, 6);     // every equation: itself + its queued slice
  EXPECT_EQ(completes, 1);  // the concat ran on an engine thread
}

TEST(ExecDataflow, EmptyAndLiteralOnlyPrograms) {
  Env e;
  IRPtr ir = trace1([](const Value& x, RunEnv&) { return Value::list({x, Value::str("lit")}); }, e.env);
  EXPECT_EQ(to_json(run_sync(e.env, compile(ir), {Value::str("q")})), R"(["q","lit"])");
  EXPECT_EQ(to_json(run_async(e.env, compile(ir), {Value::str("r")}).wait()), R"(["r","lit"])");
}

}  // namespace
}  // namespace af
