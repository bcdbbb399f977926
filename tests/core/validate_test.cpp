// validate(): SSA, structure and avals against each primitive's abstract rule,
// on IRs built by hand from a valid base and broken one way at a time. Also
// aval_of / aval_name, which validate relies on.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iterator>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "expect_error.h"
#include "ir/ir.h"
#include "ir/prim.h"
#include "prims/ops.h"
#include "ir/registry.h"
#include "trace/trace.h"
#include "value/error.h"
#include "value/value.h"

namespace af {
namespace {

using Args = std::span<const Value>;

const Aval kStr{Kind::Str, 0};
const Aval kInt{Kind::Int, 0};
const Aval kBool{Kind::Bool, 0};

Value S(const char* s) { return Value::str(s); }
Atom V(VarId v) { return Atom::of_var(v); }
Atom L(const char* s) { return Atom::literal(Value::str(s)); }

Eqn eqn(const char* prim_name, std::vector<Atom> in, std::vector<VarId> out) {
  Eqn e;
  e.prim = &prim(prim_name);
  e.in_tree = TreeDef::flat_list(in.size());
  e.in = std::move(in);
  e.out_tree = TreeDef::leaf();
  e.out = std::move(out);
  return e;
}

// The valid base: ir (%0:str, %1:str) { %2 = concat(%0, "?"); %3 = match(%2, %1); return [%2, %3] }
IR base() {
  IR ir;
  ir.vars = {kStr, kStr, kStr, kBool};
  ir.in = {V(0), V(1)};
  ir.in_tree = TreeDef::flat_list(2);
  ir.eqns = {eqn("concat", {V(0), L("?")}, {2}), eqn("match", {V(2), V(1)}, {3})};
  ir.out = {V(2), V(3)};
  ir.out_tree = TreeDef::flat_list(2);
  return ir;
}

// A test primitive whose params may hold sub-IRs; its rule accepts anything.
AbstractOut one_str(const Params&, std::span<const Aval>, const TreeDef&) {
  return {{kStr}, TreeDef::leaf()};
}
const Prim* with_body() {
  static const Prim* p = [] {
    Prim q;
    q.name = "validate_test_with_body";
    q.abstract_eval = one_str;
    return register_prim(q);
  }();
  return p;
}

// The base with one equation of with_body() whose param `name` is `param`.
IR with_sub_ir(const std::string& name, Param param) {
  IR ir = base();
  Eqn e;
  e.prim = with_body();
  e.in = {V(0)};
  e.in_tree = TreeDef::flat_list(1);
  e.out = {4};
  e.out_tree = TreeDef::leaf();
  e.params.set(name, std::move(param));
  ir.vars.push_back(kStr);
  ir.eqns.push_back(e);
  return ir;
}

IRPtr broken_sub_ir() {
  IR sub = base();
  sub.out = {V(2), V(9)};
  return std::make_shared<const IR>(std::move(sub));
}

TEST(Validate, TheBaseIsValid) { EXPECT_NO_THROW(validate(base())); }

TEST(Validate, TracedIrsAreValid) {
  RunEnv env;
  IRPtr a = trace(
      [&](Args in) {
        std::vector<Value> args{in[0], in[1].items()[0]};
        Value f = op_format("{}-{}", args, Value(), env);
        std::vector<Value> parts{f, in[2]};
        Value c = op_concat(parts, env);
        return Value::dict({{"c", c}, {"m", op_match(c, S("x"), env)}, {"lit", Value::integer(1)}});
      },
      std::vector<Value>{S("x"), from_json("[1, null]"), S("s")}, from_json("[false, false, true]"));
  EXPECT_NO_THROW(validate(*a));
  IRPtr b = trace(
      [&](Args in) {
        Value sg = op_stop_gradient(Value::list({in[0], in[1]}), env);
        return op_checkpoint(sg, "k", "c", env);
      },
      std::vector<Value>{S("x"), Value::floating(1)}, Value());
  EXPECT_NO_THROW(validate(*b));
  IRPtr empty = trace([&](Args) { return Value(); }, std::vector<Value>{}, Value());
  EXPECT_NO_THROW(validate(*empty));
}

TEST(Validate, ValidSubIrsInEveryParamShape) {
  auto good = std::make_shared<const IR>(base());
  EXPECT_NO_THROW(validate(with_sub_ir("body", good)));
  EXPECT_NO_THROW(validate(with_sub_ir("bodies", IRList{good, good})));
  EXPECT_NO_THROW(validate(with_sub_ir("branches", IRMap{{"a", good}, {"b", good}})));
  EXPECT_NO_THROW(validate(with_sub_ir("n", Value::integer(2))));
}

struct BrokenCase {
  const char* label;
  std::function<void(IR&)> breaks;
  const char* fragment;
};
void PrintTo(const BrokenCase& c, std::ostream* os) { *os << c.label; }

class ValidateRejects : public ::testing::TestWithParam<BrokenCase> {};

TEST_P(ValidateRejects, WithAMessage) {
  IR ir = base();
  GetParam().breaks(ir);
  EXPECT_AF_ERROR(validate(ir), Code::InvalidArgument, "invalid IR");
  EXPECT_AF_ERROR(validate(ir), Code::InvalidArgument, GetParam().fragment);
}

INSTANTIATE_TEST_SUITE_P(
    All, ValidateRejects,
    ::testing::Values(
        BrokenCase{"use_before_def", [](IR& ir) { std::swap(ir.eqns[0], ir.eqns[1]); },
                   "equation 0 (match) uses %2 before it is defined"},
        BrokenCase{"use_of_own_output", [](IR& ir) { ir.eqns[0].in[0] = V(2); },
                   "equation 0 (concat) uses %2 before it is defined"},
        BrokenCase{"use_out_of_range", [](IR& ir) { ir.eqns[1].in[1] = V(40); },
                   "equation 1 (match) uses %40 before it is defined"},
        BrokenCase{"double_def_by_eqns", [](IR& ir) { ir.eqns[1].out = {2}; },
                   "%2 is defined twice (equation 1 (match))"},
        BrokenCase{"eqn_redefines_input", [](IR& ir) { ir.eqns[0].out = {0}; },
                   "%0 is defined twice (equation 0 (concat))"},
        BrokenCase{"input_twice", [](IR& ir) { ir.in = {V(0), V(0)}; },
                   "%0 is defined twice (an input)"},
        BrokenCase{"def_out_of_range", [](IR& ir) { ir.eqns[0].out = {7}; },
                   "equation 0 (concat) defines %7, beyond the 4 vars"},
        BrokenCase{"input_out_of_range", [](IR& ir) { ir.in = {V(0), V(4)}; },
                   "an input defines %4, beyond the 4 vars"},
        BrokenCase{"output_undefined", [](IR& ir) { ir.out[1] = V(9); },
                   "the output uses %9 before it is defined"},
        BrokenCase{"wrong_output_aval", [](IR& ir) { ir.vars[3] = kStr; },
                   "equation 1 (match): output 0 is declared str but the primitive produces bool"},
        BrokenCase{"wrong_batched_aval", [](IR& ir) { ir.vars[2] = Aval{Kind::Str, 1}; },
                   "equation 0 (concat): output 0 is declared list<str> but the primitive produces str"},
        BrokenCase{"rule_rejects_input_kind", [](IR& ir) { ir.vars[0] = kInt; },
                   "concat: argument 0 is int"},
        BrokenCase{"rule_rejects_literal_kind",
                   [](IR& ir) { ir.eqns[0].in[1] = Atom::literal(Value::integer(1)); },
                   "concat: argument 1 is int"},
        BrokenCase{"rule_rejects_arity",
                   [](IR& ir) {
                     ir.eqns[1].in.push_back(L("x"));
                     ir.eqns[1].in_tree = TreeDef::flat_list(3);
                   },
                   "match: takes 2 arguments, got 3"},
        BrokenCase{"ir_input_leaf_count", [](IR& ir) { ir.in_tree = TreeDef::flat_list(3); },
                   "input leaves do not match the input structure"},
        BrokenCase{"ir_output_leaf_count", [](IR& ir) { ir.out.pop_back(); },
                   "output leaves do not match the output structure"},
        BrokenCase{"inputs_not_a_list", [](IR& ir) { ir.in = {V(0)}; ir.in_tree = TreeDef::leaf(); },
                   "the inputs are not a list"},
        BrokenCase{"eqn_input_leaf_count",
                   [](IR& ir) { ir.eqns[0].in_tree = TreeDef::flat_list(3); },
                   "equation 0 (concat): inputs do not match the input structure"},
        BrokenCase{"eqn_output_leaf_count",
                   [](IR& ir) { ir.eqns[0].out_tree = TreeDef::flat_list(2); },
                   "equation 0 (concat): outputs do not match the output structure"},
        BrokenCase{"eqn_output_structure",
                   [](IR& ir) { ir.eqns[0].out_tree = TreeDef::flat_list(1); },
                   "equation 0 (concat): output structure differs from the primitive's rule"},
        BrokenCase{"no_primitive", [](IR& ir) { ir.eqns[1].prim = nullptr; },
                   "equation 1 has no primitive"}),
    [](const auto& info) { return std::string(info.param.label); });

TEST(ValidateRejects, BrokenSubIrsNameWhereTheyAre) {
  EXPECT_AF_ERROR(validate(with_sub_ir("body", broken_sub_ir())), Code::InvalidArgument,
                  "invalid IR > equation 2 (validate_test_with_body) param body: the output uses %9");
  EXPECT_AF_ERROR(validate(with_sub_ir("bodies", IRList{std::make_shared<const IR>(base()),
                                                        broken_sub_ir()})),
                  Code::InvalidArgument,
                  "invalid IR > equation 2 (validate_test_with_body) param bodies: the output");
  EXPECT_AF_ERROR(validate(with_sub_ir("branches", IRMap{{"a_ok", std::make_shared<const IR>(base())},
                                                         {"bad", broken_sub_ir()}})),
                  Code::InvalidArgument,
                  "invalid IR > equation 2 (validate_test_with_body) param branches[bad]: the output");
}

// Runs in a child process (a death test), so a crash fails this test without
// taking the rest of the suite down. Passes when validate throws
// INVALID_ARGUMENT naming the param.
int validate_null_sub_ir(const std::string& name, Param param) {
  try {
    validate(with_sub_ir(name, std::move(param)));
  } catch (const Error& e) {
    bool ok = e.code() == Code::InvalidArgument &&
              std::string(e.what()).find("param " + name) != std::string::npos;
    std::fprintf(stderr, "%s\n", e.what());
    return ok ? 0 : 2;
  }
  std::fprintf(stderr, "validate accepted a null sub-IR\n");
  return 3;
}

TEST(ValidateDeathTest, NullSubIrIsAnErrorNotACrash) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(std::exit(validate_null_sub_ir("body", IRPtr())), ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(std::exit(validate_null_sub_ir("bodies", IRList{IRPtr()})),
              ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(std::exit(validate_null_sub_ir("branches", IRMap{{"a", IRPtr()}})),
              ::testing::ExitedWithCode(0), "");
}

// ---- avals

TEST(Aval, OfValuesAndNames) {
  struct Case {
    Value v;
    const char* name;
  };
  const Case cases[] = {
      {S("a"), "str"},
      {Value::integer(1), "int"},
      {Value::floating(1), "float"},
      {Value::boolean(true), "bool"},
      {Value(), "null"},
      {from_json(R"(["a", "b"])"), "list<str>"},
      {from_json("[[1], [2, 3]]"), "list<list<int>>"},
      {from_json(R"(["a", 1])"), "list"},
      {from_json("[]"), "list"},
      {from_json("[null]"), "list"},
      {from_json(R"([{"k": 1}])"), "list"},
      {from_json(R"({"k": 1})"), "dict"},
      {Value::placeholder({1, 0, Kind::Int}), "int"},
      {Value::list({Value::placeholder({1, 0, Kind::Bool})}), "list<bool>"},
  };
  for (size_t i = 0; i < std::size(cases); ++i)
    EXPECT_EQ(aval_name(aval_of(cases[i].v)), cases[i].name) << "case " << i;
}

}  // namespace
}  // namespace af
