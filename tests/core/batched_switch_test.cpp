// A switch whose key is batched is a map over the items of a body that is
// the switch; map runs it branch by branch (prims/batching.cpp
// map_switch_by_branch): each branch taken runs once, batched, on the items
// that take it, with the results of running every item on its own.
#include <gtest/gtest.h>

#include <atomic>

#include "exec/context.h"
#include "exec/executor.h"
#include "exec/plan_cache.h"
#include "exec/program.h"
#include "expect_error.h"
#include "ir/registry.h"
#include "prims/control_flow.h"
#include "prims/ops.h"
#include "value/error_value.h"
#include "trace/trace.h"
#include "transforms/batch.h"

namespace af {
namespace {

std::atomic<int> g_bang_calls{0}, g_sample_calls{0};

Value with_bang(const Value& v) { return Value::str(v.as_str() + "!"); }

// batched_switch_test.bang(x) -> x + "!", leaf-wise (a batched x gets "!" on
// every item in one call); counts its calls.
void bang_impl(const Eqn&, std::span<const Value> in, std::span<Value> out, RunEnv&) {
  ++g_bang_calls;
  if (in[0].kind() != Kind::List) {
    out[0] = with_bang(in[0]);
    return;
  }
  std::vector<Value> items;
  for (const Value& v : in[0].items()) items.push_back(with_bang(v));
  out[0] = Value::list(std::move(items));
}

// batched_switch_test.sample(x) -> x, sampled like an LM call: it must run
// once per item even with no batched input.
void sample_impl(const Eqn&, std::span<const Value> in, std::span<Value> out, RunEnv&) {
  ++g_sample_calls;
  out[0] = in[0];
}

// One str (or batched str) in, the same out; anything else is refused (the
// loader's sweep runs every registered primitive on misshapen equations).
AbstractOut like_input(const Params&, std::span<const Aval> in, const TreeDef&) {
  if (in.size() != 1 || in[0].kind != Kind::Str) invalid("batched_switch_test: takes one str");
  return AbstractOut{{in[0]}, TreeDef::leaf()};
}

const Prim& bang_prim() {
  static const Prim* p = [] {
    Prim d;
    d.name = "batched_switch_test.bang";
    d.impl = bang_impl;
    d.abstract_eval = like_input;
    d.batch = batch_identity;
    return register_prim(d);
  }();
  return *p;
}

const Prim& sample_prim() {
  static const Prim* p = [] {
    Prim d;
    d.name = "batched_switch_test.sample";
    d.flags = kNondeterministic;
    d.impl = sample_impl;
    d.abstract_eval = like_input;
    d.batch = batch_by_map;
    return register_prim(d);
  }();
  return *p;
}

struct Env {
  ExecContext ctx;
  RunEnv env{&ctx};
};

IRPtr trace_str(const std::function<Value(std::span<const Value>)>& f, size_t n_in) {
  return trace(f, std::vector<Value>(n_in, Value::str("x")), Value());
}

Value strs(std::initializer_list<const char*> xs) {
  std::vector<Value> v;
  for (const char* x : xs) v.push_back(Value::str(x));
  return Value::list(std::move(v));
}

// switch(key, text) with branches "a" (a_branch) and "b" (text + "?"),
// batched over key and text as in_axes says.
IRPtr batched_switch(Env& e, IRPtr a_branch, const Value& in_axes) {
  IRPtr b_branch = trace_str(
      [&](std::span<const Value> in) {
        return op_concat(std::vector<Value>{in[0], Value::str("?")}, e.env);
      },
      1);
  const std::vector<std::string> names{"a", "b"};
  const std::vector<IRPtr> branches{a_branch, b_branch};
  IRPtr ir = trace_str(
      [&](std::span<const Value> in) {
        return op_switch(in[0], names, branches, std::vector<Value>{in[1]}, e.env);
      },
      2);
  return batch(ir, in_axes);
}

IRPtr bang_branch(Env& e) {
  return trace_str(
      [&](std::span<const Value> in) { return bind_flat(bang_prim(), Params(), {in[0]}, e.env); },
      1);
}

TEST(BatchedSwitch, EachBranchRunsOnceOnItsItems) {
  Env e;
  auto prog = compile(batched_switch(e, bang_branch(e), Value()));
  g_bang_calls = 0;
  Value out =
      run_sync(e.env, prog, {strs({"a", "b", "a", "a", "b"}), strs({"p", "q", "r", "s", "t"})});
  EXPECT_EQ(to_json(out), R"(["p!","q?","r!","s!","t?"])");
  EXPECT_EQ(g_bang_calls.load(), 1);  // one call for the three items that take "a", not three
}

// The plan cache's byte bound counts everything a cached program holds:
// its compiled branches and its sliced form too.
TEST(BatchedSwitch, ProgramBytesCountCompiledSubIRsAndTheSlicedForm) {
  Env e;
  auto prog = compile(batched_switch(e, bang_branch(e), Value()));
  ASSERT_FALSE(prog->subs.empty());
  Program bare = *prog;
  bare.subs.clear();
  bare.sliced.reset();
  EXPECT_GT(program_bytes(*prog), program_bytes(bare));
}

TEST(BatchedSwitch, SharedOperandRunsEachBranchOnce) {
  Env e;
  auto prog = compile(batched_switch(e, bang_branch(e),
                                     Value::list({Value::boolean(true), Value::boolean(false)})));
  g_bang_calls = 0;
  Value out = run_sync(e.env, prog, {strs({"b", "a", "a"}), Value::str("z")});
  EXPECT_EQ(to_json(out), R"(["z?","z!","z!"])");
  EXPECT_EQ(g_bang_calls.load(), 1);
}

TEST(BatchedSwitch, SampledWorkWithNoBatchedInputRunsPerItem) {
  Env e;
  // Branch "a" samples from a constant: batched, that call would be made
  // once for all of its items; each item must get its own.
  IRPtr a = trace_str(
      [&](std::span<const Value> in) {
        Value s = bind_flat(sample_prim(), Params(), {Value::str("k")}, e.env);
        return op_concat(std::vector<Value>{bind_flat(bang_prim(), Params(), {in[0]}, e.env), s},
                         e.env);
      },
      1);
  auto prog = compile(batched_switch(e, a, Value()));
  g_bang_calls = 0;
  g_sample_calls = 0;
  Value out = run_sync(e.env, prog, {strs({"a", "b", "a", "a"}), strs({"p", "q", "r", "s"})});
  EXPECT_EQ(to_json(out), R"(["p!k","q?","r!k","s!k"])");
  EXPECT_EQ(g_sample_calls.load(), 3);
  EXPECT_EQ(g_bang_calls.load(), 3);
}

TEST(BatchedSwitch, UnknownKeyFailsOrBecomesTheItemsError) {
  Env e;
  auto prog = compile(batched_switch(e, bang_branch(e), Value()));
  EXPECT_AF_ERROR(run_sync(e.env, prog, {strs({"a", "zz", "b"}), strs({"p", "q", "r"})}),
                  Code::NotFound, "no branch is named \"zz\"");
  RunOptions o;
  o.item_errors = true;
  Value out = run_sync(e.env, prog, {strs({"a", "zz", "b"}), strs({"p", "q", "r"})}, o);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out.items()[0], Value::str("p!"));
  EXPECT_TRUE(is_error_value(out.items()[1]));
  EXPECT_NE(to_json(out.items()[1]).find("no branch is named"), std::string::npos);
  EXPECT_EQ(out.items()[2], Value::str("r?"));
}

}  // namespace
}  // namespace af
