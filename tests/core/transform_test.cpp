// The transforms on each primitive, with exact expected outputs
// (docs/SEMANTICS.md §4), and their documented errors. The composition matrix
// (transform_matrix_test.cpp) checks that every nesting works; this suite
// pins down what each one computes.
#include <gtest/gtest.h>

#include "transform_test_util.h"

namespace af::testing {
namespace {

const Program& program(const std::string& name) {
  static const std::vector<Program> ps = programs();
  for (const Program& p : ps)
    if (p.name == name) return p;
  throw std::runtime_error("no program " + name);
}

RunEnv& env() { return test_context().env; }

struct Case {
  const char* program;
  const char* inputs;    // JSON list of the transformed IR's positional inputs
  const char* expected;  // JSON of its output
};

// ---- pushforward: (primals, tangents) -> [outputs, output_tangents]

class Pushforward : public ::testing::TestWithParam<Case> {};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  return std::string(info.param.program) + "_" + std::to_string(info.index);
}

TEST_P(Pushforward, Computes) {
  const Case& c = GetParam();
  IRPtr pf = pushforward(*program(c.program).ir);
  ASSERT_NO_THROW(validate(*pf)) << to_text(*pf);
  EXPECT_EQ(run_json(pf, c.inputs), c.expected) << to_text(*pf);
}

INSTANTIATE_TEST_SUITE_P(
    Prims, Pushforward,
    ::testing::Values(
        // format: the same template on the tangents.
        Case{"format", R"([["p","q"],["dp","dq"]])", R"(["<p|q>","<dp|dq>"])"},
        // concat: concat of the tangents; the literal contributes "".
        Case{"concat", R"([["p","q"],["dp","dq"]])", R"(["p-q","dpdq"])"},
        // match: a Zero tangent (null).
        Case{"match", R"([["p","q"],["dp","dq"]])", R"([[false,"p"],[null,"dp"]])"},
        // stop_gradient: its tangent is Zero ("" in the concat).
        Case{"stop_gradient", R"([["p","q"],["dp","dq"]])", R"(["pq","dq"])"},
        // depends: the value's tangent passes, the dep's does not.
        Case{"depends", R"([["p","q"],["dp","dq"]])", R"(["p1","dp"])"},
        Case{"checkpoint", R"([["p","q"],["dp","dq"]])", R"(["pq","dpdq"])"},
        Case{"multi_consumer", R"([["p"],["d"]])", R"(["ppp","ddd"])"},
        // A static input's tangent is Zero whatever is passed for it.
        Case{"static_input", R"([["P","q"],["dP","dq"]])", R"(["Pq","dq"])"},
        Case{"trees", R"([[{"a":"p","b":["q",2]}],[{"a":"dp","b":["dq",5]}]])",
             R"([{"out":"pq2","m":false,"z":null},{"out":"dpdq5","m":null,"z":null}])"},
        Case{"switch", R"([["a","p"],["","dp"]])", R"(["Ap","Adp"])"},
        Case{"switch", R"([["b","p"],["","dp"]])", R"(["pp","dpdp"])"},
        // The branch returning literals has zero tangents, materialized
        // because the other branch's are not Zero.
        Case{"switch_trees", R"([["a","p","q"],["","dp","dq"]])", R"([{"s":"pq","m":false},{"s":"dpdq","m":null}])"},
        Case{"switch_trees", R"([["b","p","q"],["","dp","dq"]])", R"([{"s":"lit","m":true},{"s":"","m":null}])"},
        // The loop carries the tangents: s gets "!" appended per iteration,
        // its tangent gets "" appended; c's tangent is Zero after a step.
        Case{"while_loop", R"([["p","1"],["dp","dc"]])", R"([["p!!","3"],["dp",""]])"},
        Case{"while_loop", R"([["p","3"],["dp","dc"]])", R"([["p","3"],["dp","dc"]])"},
        // s goes "!" -> "(...)" -> s + s: so does its tangent.
        Case{"routed_loop", R"([["p","0"],["d","e"]])", R"j([["(p!)(p!)","3"],["(d)(d)",""]])j"},
        Case{"while_max_iters", R"([["p"],["d"]])", R"j(["((p))","((d))"])j"},
        // No tangent reaches the host function: it just runs.
        Case{"host_function", R"([["p","q"],["dp","dq"]])", R"(["Pq","dq"])"}),
    case_name);

// ---- pullback: (primals, output_cotangent) -> [outputs, input_cotangents]

class Pullback : public ::testing::TestWithParam<Case> {};

TEST_P(Pullback, Computes) {
  const Case& c = GetParam();
  IRPtr pb = pullback(*program(c.program).ir);
  ASSERT_NO_THROW(validate(*pb)) << to_text(*pb);
  EXPECT_EQ(run_json(pb, c.inputs), c.expected) << to_text(*pb);
}

INSTANTIATE_TEST_SUITE_P(
    Prims, Pullback,
    ::testing::Values(
        // format / concat: the output cotangent to every argument.
        Case{"format", R"([["p","q"],"g"])", R"(["<p|q>",["g","g"]])"},
        Case{"concat", R"([["p","q"],"g"])", R"(["p-q",["g","g"]])"},
        // match: text feedback on its bool output; Zero to both inputs; the
        // second output passes x through.
        Case{"match", R"([["p","q"],["should be true","g"]])", R"([[false,"p"],["g",null]])"},
        Case{"stop_gradient", R"([["p","q"],"g"])", R"(["pq",[null,"g"]])"},
        Case{"depends", R"([["p","q"],"g"])", R"(["p1",["g",null]])"},
        Case{"checkpoint", R"([["p","q"],"g"])", R"(["pq",["g","g"]])"},
        // x feeds format (twice) and concat: three contributions.
        Case{"multi_consumer", R"([["p"],"g"])", R"(["ppp",["ggg"]])"},
        Case{"static_input", R"([["P","q"],"g"])", R"(["Pq",[null,"g"]])"},
        // Feedback is text: the int argument of format gets the output's
        // feedback like the str ones; match's bool output takes text.
        Case{"trees", R"([[{"a":"p","b":["q",2]}],{"out":"g","m":"should match","z":null}])",
             R"([{"out":"pq2","m":false,"z":null},[{"a":"g","b":["g","g"]}]])"},
        // The key never gets a cotangent.
        Case{"switch", R"([["a","p"],"g"])", R"(["Ap",[null,"g"]])"},
        Case{"switch", R"([["b","p"],"g"])", R"(["pp",[null,"gg"]])"},
        Case{"switch_trees", R"([["a","p","q"],{"s":"g","m":"wrong"}])", R"([{"s":"pq","m":false},[null,"g","g"]])"},
        Case{"switch_trees", R"([["b","p","q"],{"s":"g","m":"wrong"}])", R"([{"s":"lit","m":true},[null,"",""]])"},
        Case{"while_loop", R"([["p","1"],["g","h"]])", R"([["p!!","3"],["g",""]])"},
        Case{"while_loop", R"([["p","3"],["g","h"]])", R"([["p","3"],["g","h"]])"},
        // Each iteration's backward routes by its own key (the trajectory):
        // s + s doubles the cotangent, "!" and "(...)" pass it on.
        Case{"routed_loop", R"([["p","0"],["g","h"]])", R"j([["(p!)(p!)","3"],["gg",""]])j"},
        Case{"routed_loop", R"([["p","2"],["g","h"]])", R"([["pp","3"],["gg",""]])"},
        Case{"while_max_iters", R"([["p"],"g"])", R"j(["((p))",["g"]])j"},
        Case{"host_function", R"([["p","q"],"g"])", R"(["Pq",[null,"g"]])"}),
    case_name);

TEST(PullbackOrder, ContributionsFollowTheForwardOrderOfTheConsumers) {
  // concat is recorded first, format second; the output lists format first.
  IRPtr ir = trace_json(
      [&](auto in) {
        Value c = op_concat(std::vector<Value>{in[0], S("a")}, env());
        Value f = op_format("{}", in, Value(), env());
        return Value::list({f, c});
      },
      R"(["x"])");
  IRPtr pb = pullback(*ir);
  EXPECT_EQ(run_json(pb, R"([["p"],["1","2"]])"), R"([["p","pa"],["21"]])");
  // Scheduling does not change it.
  EXPECT_EQ(run_json(pullback(*sched(*ir)), R"([["p"],["1","2"]])"), R"([["p","pa"],["21"]])");
  // An output that is an input contributes after every equation.
  IRPtr with_input = trace_json(
      [&](auto in) { return Value::list({in[0], op_concat(std::vector<Value>{in[0]}, env())}); }, R"(["x"])");
  EXPECT_EQ(run_json(pullback(*with_input), R"([["p"],["1","2"]])"), R"([["p","p"],["21"]])");
}

// Feedback is text whatever the kind: the feedback on the uses of a number
// or a bool is joined in forward order; null is Zero.
TEST(PullbackOrder, FeedbackOnNumbersAndBoolsIsJoinedText) {
  IRPtr ir = trace_json([&](auto in) { return Value::list({in[0], in[0], in[1], in[1], in[2]}); }, R"([1,2.5,true])");
  EXPECT_EQ(run_json(pullback(*ir), R"([[1,2.5,false],["too ","high","about ","right",null]])"),
            R"([[1,1,2.5,2.5,false],["too high","about right",""]])");
  EXPECT_EQ(run_json(pullback(*ir), R"([[1,2.5,false],[null,null,null,null,"should be true"]])"),
            R"([[1,1,2.5,2.5,false],["","","should be true"]])");
}

TEST(PullbackShape, BackwardReadsResidualsAndNeverRerunsTheForward) {
  // Straight-line: the forward equations appear once.
  const IR& fmt = *program("multi_consumer").ir;
  IRPtr pb = pullback(fmt);
  EXPECT_EQ(count_prim(*pb, "format"), 1u);
  EXPECT_EQ(count_prim(*pb, "concat"), 1u);
  // switch: a forward switch (branch forward parts, residuals out) and a
  // backward switch whose branches hold no forward primitive.
  IRPtr sw = pullback(*program("switch_trees").ir);
  ASSERT_EQ(count_prim(*sw, "switch", false), 2u) << to_text(*sw);
  const Eqn& back = sw->eqns.back();
  ASSERT_EQ(back.prim->name, "switch");
  for (const auto& [name, br] : std::get<IRMap>(*back.params.find("branches"))) {
    EXPECT_EQ(count_prim(*br, "concat"), 0u) << name << "\n" << to_text(*br);
    EXPECT_EQ(count_prim(*br, "match"), 0u) << name;
  }
  // The backward switch routes by the forward's key (same var).
  EXPECT_EQ(back.in[0], sw->eqns.front().in[0]);
  // while_loop: the forward records the trajectory (while_scan), the
  // backward walks it in reverse (scan, reverse=true) with no forward work.
  IRPtr wl = pullback(*program("while_max_iters").ir);
  ASSERT_EQ(wl->eqns.size(), 2u) << to_text(*wl);
  EXPECT_EQ(wl->eqns[0].prim->name, "while_scan");
  EXPECT_EQ(wl->eqns[1].prim->name, "scan");
  EXPECT_EQ(to_json(wl->eqns[1].params.value("reverse")), "true");
  EXPECT_EQ(count_prim(*wl->eqns[1].params.ir("body"), "format"), 0u);
  std::string text = to_text(*wl);
  EXPECT_NE(text.find("reverse=true"), std::string::npos) << text;
}

TEST(PullbackErrors, HostFunctionOnThePath) {
  IRPtr ir = trace_json([&](auto in) { return op_host_call("upper", in, env()); }, R"(["x"])");
  EXPECT_AF_ERROR(pullback(*ir), Code::InvalidArgument, "host function \"upper\" has no pullback rule");
  EXPECT_AF_ERROR(pushforward(*ir), Code::InvalidArgument, "host function \"upper\" has no pushforward rule");
  // Fine when nothing reaches it.
  IRPtr cut = trace_json(
      [&](auto in) { return op_stop_gradient(op_host_call("upper", in, env()), env()); }, R"(["x"])");
  EXPECT_EQ(run_json(pullback(*cut), R"([["p"],"g"])"), R"(["P",[null]])");
}

// ---- batch

TEST(Batch, PerLeafListsInPerLeafListsOut) {
  // (Every program against its per-item runs: transform_matrix_test.cpp.)
  EXPECT_EQ(run_json(batch(program("concat").ir, Value()), R"([["a","b"],["x","y"]])"), R"(["a-x","b-y"])");
  EXPECT_EQ(run_json(batch(program("switch").ir, Value()), R"([["a","b","a"],["x","y","z"]])"),
            R"(["Ax","yy","Az"])");
  EXPECT_EQ(run_json(batch(program("trees").ir, Value()), R"([{"a":["p","r"],"b":[["q","r"],[2,3]]}])"),
            R"({"out":["pq2","rr3"],"m":[false,true],"z":null})");
}

TEST(Batch, InAxesPrefixSharesUnbatchedInputsAndBroadcastsOutputs) {
  IRPtr ir = trace_json([&](auto in) { return Value::list({op_concat(std::vector<Value>{in[0], in[1]}, env()), in[1]}); },
                        R"(["x","y"])");
  IRPtr b = batch(ir, J("[true,false]"));
  EXPECT_EQ(run_json(b, R"([["a","b"],"Y"])"), R"([["aY","bY"],["Y","Y"]])");
  // No batched input: the same program.
  EXPECT_EQ(batch(ir, J("[false,false]")).get(), ir.get());
  // The docs/SEMANTICS.md example: (primals=[x], cot) batched with [true, true].
  IRPtr pb = pullback(*program("format").ir);
  EXPECT_EQ(run_json(batch(pb, J("[true,true]")), R"([[["a","b"],["c","d"]],["g1","g2"]])"),
            R"([["<a|c>","<b|d>"],[["g1","g2"],["g1","g2"]]])");
}

TEST(Batch, SwitchKeysRoutePerItemAndUnbatchedKeysBatchTheBranches) {
  // Batched key: a map over the switch (each item takes its branch).
  IRPtr per_item = batch(program("switch").ir, Value());
  EXPECT_EQ(count_prim(*per_item, "map", false), 1u);
  // Unbatched key: one switch whose branches are batched.
  IRPtr shared = batch(program("switch").ir, J("[false,true]"));
  EXPECT_EQ(count_prim(*shared, "switch", false), 1u) << to_text(*shared);
  EXPECT_EQ(run_json(shared, R"(["b",["x","y"]])"), R"(["xx","yy"])");
}

TEST(Batch, WhileLoopRunsOnlyTheLiveItems) {
  // The body calls "upper" once per iteration; items need 3, 1 and 0 steps.
  std::vector<std::string> digits{"0", "1", "2", "3"};
  auto lit = [&](Value v) { return trace_json([v](auto) { return v; }, R"(["0"])"); };
  std::vector<IRPtr> go{lit(Value::boolean(true)), lit(Value::boolean(true)), lit(Value::boolean(true)),
                        lit(Value::boolean(false))};
  std::vector<IRPtr> step{lit(S("1")), lit(S("2")), lit(S("3")), lit(S("3"))};
  IRPtr cond = trace_json(
      [&](auto in) { return op_switch(in[0].items()[1], digits, go, std::vector<Value>{in[0].items()[1]}, env()); },
      R"([["x","0"]])");
  IRPtr body = trace_json(
      [&](auto in) {
        Value s = op_host_call("upper", std::vector<Value>{in[0].items()[0]}, env());
        return Value::list({s, op_switch(in[0].items()[1], digits, step, std::vector<Value>{in[0].items()[1]}, env())});
      },
      R"([["x","0"]])");
  IRPtr ir = trace_json([&](auto in) { return op_while_loop(cond, body, Value::list({in[0], in[1]}), 100, env()); },
                        R"(["x","0"])");
  IRPtr b = batch(ir, Value());
  int before = test_context().upper_calls;
  EXPECT_EQ(run_json(b, R"([["a","b","c"],["0","2","3"]])"), R"([["A","B","c"],["3","3","3"]])");
  EXPECT_EQ(test_context().upper_calls - before, 4);
}

TEST(Batch, NestedBatchesTakeRaggedInnerLists) {
  IRPtr b2 = batch(batch(program("concat").ir, Value()), Value());
  EXPECT_EQ(run_json(b2, R"([[["a"],["b","c"]],[["x"],["y","z"]]])"), R"([["a-x"],["b-y","c-z"]])");
}

TEST(BatchErrors, LengthsEmptyAndInAxes) {
  IRPtr b = batch(program("concat").ir, Value());
  EXPECT_AF_ERROR(run_json(b, R"([["a","b"],["x","y","z"]])"), Code::InvalidArgument, "input[0] has 2 items but input[1] has 3");
  EXPECT_AF_ERROR(run_json(b, R"([[],[]])"), Code::InvalidArgument, "the batch is empty");
  EXPECT_AF_ERROR(batch(program("concat").ir, J("[true]")), Code::InvalidArgument, "in_axes is not a prefix");
  EXPECT_AF_ERROR(batch(program("concat").ir, J("[1,true]")), Code::InvalidArgument, "in_axes must hold bools");
  // A batched input that is not a list.
  EXPECT_AF_ERROR(run_json(b, R"(["a",["x"]])"), Code::InvalidArgument, "input[0]: expected list<str>");
}

// ---- dce

TEST(Dce, OutputMaskDropsOutputsAndTheirEquations) {
  IRPtr ir = trace_json(
      [&](auto in) {
        return Value::list({op_concat(std::vector<Value>{in[0], in[1]}, env()), op_format("{}!", in, Value(), env())});
      },
      R"(["x","y"])");
  IRPtr d = dce(*ir, J("[true,false]"));
  EXPECT_EQ(d->eqns.size(), 1u);
  EXPECT_EQ(run_json(d, R"(["a","b"])"), R"(["ab",null])");
  EXPECT_EQ(dce(*ir, Value())->eqns.size(), 2u);
  EXPECT_AF_ERROR(dce(*ir, J("[true]")), Code::InvalidArgument, "out_used is not a prefix");
}

TEST(Dce, CheckpointsStayAndDependsKeepsItsDeps) {
  IRPtr ir = trace_json(
      [&](auto in) {
        op_checkpoint(op_concat(std::vector<Value>{in[0], S("!")}, env()), "k", "c", env());
        Value dep = op_format("dep {}", in, Value(), env());
        return op_depends(in[0], std::vector<Value>{dep}, env());
      },
      R"(["x"])");
  IRPtr d = dce(*ir, Value());
  EXPECT_EQ(count_prim(*d, "checkpoint"), 1u);
  EXPECT_EQ(count_prim(*d, "concat"), 1u);
  EXPECT_EQ(count_prim(*d, "format"), 1u);
  // Unused entirely: depends and its dep go; the checkpoint stays.
  IRPtr none = dce(*ir, J("false"));
  EXPECT_EQ(count_prim(*none, "checkpoint"), 1u);
  EXPECT_EQ(count_prim(*none, "format"), 0u);
}

TEST(Dce, RecursesIntoBranchesAndLoopBodies) {
  IRPtr sw = pullback(*program("switch_trees").ir);
  // Keep only the outputs: the backward switch goes.
  IRPtr fwd_only = dce(*sw, J("[true,false]"));
  EXPECT_EQ(count_prim(*fwd_only, "switch", false), 1u) << to_text(*fwd_only);
  // Only "m" of the forward switch: branch "a" loses its concat.
  IRPtr m_only = dce(*program("switch_trees").ir, J(R"({"m":true,"s":false})"));
  EXPECT_EQ(count_prim(*m_only, "concat"), 0u) << to_text(*m_only);
  EXPECT_EQ(run_json(m_only, R"(["a","p","p"])"), R"({"s":null,"m":true})");
  // A loop whose second state leaf is never needed loses it.
  IRPtr always = trace_json([&](auto in) { return op_match(in[0].items()[0], in[0].items()[0], env()); }, R"([["x","y"]])");
  IRPtr body = trace_json(
      [&](auto in) {
        return Value::list({op_format("({})", std::vector<Value>{in[0].items()[0]}, Value(), env()),
                            op_concat(std::vector<Value>{in[0].items()[1], S("?")}, env())});
      },
      R"([["x","y"]])");
  IRPtr loop = trace_json([&](auto in) { return op_while_loop(always, body, Value::list({in[0], in[1]}), 2, env()); },
                          R"(["x","y"])");
  IRPtr first = dce(*loop, J("[true,false]"));
  EXPECT_EQ(count_prim(*first, "concat"), 0u) << to_text(*first);
  EXPECT_EQ(run_json(first, R"(["a","b"])"), R"j(["((a))",null])j");
}

// ---- cse

TEST(Cse, MergesPureEquationsAndPureHostCallsNeverCheckpointsOrEffectfulHostCalls) {
  IRPtr ir = trace_json(
      [&](auto in) {
        Value a = op_concat(std::vector<Value>{in[0], S("!")}, env());
        Value b = op_concat(std::vector<Value>{in[0], S("!")}, env());
        Value c1 = op_checkpoint(a, "k", "c", env());
        Value c2 = op_checkpoint(b, "k", "c", env());
        Value h1 = op_host_call("upper", in, env());
        Value h2 = op_host_call("upper", in, env());
        Value p1 = op_host_call("upper_pure", in, env());
        Value p2 = op_host_call("upper_pure", in, env());
        return Value::list({a, b, c1, c2, h1, h2, p1, p2});
      },
      R"(["x"])");
  IRPtr c = cse(*ir);
  EXPECT_EQ(count_prim(*c, "concat"), 1u);
  EXPECT_EQ(count_prim(*c, "checkpoint"), 2u);
  EXPECT_EQ(count_prim(*c, "host_call"), 3u);  // the effectful two and one pure
  EXPECT_EQ(count_prim(*cse(*ir, true), "host_call"), 3u);
  EXPECT_EQ(run_json(c, R"(["a"])"), R"(["a!","a!","a!","a!","A","A","A","A"])");
}

TEST(Dce, RemovesUnusedPureHostCallsNeverEffectfulOnes) {
  IRPtr ir = trace_json(
      [&](auto in) {
        op_host_call("upper", in, env());
        op_host_call("upper_pure", in, env());
        return in[0];
      },
      R"(["x"])");
  IRPtr d = dce(*ir, Value());
  EXPECT_EQ(count_prim(*d, "host_call"), 1u);
  EXPECT_EQ(d->eqns[0].params.value("name").as_str(), "upper");
}

TEST(Cse, InsideBranches) {
  IRPtr br = trace_json(
      [&](auto in) {
        return op_concat(std::vector<Value>{op_format("{}", in, Value(), env()), op_format("{}", in, Value(), env())},
                         env());
      },
      R"(["x"])");
  std::vector<std::string> names{"only"};
  std::vector<IRPtr> brs{br};
  IRPtr ir = trace_json([&](auto in) { return op_switch(in[0], names, brs, in.subspan(1), env()); }, R"(["only","x"])");
  EXPECT_EQ(count_prim(*ir, "format"), 2u);
  EXPECT_EQ(count_prim(*cse(*ir), "format"), 1u);
  EXPECT_EQ(run_json(cse(*ir), R"(["only","a"])"), R"("aa")");
}

// ---- sched

TEST(Sched, LevelsAndPrioritiesInTextAndDot) {
  IRPtr ir = trace_json(
      [&](auto in) {
        Value a = op_concat(std::vector<Value>{in[0], S("1")}, env());
        Value b = op_concat(std::vector<Value>{a, S("2")}, env());
        Value c = op_format("{}", in, Value(), env());
        return op_concat(std::vector<Value>{b, c}, env());
      },
      R"(["x"])");
  IRPtr s = sched(*ir);
  ASSERT_EQ(s->eqns.size(), 4u);
  EXPECT_EQ(s->eqns[0].sched()->level, 0u);
  EXPECT_EQ(s->eqns[1].sched()->level, 1u);
  EXPECT_EQ(s->eqns[2].sched()->level, 0u);
  EXPECT_EQ(s->eqns[3].sched()->level, 2u);
  EXPECT_EQ(s->eqns[0].sched()->priority, 3.0);
  EXPECT_EQ(s->eqns[2].sched()->priority, 2.0);
  EXPECT_EQ(s->eqns[3].sched()->priority, 1.0);
  std::string text = to_text(*s);
  EXPECT_NE(text.find("concat(%1, \"2\") @level=1 @priority=2"), std::string::npos) << text;
  std::string dot = to_dot(*s);
  EXPECT_NE(dot.find("{ rank=same; e0; e2; }"), std::string::npos) << dot;
  EXPECT_NE(dot.find("level 2, priority 1"), std::string::npos) << dot;
  EXPECT_FALSE(ir_equal(*s, *ir));
  // dce(sched(ir)) keeps the annotations and still runs.
  EXPECT_EQ(run_json(dce(*s, Value()), R"(["a"])"), R"("a12a")");
  EXPECT_TRUE(dce(*s, Value())->eqns[0].sched().has_value());
}

// A control-flow equation weighs its heaviest sub-IR's path (eqn_cost), and
// the sub-IRs are scheduled too.
TEST(Sched, ControlFlowWeighsItsHeaviestBranch) {
  IRPtr two = trace_json(
      [&](auto in) { return op_concat(std::vector<Value>{op_concat(std::vector<Value>{in[0], S("1")}, env()), S("2")}, env()); },
      R"(["x"])");
  IRPtr one = trace_json([&](auto in) { return op_concat(std::vector<Value>{in[0], S("1")}, env()); }, R"(["x"])");
  std::vector<std::string> names{"one", "two"};
  std::vector<IRPtr> brs{one, two};
  IRPtr ir = trace_json(
      [&](auto in) {
        Value r = op_switch(in[0], names, brs, in.subspan(1), env());
        return op_concat(std::vector<Value>{r, S("!")}, env());
      },
      R"(["one","x"])");
  EXPECT_EQ(eqn_cost(ir->eqns[0]), 2.0);  // switch (cost 0) + the two-concat branch
  IRPtr s = sched(*ir);
  EXPECT_EQ(s->eqns[0].sched()->priority, 3.0);  // 2 + the concat after it
  EXPECT_EQ(s->eqns[1].sched()->priority, 1.0);
  const IRMap& sb = std::get<IRMap>(*s->eqns[0].params.find("branches"));
  ASSERT_TRUE(sb[1].second->eqns[0].sched().has_value());
  EXPECT_EQ(sb[1].second->eqns[0].sched()->priority, 2.0);
  EXPECT_EQ(ir_path_cost(*s), 3.0);
}

// ---- performance shape: transforms are linear in the IR size

TEST(Scale, PullbackOfALongChainIsLinear) {
  for (size_t n : {1000u, 20000u}) {
    IRPtr ir = trace_json(
        [&](auto in) {
          Value v = in[0];
          for (size_t i = 0; i < n; ++i) v = op_concat(std::vector<Value>{v, S("")}, env());
          return v;
        },
        R"(["x"])");
    IRPtr pb = pullback(*ir);
    EXPECT_EQ(pb->eqns.size(), n) << "concat's backward adds no equation";
    EXPECT_EQ(run_json(pb, R"([["a"],"g"])"), R"(["a",["g"]])");
  }
}

}  // namespace
}  // namespace af::testing
