// Execution: check_inputs, lower/run/call, and the Walker stepper.
#include <gtest/gtest.h>

#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "expect_error.h"
#include "exec/sequential.h"
#include "ir/ir.h"
#include "prims/ops.h"
#include "ir/registry.h"
#include "trace/trace.h"
#include "value/error.h"
#include "value/value.h"

namespace af {
namespace {

using Args = std::span<const Value>;

Value S(const char* s) { return Value::str(s); }
Value J(const char* json) { return from_json(json); }

// f(x: str, y: [str, {"k": int}], z: str static "s") =
//   [concat(x, y[0], z), format("{}", y[1]["k"])]
IRPtr program(RunEnv& env) {
  return trace(
      [&](Args in) {
        std::vector<Value> parts{in[0], in[1].items()[0], in[2]};
        std::vector<Value> args{*in[1].items()[1].find("k")};
        return Value::list({op_concat(parts, env), op_format("{}", args, Value(), env)});
      },
      std::vector<Value>{S("x"), J(R"(["y", {"k": 1}])"), S("s")}, J("[false, false, true]"));
}

// hello(x) = concat(format("Hello, {}!", x), "?")
IRPtr hello(RunEnv& env) {
  return trace(
      [&](Args in) {
        std::vector<Value> fargs{in[0]};
        std::vector<Value> cargs{op_format("Hello, {}!", fargs, Value(), env), S("?")};
        return op_concat(cargs, env);
      },
      std::vector<Value>{S("x")}, Value());
}

// ---- check_inputs

struct InputsCase {
  const char* inputs;    // JSON list of the positional inputs
  const char* fragment;  // nullptr = accepted
};
void PrintTo(const InputsCase& c, std::ostream* os) { *os << c.inputs; }

class ExecCheckInputs : public ::testing::TestWithParam<InputsCase> {};

TEST_P(ExecCheckInputs, NamesThePathAndWhatWasExpected) {
  RunEnv env;
  IRPtr ir = program(env);
  Value inputs = J(GetParam().inputs);
  if (!GetParam().fragment) {
    EXPECT_NO_THROW(check_inputs(*ir, inputs.items()));
  } else {
    EXPECT_AF_ERROR(check_inputs(*ir, inputs.items()), Code::InvalidArgument, GetParam().fragment);
  }
}

INSTANTIATE_TEST_SUITE_P(
    All, ExecCheckInputs,
    ::testing::Values(
        InputsCase{R"(["a", ["b", {"k": 2}], "s"])", nullptr},
        InputsCase{"[]", "the program takes 3 input(s), got 0"},
        InputsCase{R"(["a", ["b", {"k": 2}], "s", "extra"])", "the program takes 3 input(s), got 4"},
        InputsCase{R"([1, ["b", {"k": 2}], "s"])", "input[0]: expected str, found int"},
        InputsCase{R"([null, ["b", {"k": 2}], "s"])", "input[0]: expected str, found null"},
        InputsCase{R"([["a"], ["b", {"k": 2}], "s"])", "input[0]: expected str, found list<str>"},
        InputsCase{R"([{"a": 1}, ["b", {"k": 2}], "s"])", "input[0]: expected str, found dict"},
        InputsCase{R"(["a", "b", "s"])", "input[1]: expected a list of 2, found a leaf (str)"},
        InputsCase{R"(["a", ["b"], "s"])", "input[1]: expected a list of 2, found a list of 1"},
        InputsCase{R"(["a", ["b", {"j": 2}], "s"])",
                   R"(input[1][1]: expected a dict with keys {"k"}, found a dict with keys {"j"})"},
        InputsCase{R"(["a", ["b", {"k": "2"}], "s"])", R"(input[1][1]["k"]: expected int, found str)"},
        InputsCase{R"(["a", ["b", {"k": 2.0}], "s"])", R"(input[1][1]["k"]: expected int, found float)"},
        InputsCase{R"(["a", [true, {"k": 2}], "s"])", "input[1][0]: expected str, found bool"},
        InputsCase{R"(["a", ["b", {"k": 2}], "t"])",
                   R"(static input mismatch at input[2]: expected "s", got "t")"},
        InputsCase{R"(["a", ["b", {"k": 2}], 5])",
                   R"(static input mismatch at input[2]: expected "s", got 5)"}),
    [](const auto& info) { return "case" + std::to_string(info.index); });

TEST(ExecCheckInputs, ReturnsTheFlatLeavesInOrder) {
  RunEnv env;
  IRPtr ir = program(env);
  Value inputs = J(R"(["a", ["b", {"k": 2}], "s"])");
  EXPECT_EQ(to_json(Value::list(check_inputs(*ir, inputs.items()))), R"(["a","b",2,"s"])");
}

TEST(ExecCheckInputs, PlaceholdersAreRejectedUnlessInlining) {
  RunEnv env;
  IRPtr ir = hello(env);
  std::vector<Value> str_ph{Value::placeholder({99, 0, Kind::Str})};
  std::vector<Value> int_ph{Value::placeholder({99, 0, Kind::Int})};
  // A run needs concrete values.
  EXPECT_AF_ERROR(check_inputs(*ir, str_ph), Code::InvalidArgument,
                  "input[0]: a traced value (placeholder) cannot be run");
  EXPECT_AF_ERROR(call(ir, str_ph, env), Code::InvalidArgument, "cannot be run");
  // Inlining into a trace checks them by kind.
  EXPECT_NO_THROW(check_inputs(*ir, str_ph, /*allow_placeholders=*/true));
  EXPECT_AF_ERROR(check_inputs(*ir, int_ph, /*allow_placeholders=*/true), Code::InvalidArgument,
                  "input[0]: expected str, found int");
}

// ---- call / run

TEST(ExecCall, RunsATracedProgram) {
  RunEnv env;
  IRPtr ir = program(env);
  Value inputs = J(R"(["a", ["b", {"k": -3}], "s"])");
  EXPECT_EQ(to_json(call(ir, inputs.items(), env)), R"(["abs","-3"])");
  // Running twice gives the same result: no state is kept between calls.
  EXPECT_EQ(to_json(call(ir, inputs.items(), env)), R"(["abs","-3"])");
}

TEST(ExecCall, RejectsBadInputsBeforeRunning) {
  RunEnv env;
  IRPtr ir = hello(env);
  std::vector<Value> bad{Value::integer(1)};
  EXPECT_AF_ERROR(call(ir, bad, env), Code::InvalidArgument, "input[0]: expected str, found int");
}

// A hand-built IR whose equations have only literal inputs:
//   ir () { %0 = concat("a", "b"); %1 = match(%0, "ab"); return [%0, %1, "lit", null] }
IRPtr literal_only_ir() {
  auto ir = std::make_shared<IR>();
  ir->vars = {Aval{Kind::Str, 0}, Aval{Kind::Bool, 0}};
  ir->in_tree = TreeDef::flat_list(0);
  Eqn c;
  c.prim = &prim("concat");
  c.in = {Atom::literal(S("a")), Atom::literal(S("b"))};
  c.in_tree = TreeDef::flat_list(2);
  c.out = {0};
  c.out_tree = TreeDef::leaf();
  Eqn m;
  m.prim = &prim("match");
  m.in = {Atom::of_var(0), Atom::literal(S("ab"))};
  m.in_tree = TreeDef::flat_list(2);
  m.out = {1};
  m.out_tree = TreeDef::leaf();
  ir->eqns = {c, m};
  ir->out = {Atom::of_var(0), Atom::of_var(1), Atom::literal(S("lit"))};
  ir->out_tree = TreeDef::of(J(R"([0, 0, 0, null])"));
  return ir;
}

TEST(ExecCall, RunsALiteralOnlyIr) {
  RunEnv env;
  IRPtr ir = literal_only_ir();
  ASSERT_NO_THROW(validate(*ir));
  EXPECT_EQ(to_json(call(ir, {}, env)), R"(["ab",true,"lit",null])");
}

TEST(ExecLower, SlotPerVarThenPerLiteral) {
  auto plan = compile(literal_only_ir());
  // 2 vars, then literals in order of appearance: "a", "b", "ab", "lit".
  EXPECT_EQ(plan->n_slots, 6u);
  EXPECT_EQ(to_json(Value::list(plan->constants)), R"(["a","b","ab","lit"])");
  EXPECT_TRUE(plan->in_slots.empty());
  EXPECT_EQ(plan->out_slots, (std::vector<uint32_t>{0, 1, 5}));
  ASSERT_EQ(plan->nodes.size(), 2u);
  EXPECT_EQ(plan->nodes[1].in_begin, 2u);
  EXPECT_EQ(plan->nodes[1].in_count, 2u);
  EXPECT_EQ(plan->args, (std::vector<uint32_t>{2, 3, 0, 4}));
  EXPECT_EQ(plan->results, (std::vector<uint32_t>{0, 1}));
  std::vector<Value> none;
  RunEnv env;
  EXPECT_EQ(to_json(plan->ir->out_tree.unflatten(run_sequential(*plan, none, env))), R"(["ab",true,"lit",null])");
}

TEST(ExecCall, OutputsMayRepeatAnInputAndALiteral) {
  RunEnv env;
  IRPtr ir = trace([&](Args in) { return Value::list({in[0], in[0], S("k")}); },
                   std::vector<Value>{S("x")}, Value());
  std::vector<Value> args{S("v")};
  EXPECT_EQ(to_json(call(ir, args, env)), R"(["v","v","k"])");
}

// ---- Walker

TEST(ExecWalker, StepsEvaluatesAndAcceptsOutputs) {
  RunEnv env;
  IRPtr ir = hello(env);
  std::vector<Value> inputs{S("World")};
  Walker w(ir, check_inputs(*ir, inputs), env);

  ASSERT_FALSE(w.done());
  EXPECT_EQ(w.eqn_index(), 0u);
  EXPECT_EQ(w.eqn().prim->name, "format");
  EXPECT_EQ(to_json(w.inputs()), R"(["World"])");
  w.eval();

  ASSERT_FALSE(w.done());
  EXPECT_EQ(w.eqn_index(), 1u);
  EXPECT_EQ(w.eqn().prim->name, "concat");
  EXPECT_EQ(to_json(w.inputs()), R"(["Hello, World!","?"])");
  EXPECT_AF_ERROR(w.outputs(), Code::InvalidArgument,
                  "walk: 1 equation(s) are still to run before the outputs exist");
  w.send(S("substituted"));

  EXPECT_TRUE(w.done());
  EXPECT_EQ(w.outputs(), S("substituted"));
  EXPECT_AF_ERROR(w.eval(), Code::InvalidArgument, "walk: no equation left to evaluate");
  EXPECT_AF_ERROR(w.send(S("x")), Code::InvalidArgument, "walk: no equation left to send outputs for");
}

TEST(ExecWalker, EvalAllMatchesCall) {
  RunEnv env;
  IRPtr ir = program(env);
  Value inputs = J(R"(["a", ["b", {"k": 7}], "s"])");
  Walker w(ir, check_inputs(*ir, inputs.items()), env);
  size_t steps = 0;
  while (!w.done()) {
    w.eval();
    ++steps;
  }
  EXPECT_EQ(steps, ir->eqns.size());
  EXPECT_EQ(w.outputs(), call(ir, inputs.items(), env));
}

TEST(ExecWalker, SentValuesFlowToLaterEquations) {
  RunEnv env;
  IRPtr ir = hello(env);
  std::vector<Value> inputs{S("World")};
  Walker w(ir, check_inputs(*ir, inputs), env);
  w.send(S("host-made"));
  EXPECT_EQ(to_json(w.inputs()), R"(["host-made","?"])");
  w.eval();
  EXPECT_EQ(w.outputs(), S("host-made?"));
}

struct SendCase {
  const char* outputs;  // JSON
  const char* fragment;
};
void PrintTo(const SendCase& c, std::ostream* os) { *os << c.outputs; }

class ExecWalkerSend : public ::testing::TestWithParam<SendCase> {};

TEST_P(ExecWalkerSend, RejectsOutputsOfTheWrongShapeOrKind) {
  RunEnv env;
  // f(x) = stop_gradient([x, {"n": format("{}", x)}]): a tree-shaped output.
  IRPtr ir = trace(
      [&](Args in) {
        std::vector<Value> args{in[0]};
        Value tree = Value::list({in[0], Value::dict({{"n", op_format("{}", args, Value(), env)}})});
        return op_stop_gradient(tree, env);
      },
      std::vector<Value>{S("x")}, Value());
  std::vector<Value> inputs{S("v")};
  Walker w(ir, check_inputs(*ir, inputs), env);
  w.eval();  // format
  ASSERT_EQ(w.eqn().prim->name, "stop_gradient");
  EXPECT_AF_ERROR(w.send(J(GetParam().outputs)), Code::InvalidArgument, GetParam().fragment);
  // A rejected send leaves the walker where it was.
  EXPECT_EQ(w.eqn_index(), 1u);
  w.send(J(R"(["ok", {"n": "fine"}])"));
  EXPECT_EQ(to_json(w.outputs()), R"(["ok",{"n":"fine"}])");
}

INSTANTIATE_TEST_SUITE_P(
    All, ExecWalkerSend,
    ::testing::Values(
        SendCase{R"("flat")", "walk: outputs of stop_gradient: expected a list of 2, found a leaf (str)"},
        SendCase{R"(["a"])", "walk: outputs of stop_gradient: expected a list of 2, found a list of 1"},
        SendCase{R"(["a", {"m": "b"}])", R"(expected a dict with keys {"n"})"},
        SendCase{R"([1, {"n": "b"}])", "walk: output 0 of stop_gradient: expected str, found int"},
        SendCase{R"(["a", {"n": true}])", "walk: output 1 of stop_gradient: expected str, found bool"}),
    [](const auto& info) { return "case" + std::to_string(info.index); });

TEST(ExecWalker, SendRejectsPlaceholders) {
  RunEnv env;
  IRPtr ir = hello(env);
  std::vector<Value> inputs{S("World")};
  Walker w(ir, check_inputs(*ir, inputs), env);
  EXPECT_AF_ERROR(w.send(Value::placeholder({1, 0, Kind::Str})), Code::InvalidArgument,
                  "walk: outputs of format must be concrete values");
}

TEST(ExecWalker, ProgramWithoutEquationsIsDoneAtOnce) {
  RunEnv env;
  IRPtr ir = trace([&](Args in) { return Value::list({in[0], S("k")}); },
                   std::vector<Value>{S("x")}, Value());
  std::vector<Value> inputs{S("v")};
  Walker w(ir, check_inputs(*ir, inputs), env);
  EXPECT_TRUE(w.done());
  EXPECT_EQ(to_json(w.outputs()), R"(["v","k"])");
}

}  // namespace
}  // namespace af
