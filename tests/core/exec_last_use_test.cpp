// Last uses: a run moves a value out of its slot at its last read instead of
// copying it, and concat appends in place to a string nothing else holds, so
// a growing chain y_i = concat(y_{i-1}, "x") costs the appended bytes, not
// O(length) per equation. Values still shared (inputs held by the caller,
// outputs, values read twice, literals of the IR) must never change.
#include <gtest/gtest.h>

#include "exec/context.h"
#include "exec/sequential.h"
#include "exec/executor.h"
#include "exec/program.h"
#include "prims/ops.h"
#include "ir/registry.h"
#include "trace/trace.h"

namespace af {
namespace {

// y_0 = x; y_i = concat(y_{i-1}, "x"); outputs [y_n, y_mid, concat(y_side, "!")]
// where y_side is also read by the chain (two reads: never moved).
IRPtr growing_chain(int n, int mid, int side, RunEnv& env) {
  std::vector<Value> ex{Value::str("s")};
  return trace(
      [&](std::span<const Value> in) {
        Value y = in[0], y_mid, side_out;
        for (int i = 1; i <= n; ++i) {
          y = op_concat(std::vector<Value>{y, Value::str("x")}, env);
          if (i == mid) y_mid = y;
          if (i == side) side_out = op_concat(std::vector<Value>{y, Value::str("!")}, env);
        }
        return Value::list({y, y_mid, side_out});
      },
      ex, Value());
}

std::string expected(const std::string& s, int n) { return s + std::string(size_t(n), 'x'); }

TEST(ExecLastUse, ProgramMarksOnlySingleReadsOfNonOutputs) {
  ExecContext ctx;
  RunEnv env{&ctx};
  IRPtr ir = growing_chain(10, 5, 3, env);
  auto prog = compile(ir);
  ASSERT_EQ(prog->last_use.size(), prog->args.size());
  std::vector<int> reads(prog->n_slots, 0);
  for (uint32_t s : prog->args) ++reads[s];
  std::vector<bool> is_out(prog->n_slots, false);
  for (uint32_t s : prog->out_slots) is_out[s] = true;
  size_t moved = 0;
  for (size_t i = 0; i < prog->args.size(); ++i) {
    const uint32_t s = prog->args[i];
    EXPECT_EQ(prog->last_use[i] != 0, reads[s] == 1 && !is_out[s]) << "arg " << i;
    moved += prog->last_use[i];
  }
  // Every chain link but y_mid (an output) and y_side (read twice); every literal "x".
  EXPECT_GT(moved, 10u);
  // A program rebuilt from its saved plan (af_program_load) moves the same reads.
  EXPECT_EQ(program_from_plan(ir, save_plan(*prog))->last_use, prog->last_use);
}

TEST(ExecLastUse, GrowingChainIsCorrectAndLeavesSharedValuesAlone) {
  ExecContext ctx;
  RunEnv env{&ctx};
  const int n = 200, mid = 120, side = 50;
  IRPtr ir = growing_chain(n, mid, side, env);
  const std::string want = "[\"" + expected("s", n) + "\",\"" + expected("s", mid) + "\",\"" +
                           expected("s", side) + "!\"]";
  Value input = Value::str("s");
  auto prog = compile(ir);
  for (int round = 0; round < 3; ++round) {  // the IR's literals must not grow between runs
    EXPECT_EQ(to_json(run_sync(env, prog, {input})), want);
    std::vector<Value> leaves{input};
    EXPECT_EQ(to_json(prog->ir->out_tree.unflatten(run_sequential(*prog, leaves, env))), want);
    Future f = run_async(env, prog, {input});
    EXPECT_EQ(to_json(f.wait()), want);
  }
  EXPECT_EQ(input.as_str(), "s");  // the caller's value is shared, never appended to
}

// A literal read by consecutive equations (one Value captured by a traced
// loop) has one slot, read by all of them and so never moved; a static
// input's slot (the call writes the leaf there) is never shared, even with
// an identical literal right after it.
TEST(ExecLastUse, OneLiteralOfConsecutiveEquationsSharesASlot) {
  ExecContext ctx;
  RunEnv env{&ctx};
  const Value x = Value::str("x");
  std::vector<Value> ex{Value::str("s"), x};
  IRPtr ir = trace(
      [&](std::span<const Value> in) {
        Value y = op_concat(std::vector<Value>{in[0], in[1]}, env);  // in[1] is the static input
        for (int i = 0; i < 5; ++i) y = op_concat(std::vector<Value>{y, x}, env);
        return y;
      },
      ex, Value::list({Value::boolean(false), Value::boolean(true)}));
  auto prog = compile(ir);
  ASSERT_EQ(prog->constants.size(), 2u);  // the static input's, and one for the six reads of x
  const uint32_t input_slot = prog->in_slots[1], shared = input_slot + 1;
  size_t reads = 0;
  for (size_t i = 0; i < prog->args.size(); ++i) {
    EXPECT_NE(prog->args[i], input_slot) << "arg " << i;
    if (prog->args[i] == shared) {
      ++reads;
      EXPECT_EQ(prog->last_use[i], 0) << "arg " << i;
    }
  }
  EXPECT_EQ(reads, 6u);
  for (int round = 0; round < 2; ++round)
    EXPECT_EQ(to_json(run_sync(env, prog, {Value::str("s"), x})), "\"sxxxxxx\"");
  EXPECT_EQ(x.as_str(), "x");
}

TEST(ExecLastUse, ConcatConsumesOnlyOwnedUniqueInputs) {
  const Prim& concat = prim("concat");
  Eqn e;  // concat_impl reads nothing from the equation
  std::vector<Value> in{Value::str("ab"), Value::str("c")}, out(1);
  // Borrowed inputs (env.owned_in empty): a new string, inputs untouched.
  RunEnv env;
  concat.impl(e, in, out, env);
  EXPECT_EQ(out[0].as_str(), "abc");
  EXPECT_EQ(in[0].as_str(), "ab");
  // Owned but shared (the caller keeps a copy): not consumed.
  Value keep = in[0];
  env.owned_in = in;
  concat.impl(e, in, out, env);
  EXPECT_EQ(out[0].as_str(), "abc");
  EXPECT_EQ(keep.as_str(), "ab");
  EXPECT_EQ(in[0].as_str(), "ab");
  // Owned and unique: appended in place and moved to the output.
  keep = Value();
  concat.impl(e, in, out, env);
  EXPECT_EQ(out[0].as_str(), "abc");
  EXPECT_TRUE(in[0].is_null());
  // A different input list than the owned one is borrowed.
  std::vector<Value> other{Value::str("x"), Value::str("y")};
  concat.impl(e, other, out, env);
  EXPECT_EQ(other[0].as_str(), "x");
}

TEST(ExecLastUse, UniqueStrIsOnlyForUnsharedStrings) {
  Value a = Value::str("abc");
  ASSERT_NE(a.unique_str(), nullptr);
  Value b = a;
  EXPECT_EQ(a.unique_str(), nullptr);
  EXPECT_EQ(b.unique_str(), nullptr);
  b = Value();
  EXPECT_NE(a.unique_str(), nullptr);
  Value i = Value::integer(3);
  EXPECT_EQ(i.unique_str(), nullptr);
}

}  // namespace
}  // namespace af
