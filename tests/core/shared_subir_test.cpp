// Whole-graph passes and transforms stay linear in the program, counted on
// its DAG of distinct sub-IRs (docs/SECURITY.md, "Limits"):
//  - a fan of sub-IRs that reuse each other (4^40 paths from 40 small IRs)
//    is hashed, compared, validated, printed, costed, compiled and
//    transformed without being expanded, or refused with a clear code where
//    the result itself would be exponential (pullback, deep queries);
//  - control flow nested 30 deep (switch) and 20 deep (while_loop, whose
//    rules iterate to a fixpoint) is pushed forward and pulled back
//    correctly; both used to grow 2-5x per level.
// These are not timed: a regression makes them run for hours.
#include <gtest/gtest.h>

#include <unordered_set>

#include "exec/program.h"
#include "ir/query.h"
#include "transform_test_util.h"

namespace af::testing {
namespace {

// Distinct IR objects reachable from ir (ir included): the size of the DAG.
size_t distinct_irs(const IR& ir, std::unordered_set<const IR*>& seen) {
  size_t n = seen.insert(&ir).second ? 1 : 0;
  for (const Eqn& e : ir.eqns)
    e.params.any_ir([&](const IR& sub) {
      if (!seen.count(&sub)) n += distinct_irs(sub, seen);
      return false;
    });
  return n;
}
size_t distinct_irs(const IRPtr& ir) {
  std::unordered_set<const IR*> seen;
  return distinct_irs(*ir, seen);
}

// Level 0: (key, x) -> concat(x, "!"). Level k: (key, x) -> two switches in
// a row, each with branches "a" and "b" both level k-1: 4^k paths.
IRPtr fan(int levels) {
  RunEnv& env = test_context().env;
  IRPtr ir = trace_json(
      [&](auto in) {
        return op_concat(std::vector<Value>{in[1], S("!")}, env);
      },
      R"(["a","x"])");
  const std::vector<std::string> names{"a", "b"};
  for (int k = 1; k <= levels; ++k) {
    const std::vector<IRPtr> branches{ir, ir};
    ir = trace_json(
        [&](auto in) {
          Value y = op_switch(in[0], names, branches, std::vector<Value>{in[0], in[1]}, env);
          return op_switch(in[0], names, branches, std::vector<Value>{in[0], y}, env);
        },
        R"(["a","x"])");
  }
  return ir;
}

TEST(SharedSubIrs, WholeGraphPassesWorkOnTheDag) {
  IRPtr a = fan(40), b = fan(40);
  EXPECT_EQ(distinct_irs(a), 41u);
  EXPECT_TRUE(ir_equal(*a, *b));
  EXPECT_EQ(ir_hash(*a), ir_hash(*b));
  EXPECT_FALSE(ir_equal(*a, *fan(39)));
  validate(*a);
  std::string text = to_text(*a);
  EXPECT_LT(text.size(), 41u * 1000);
  EXPECT_NE(text.find("*40"), std::string::npos);
  EXPECT_EQ(
      cost_json(*a, 1),
      R"({"batch":1,"total":{"calls":0,"models":{}},"critical_path":{"calls":0,"models":{}}})");
  EXPECT_AF_ERROR(related_json(*a, 0, false, true), Code::InvalidArgument,
                  "more than 1048576 nested equations");
  auto prog = compile(a, CompileOptions{});
  EXPECT_EQ(prog->nodes.size(), 2u);
  // Equal DAGs of distinct objects, and a slice of one, compare through the
  // pairs already found equal.
  Params pa = a->eqns[0].params, pb = b->eqns[0].params;
  EXPECT_TRUE(pa == pb);
  EXPECT_EQ(pa.hash(), pb.hash());
}

TEST(SharedSubIrs, TransformsKeepTheDagShared) {
  IRPtr ir = fan(40);
  IRPtr d = dce(*ir, Value());
  EXPECT_LE(distinct_irs(d), 41u);
  EXPECT_LE(distinct_irs(cse(*ir)), 41u);
  IRPtr s = sched(*ir);
  EXPECT_LE(distinct_irs(s), 41u);
  EXPECT_EQ(s->eqns[1].sched()->level, 1u);
  IRPtr p = pushforward(*ir);
  validate(*p);
  EXPECT_LE(distinct_irs(p), 2 * 41u);
  IRPtr bt = batch(ir, J("[false, true]"));
  validate(*bt);
  EXPECT_LE(distinct_irs(bt), 2 * 41u);
  // A pullback keeps the residuals of every use of a sub-IR: 4^40 here, so
  // the transform budget refuses it.
  EXPECT_AF_ERROR(pullback(*ir), Code::InvalidArgument, "shared sub-IRs expand");
  // The small fan still runs, pushed forward (2^3 concats on each path).
  IRPtr small = pushforward(*fan(3));
  EXPECT_EQ(to_json(run(small, {J(R"(["a","x"])"), J(R"([null,"t"])")})), R"(["x!!!!!!!!","t"])");
}

// Level 0: (key, x) -> concat(x, "."). Level k: (key, x) -> switch(key)
// {"go": level k-1, "stop": x}(key, concat(x, digit k)), nested `depth` deep.
IRPtr nested_switches(int depth) {
  RunEnv& env = test_context().env;
  IRPtr stop = trace_json([](auto in) { return in[1]; }, R"(["go","x"])");
  IRPtr ir = trace_json(
      [&](auto in) {
        return op_concat(std::vector<Value>{in[1], S(".")}, env);
      },
      R"(["go","x"])");
  const std::vector<std::string> names{"go", "stop"};
  for (int k = 1; k <= depth; ++k) {
    const std::vector<IRPtr> branches{ir, stop};
    const std::string digit = std::to_string(k % 10);
    ir = trace_json(
        [&](auto in) {
          Value y = op_concat(std::vector<Value>{in[1], Value::str(digit)}, env);
          return op_switch(in[0], names, branches, std::vector<Value>{in[0], y}, env);
        },
        R"(["go","x"])");
  }
  return ir;
}

TEST(NestedControlFlow, SwitchesThirtyDeepPushAndPullLinearly) {
  IRPtr ir = nested_switches(30);
  const std::string out = "\"x098765432109876543210987654321.\"";
  EXPECT_EQ(to_json(run(ir, {S("go"), S("x")})), out);
  IRPtr p = pushforward(*ir);
  EXPECT_LE(distinct_irs(p), 3 * 31u);
  EXPECT_EQ(to_json(run(p, {J(R"(["go","x"])"), J(R"([null,"T"])")})), "[" + out + ",\"T\"]");
  EXPECT_EQ(to_json(run(p, {J(R"(["stop","x"])"), J(R"([null,"T"])")})), R"(["x0","T"])");
  IRPtr q = pullback(*ir);
  EXPECT_LE(distinct_irs(q), 8 * 31u);
  EXPECT_EQ(to_json(run(q, {J(R"(["go","x"])"), S("C")})), "[" + out + ",[null,\"C\"]]");
  EXPECT_EQ(to_json(run(q, {J(R"(["stop","x"])"), S("C")})), R"(["x0",[null,"C"]])");
}

// Level 0 body: [a, b] -> [concat(a, "."), concat(b, a)] (a tangent of a
// reaches b: the loop rules' fixpoints take two rounds). Level k body:
// [a, b] -> while_loop(true, level k-1 body, [concat(a, digit k), b], 1).
IRPtr nested_loops(int depth) {
  RunEnv& env = test_context().env;
  IRPtr always = trace_json([](auto) { return Value::boolean(true); }, R"([["a","b"]])");
  IRPtr body = trace_json(
      [&](auto in) {
        const Value& s = in[0];
        return Value::list({op_concat(std::vector<Value>{s.items()[0], S(".")}, env),
                            op_concat(std::vector<Value>{s.items()[1], s.items()[0]}, env)});
      },
      R"([["a","b"]])");
  for (int k = 1; k < depth; ++k) {
    IRPtr inner = body;
    const std::string digit = std::to_string(k % 10);
    body = trace_json(
        [&](auto in) {
          const Value& s = in[0];
          Value a = op_concat(std::vector<Value>{s.items()[0], Value::str(digit)}, env);
          return op_while_loop(always, inner, Value::list({a, s.items()[1]}), 1, env);
        },
        R"([["a","b"]])");
  }
  return trace_json(
      [&](auto in) {
        return op_while_loop(always, body, Value::list({in[0], in[1]}), 1, env);
      },
      R"(["a","b"])");
}

TEST(NestedControlFlow, LoopsTwentyDeepPushAndPullLinearly) {
  IRPtr ir = nested_loops(20);
  const std::string a = "x9876543210987654321.";
  EXPECT_EQ(to_json(run(ir, {S("x"), S("y")})),
            "[\"" + a + "\",\"y" + a.substr(0, a.size() - 1) + "\"]");
  IRPtr p = pushforward(*ir);
  EXPECT_LE(distinct_irs(p), 8 * 21u);
  // A tangent on a only: it reaches b through the innermost body.
  EXPECT_EQ(to_json(run(p, {J(R"(["x","y"])"), J(R"(["T",null])")})),
            "[[\"" + a + "\",\"y" + a.substr(0, a.size() - 1) + "\"],[\"T\",\"T\"]]");
  IRPtr q = pullback(*ir);
  EXPECT_LE(distinct_irs(q), 16 * 21u);
  // b's cotangent is a materialized Zero ("": the iterations disagree).
  EXPECT_EQ(to_json(run(q, {J(R"(["x","y"])"), J(R"(["C",null])")})),
            "[[\"" + a + "\",\"y" + a.substr(0, a.size() - 1) + "\"],[\"C\",\"\"]]");
}

}  // namespace
}  // namespace af::testing
