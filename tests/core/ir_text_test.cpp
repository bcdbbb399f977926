// IR text form, DOT, structural equality/hash and dependency queries, on
// hand-built IRs over test-only primitives.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "ir/prim.h"
#include "ir/registry.h"
#include "value/error.h"

namespace af {
namespace {

AbstractOut one_str(const Params&, std::span<const Aval>, const TreeDef&) {
  return {{Aval{Kind::Str, 0}}, TreeDef::leaf()};
}

// Test primitives, registered once per process under names no other suite uses.
const Prim* test_prim(const std::string& name, uint32_t version = 1) {
  static std::vector<const Prim*> made;
  for (const Prim* p : made)
    if (p->name == name && p->version == version) return p;
  Prim p;
  p.name = name;
  p.version = version;
  p.abstract_eval = one_str;
  made.push_back(register_prim(std::move(p)));
  return made.back();
}

Atom V(VarId v) { return Atom::of_var(v); }
Atom L(Value v) { return Atom::literal(std::move(v)); }
Value S(const char* s) { return Value::str(s); }
const Aval kStr{Kind::Str, 0};
const Aval kInt{Kind::Int, 0};

Tags tags(std::vector<std::string> t) {
  return std::make_shared<const std::vector<std::string>>(std::move(t));
}

// An equation with flat positional inputs and one output (or a flat list of
// several).
Eqn eqn(const std::string& prim, std::vector<Atom> in, std::vector<VarId> out, Params params = {},
        Tags t = nullptr) {
  Eqn e;
  e.prim = test_prim(prim);
  e.in_tree = TreeDef::flat_list(in.size());
  e.in = std::move(in);
  e.out_tree = out.size() == 1 ? TreeDef::leaf() : TreeDef::flat_list(out.size());
  e.out = std::move(out);
  e.params = std::move(params);
  e.set_tags(std::move(t));
  return e;
}

Params params(std::vector<std::pair<std::string, Param>> items) {
  Params p;
  for (auto& [name, value] : items) p.set(name, std::move(value));
  return p;
}

// An IR with positional leaf inputs and a single output atom.
IR simple_ir(std::vector<Aval> vars, std::vector<Atom> in, std::vector<Eqn> eqns, Atom out) {
  IR ir;
  ir.vars = std::move(vars);
  ir.in_tree = TreeDef::flat_list(in.size());
  ir.in = std::move(in);
  ir.eqns = std::move(eqns);
  ir.out = {std::move(out)};
  ir.out_tree = TreeDef::leaf();
  return ir;
}

// The example of docs/IR_TEXT.md.
IR hello_ir() {
  IR ir;
  ir.vars = {kStr, kInt, kStr, kStr};
  std::vector<TreeDef> inputs = {TreeDef::leaf(), TreeDef::leaf(),
                                 TreeDef::of(Value::dict({{"k", Value::integer(0)}}))};
  ir.in_tree = TreeDef::list_of(inputs);
  ir.in = {V(0), L(S("static-literal")), V(1)};
  ir.eqns = {eqn("irtest.format", {V(0)}, {2}, params({{"template", S("Hello, {}!")}})),
             eqn("irtest.concat", {V(2), L(S("?"))}, {3}, {}, tags({"tag1", "tag2"}))};
  ir.out = {V(3)};
  ir.out_tree = TreeDef::leaf();
  return ir;
}

IRPtr upper_ir() {
  return std::make_shared<const IR>(
      simple_ir({kStr, kStr}, {V(0)}, {eqn("irtest.upper", {V(0)}, {1})}, V(1)));
}

IRPtr identity_ir() { return std::make_shared<const IR>(simple_ir({kStr}, {V(0)}, {}, V(0))); }

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// ---------------------------------------------------------------- text

struct TextCase {
  const char* name;
  std::function<IR()> build;
  const char* expected;
};

const TextCase kTextCases[] = {
    {"brief_example", hello_ir,
     "ir (%0:str, \"static-literal\", {\"k\": %1:int}) {\n"
     "  %2:str = irtest.format[template=\"Hello, {}!\"](%0)\n"
     "  %3:str = irtest.concat(%2, \"?\") #tag1,tag2\n"
     "  return %3\n"
     "}\n"},
    {"empty",
     [] {
       IR ir;
       ir.in_tree = TreeDef::flat_list(0);
       ir.out_tree = TreeDef::flat_list(0);
       return ir;
     },
     "ir () {\n"
     "  return []\n"
     "}\n"},
    {"value_params_sorted_compact_json",
     [] {
       Params p = params({{"z", Value::floating(2.0)},
                          {"a", Value::list({Value::integer(1), S("x"), Value()})},
                          {"m", Value::dict({{"b", Value::boolean(true)}, {"a", Value::integer(-3)}})},
                          {"nan", Value::floating(std::nan(""))}});
       return simple_ir({kStr, kStr}, {V(0)}, {eqn("irtest.p", {V(0)}, {1}, p)}, V(1));
     },
     "ir (%0:str) {\n"
     "  %1:str = irtest.p[a=[1,\"x\",null], m={\"b\":true,\"a\":-3}, nan=nan, z=2.0](%0)\n"
     "  return %1\n"
     "}\n"},
    {"tree_inputs_and_outputs",
     [] {
       IR ir;
       ir.vars = {kStr, kInt, kStr, kStr, kInt, kStr};
       ir.in_tree = TreeDef::flat_list(2);
       ir.in = {V(0), V(1)};
       Eqn split = eqn("irtest.split", {V(0), L(Value::integer(2))}, {2, 3, 4});
       split.out_tree = TreeDef::of(
           Value::list({Value::integer(0), Value::dict({{"b", Value::integer(0)}, {"a", Value::integer(0)}})}));
       Eqn join = eqn("irtest.join", {V(1), V(2), V(3), L(Value::boolean(false))}, {5});
       std::vector<TreeDef> positional = {
           TreeDef::leaf(), TreeDef::flat_list(2),
           TreeDef::of(Value::dict({{"x", Value()}, {"y", Value::integer(0)}}))};
       join.in_tree = TreeDef::list_of(positional);
       ir.eqns = {split, join};
       ir.out = {V(5), V(4), L(Value::floating(0.5))};
       ir.out_tree = TreeDef::of(
           Value::dict({{"s", Value::integer(0)}, {"n", Value::list({Value::integer(0), Value::integer(0)})}}));
       return ir;
     },
     "ir (%0:str, %1:int) {\n"
     "  [%2:str, {\"a\": %3:str, \"b\": %4:int}] = irtest.split(%0, 2)\n"
     "  %5:str = irtest.join(%1, [%2, %3], {\"x\": null, \"y\": false})\n"
     "  return {\"n\": [%5, %4], \"s\": 0.5}\n"
     "}\n"},
    {"batched_avals_and_literal_list",
     [] {
       Aval batched{Kind::Str, 2};
       return simple_ir({batched, batched}, {V(0)},
                        {eqn("irtest.map", {V(0), L(Value::list({S("a"), S("b")}))}, {1})}, V(1));
     },
     "ir (%0:list<list<str>>) {\n"
     "  %1:list<list<str>> = irtest.map(%0, [\"a\",\"b\"])\n"
     "  return %1\n"
     "}\n"},
    {"nested_ir_param",
     [] {
       Params p = params({{"body", upper_ir()}, {"n", Value::integer(3)}});
       return simple_ir({kStr, kStr}, {V(0)}, {eqn("irtest.call", {V(0)}, {1}, p)}, V(1));
     },
     "ir (%0:str) {\n"
     "  %1:str = irtest.call[body={\n"
     "    ir (%0:str) {\n"
     "      %1:str = irtest.upper(%0)\n"
     "      return %1\n"
     "    }\n"
     "  }, n=3](%0)\n"
     "  return %1\n"
     "}\n"},
    {"ir_list_and_map_params",
     [] {
       Params p = params({{"branches", IRList{identity_ir(), upper_ir()}},
                          {"cases", IRMap{{"a", identity_ir()}, {"b", nullptr}}},
                          {"none", IRList{}}});
       return simple_ir({kInt, kStr, kStr}, {V(0), V(1)}, {eqn("irtest.switch", {V(0), V(1)}, {2}, p)},
                        V(2));
     },
     "ir (%0:int, %1:str) {\n"
     "  %2:str = irtest.switch[branches=[{\n"
     "    ir (%0:str) {\n"
     "      return %0\n"
     "    }\n"
     "  }, {\n"
     "    ir (%0:str) {\n"
     "      %1:str = irtest.upper(%0)\n"
     "      return %1\n"
     "    }\n"
     "  }], cases={\"a\": {\n"
     "    ir (%0:str) {\n"
     "      return %0\n"
     "    }\n"
     "  }, \"b\": null}, none=[]](%0, %1)\n"
     "  return %2\n"
     "}\n"},
    {"shared_sub_ir_printed_once",
     [] {
       // One IR object in three slots: in full once (&1), then by label.
       IRPtr up = upper_ir();
       Params p =
           params({{"branches", IRList{up, identity_ir(), up}}, {"cases", IRMap{{"a", up}}}});
       return simple_ir({kInt, kStr, kStr}, {V(0), V(1)},
                        {eqn("irtest.switch", {V(0), V(1)}, {2}, p)}, V(2));
     },
     "ir (%0:int, %1:str) {\n"
     "  %2:str = irtest.switch[branches=[&1 {\n"
     "    ir (%0:str) {\n"
     "      %1:str = irtest.upper(%0)\n"
     "      return %1\n"
     "    }\n"
     "  }, {\n"
     "    ir (%0:str) {\n"
     "      return %0\n"
     "    }\n"
     "  }, *1], cases={\"a\": *1}](%0, %1)\n"
     "  return %2\n"
     "}\n"},
    {"doubly_nested_ir",
     [] {
       IRPtr inner = std::make_shared<const IR>(simple_ir(
           {kStr, kStr}, {V(0)}, {eqn("irtest.call", {V(0)}, {1}, params({{"body", upper_ir()}}))}, V(1)));
       return simple_ir({kStr, kStr}, {V(0)}, {eqn("irtest.call", {V(0)}, {1}, params({{"body", inner}}))},
                        V(1));
     },
     "ir (%0:str) {\n"
     "  %1:str = irtest.call[body={\n"
     "    ir (%0:str) {\n"
     "      %1:str = irtest.call[body={\n"
     "        ir (%0:str) {\n"
     "          %1:str = irtest.upper(%0)\n"
     "          return %1\n"
     "        }\n"
     "      }](%0)\n"
     "      return %1\n"
     "    }\n"
     "  }](%0)\n"
     "  return %1\n"
     "}\n"},
    {"versioned_prim_no_inputs_escaped_literal",
     [] {
       Eqn e = eqn("irtest.const", {}, {0});
       e.prim = test_prim("irtest.const", 2);
       return simple_ir({kStr}, {L(S("a\"b\n"))}, {e}, V(0));
     },
     "ir (\"a\\\"b\\n\") {\n"
     "  %0:str = irtest.const@2()\n"
     "  return %0\n"
     "}\n"},
};

class IrTextCases : public ::testing::TestWithParam<TextCase> {};

TEST_P(IrTextCases, PrintsExactly) {
  IR ir = GetParam().build();
  EXPECT_EQ(to_text(ir), GetParam().expected);
}

INSTANTIATE_TEST_SUITE_P(IrText, IrTextCases, ::testing::ValuesIn(kTextCases),
                         [](const ::testing::TestParamInfo<TextCase>& info) { return std::string(info.param.name); });

TEST(IrText, EmptyTagsPrintNothing) {
  IR ir = hello_ir();
  ir.eqns[1].set_tags(tags({}));
  EXPECT_EQ(to_text(ir).find('#'), std::string::npos);
}

TEST(IrText, LeafCountMismatchIsAnError) {
  IR ir = hello_ir();
  ir.eqns[1].in.pop_back();
  try {
    to_text(ir);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("equation 1 input"), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------- DOT

TEST(IrText, DotHasOneNodePerInputEqnAndOutput) {
  IR ir = hello_ir();
  ir.out = {V(3), V(0), L(S("lit"))};
  ir.out_tree = TreeDef::flat_list(3);
  std::string dot = to_dot(ir);
  EXPECT_EQ(dot.rfind("digraph ir {\n  rankdir=TB;\n", 0), 0u) << dot;
  EXPECT_EQ(dot.substr(dot.size() - 2), "}\n");
  EXPECT_EQ(count(dot, "shape=box"), 2u) << dot;  // %0 and %1; the static literal is not drawn
  EXPECT_EQ(count(dot, "shape=ellipse"), 2u) << dot;
  EXPECT_EQ(count(dot, "shape=doubleoctagon"), 3u) << dot;
  // v0->e0, e0->e1 (the literal "?" has no edge), e1->o0, v0->o1.
  EXPECT_EQ(count(dot, "->"), 4u) << dot;
  EXPECT_NE(dot.find("v0 -> e0;"), std::string::npos) << dot;
  EXPECT_NE(dot.find("e0 -> e1;"), std::string::npos) << dot;
  EXPECT_NE(dot.find("e1 -> o0;"), std::string::npos) << dot;
  EXPECT_NE(dot.find("v0 -> o1;"), std::string::npos) << dot;
  EXPECT_NE(dot.find("label=\"%1:int\""), std::string::npos) << dot;
  EXPECT_NE(dot.find("label=\"irtest.concat\\n#tag1,tag2\""), std::string::npos) << dot;
  EXPECT_NE(dot.find("label=\"out[2]:str\""), std::string::npos) << dot;
}

TEST(IrText, DotCountsEachUseOfAVar) {
  IR ir = simple_ir({kStr, kStr, kStr}, {V(0)},
                    {eqn("irtest.a", {V(0)}, {1}), eqn("irtest.concat", {V(1), V(1), V(0)}, {2})}, V(2));
  EXPECT_EQ(count(to_dot(ir), "->"), 5u);  // v0->e0, e0->e1 twice, v0->e1, e1->o0
}

TEST(IrText, DotEscapesLabels) {
  IR ir = simple_ir({kStr, kStr}, {V(0)}, {eqn("irtest.q\"uo\\te", {V(0)}, {1}, {}, tags({"a\"b", "c\nd"}))},
                    V(1));
  std::string dot = to_dot(ir);
  EXPECT_NE(dot.find("label=\"irtest.q\\\"uo\\\\te\\n#a\\\"b,c\\nd\""), std::string::npos) << dot;
  EXPECT_EQ(count(dot, "\n"), 8u) << dot;  // no raw newline leaked into a label
}

// ---------------------------------------------------------------- equality and hash

enum class Change {
  None, Literal, Param, ParamType, Tag, Aval, Edge, Prim, PrimVersion, Output, SubIr, InputTree, NamePath, Sched,
  OutVar
};

IR variant(Change c) {
  IR ir = hello_ir();
  Params p = params({{"template", S("Hello, {}!")}, {"body", upper_ir()}});
  switch (c) {
    case Change::None: break;
    case Change::Literal: ir.eqns[1].in[1] = L(S("!")); break;
    case Change::Param: p.set("template", S("Bye, {}!")); break;
    case Change::ParamType: p.set("template", IRPtr(upper_ir())); break;
    case Change::Tag: ir.eqns[1].set_tags(tags({"tag1"})); break;
    case Change::Aval: ir.vars[3] = Aval{Kind::Str, 1}; break;
    case Change::Edge: ir.eqns[1].in[0] = V(0); break;
    case Change::Prim: ir.eqns[1].prim = test_prim("irtest.concat_other"); break;
    case Change::PrimVersion: ir.eqns[1].prim = test_prim("irtest.concat", 2); break;
    case Change::Output: ir.out = {V(2)}; break;
    case Change::SubIr: p.set("body", identity_ir()); break;
    case Change::NamePath:
      ir.eqns[1].notes = EqnNotes::of(ir.eqns[1].tags(), std::make_shared<std::vector<std::string>>(
                                                             std::vector<std::string>{"greet"}));
      break;
    case Change::Sched: ir.eqns[1].set_sched(EqnSched{1, 2.0}); break;
    case Change::OutVar:
      ir.vars.push_back(ir.vars[3]);
      ir.eqns[1].out[0] = VarId(ir.vars.size() - 1);
      ir.out = {V(VarId(ir.vars.size() - 1))};
      break;
    case Change::InputTree:
      ir.in_tree = TreeDef::list_of(std::vector<TreeDef>{
          TreeDef::leaf(), TreeDef::leaf(), TreeDef::of(Value::dict({{"j", Value::integer(0)}}))});
      break;
  }
  ir.eqns[0].params = p;
  return ir;
}

// The hash is a defined function of the IR (value/hash.h), so it may key
// caches kept on disk: this number must only change on purpose, with a new
// major version.
TEST(IrHash, IsTheSameInEveryBuild) {
  EXPECT_EQ(ir_hash(variant(Change::None)), 13820705950093320289ULL);
}

TEST(IrHash, EqualIrsBuiltTwiceHashEqual) {
  IR a = variant(Change::None), b = variant(Change::None);
  EXPECT_TRUE(ir_equal(a, b));
  EXPECT_EQ(ir_hash(a), ir_hash(b));
  EXPECT_EQ(plan_key(a), plan_key(b));
  EXPECT_TRUE(ir_equal(a, a));
}

// plan_key's identities are the equations' eqn_hash (compile's CSE takes
// them for equations whose inputs no merge aliased, and hashes the others).
TEST(IrHash, PlanKeyYieldsEachEquationsIdentity) {
  IR ir = variant(Change::None);
  std::vector<uint64_t> ids;
  EXPECT_EQ(plan_key(ir, &ids), plan_key(ir));
  ASSERT_EQ(ids.size(), ir.eqns.size());
  for (size_t i = 0; i < ir.eqns.size(); ++i) EXPECT_EQ(ids[i], eqn_hash(ir.eqns[i])) << "equation " << i;
  EXPECT_NE(ids[0], ids[1]);
}

class IrHashChanges : public ::testing::TestWithParam<Change> {};

TEST_P(IrHashChanges, ChangeMakesUnequal) {
  IR base = variant(Change::None), changed = variant(GetParam());
  EXPECT_FALSE(ir_equal(base, changed));
  EXPECT_FALSE(ir_equal(changed, base));
  EXPECT_NE(ir_hash(base), ir_hash(changed));
  EXPECT_NE(plan_key(base), plan_key(changed));
  EXPECT_TRUE(ir_equal(changed, variant(GetParam())));
  EXPECT_EQ(ir_hash(changed), ir_hash(variant(GetParam())));
  EXPECT_EQ(plan_key(changed), plan_key(variant(GetParam())));
}

INSTANTIATE_TEST_SUITE_P(IrHash, IrHashChanges,
                         ::testing::Values(Change::Literal, Change::Param, Change::ParamType, Change::Tag,
                                           Change::Aval, Change::Edge, Change::Prim, Change::PrimVersion,
                                           Change::Output, Change::SubIr, Change::InputTree,
                                           Change::NamePath, Change::Sched, Change::OutVar));

TEST(IrHash, NullTagsEqualEmptyTags) {
  IR a = hello_ir(), b = hello_ir();
  a.eqns[0].set_tags(nullptr);
  b.eqns[0].set_tags(tags({}));
  EXPECT_TRUE(ir_equal(a, b));
  EXPECT_EQ(ir_hash(a), ir_hash(b));
  EXPECT_EQ(plan_key(a), plan_key(b));
  EXPECT_EQ(eqn_hash(a.eqns[0]), eqn_hash(b.eqns[0]));
}

TEST(IrHash, PrimsCompareByNameAndVersionNotAddress) {
  IR a = hello_ir(), b = hello_ir();
  Prim copy = *b.eqns[0].prim;  // same identity, another address (as after a reload)
  b.eqns[0].prim = &copy;
  EXPECT_TRUE(ir_equal(a, b));
  EXPECT_EQ(ir_hash(a), ir_hash(b));
  EXPECT_EQ(plan_key(a), plan_key(b));
}

TEST(IrHash, ParamsEqualityAndHash) {
  Params a = params({{"x", Value::integer(1)}, {"ir", upper_ir()}});
  Params b = params({{"ir", upper_ir()}, {"x", Value::integer(1)}});  // set() sorts
  EXPECT_TRUE(a == b);
  EXPECT_EQ(a.hash(), b.hash());
  Params c = b;
  c.set("x", Value::floating(1.0));  // int 1 and float 1.0 differ
  EXPECT_FALSE(a == c);
  EXPECT_NE(a.hash(), c.hash());
  Params d = b;
  d.set("y", Value());
  EXPECT_FALSE(a == d);
  EXPECT_TRUE(Params() == Params());
  EXPECT_EQ(Params().hash(), Params().hash());
}

// A dict prints in the order its keys were written: two orders are two
// programs (docs/SEMANTICS.md, identity).
TEST(IrHash, DictParamKeyOrderMatters) {
  Params a = params({{"m", Value::dict({{"a", Value::integer(1)}, {"b", Value::integer(2)}})}});
  Params b = params({{"m", Value::dict({{"b", Value::integer(2)}, {"a", Value::integer(1)}})}});
  EXPECT_FALSE(a == b);
  EXPECT_NE(a.hash(), b.hash());
}

// ---------------------------------------------------------------- graph queries

// %0 -> e0:%1 -> {e1:%2, e2:%3} -> e3:%4; e4:%5 uses only %0.
IR diamond() {
  return simple_ir({kStr, kStr, kStr, kStr, kStr, kStr}, {V(0)},
                   {eqn("irtest.a", {V(0)}, {1}), eqn("irtest.b", {V(1)}, {2}), eqn("irtest.c", {V(1)}, {3}),
                    eqn("irtest.d", {V(2), V(3)}, {4}), eqn("irtest.e", {V(0)}, {5})},
                   V(4));
}

using Indices = std::vector<size_t>;

TEST(IrGraph, DefiningEqn) {
  EXPECT_EQ(defining_eqn(diamond()), (Indices{SIZE_MAX, 0, 1, 2, 3, 4}));
}

TEST(IrGraph, AncestorsAndDescendantsOfADiamond) {
  IR ir = diamond();
  struct Case {
    size_t eqn;
    Indices anc, desc;
  };
  const Case cases[] = {{0, {}, {1, 2, 3}}, {1, {0}, {3}}, {2, {0}, {3}}, {3, {0, 1, 2}, {}}, {4, {}, {}}};
  for (const Case& c : cases) {
    EXPECT_EQ(ancestors(ir, c.eqn), c.anc) << "eqn " << c.eqn;
    EXPECT_EQ(descendants(ir, c.eqn), c.desc) << "eqn " << c.eqn;
  }
}

TEST(IrGraph, OutOfRangeIndexIsAnError) {
  IR ir = diamond();
  EXPECT_THROW(ancestors(ir, 5), Error);
  EXPECT_THROW(descendants(ir, 99), Error);
}

TEST(IrGraph, TopologicalOrderKeepsAValidOrder) {
  EXPECT_EQ(topological_order(diamond()), (Indices{0, 1, 2, 3, 4}));
}

TEST(IrGraph, TopologicalOrderOfAShuffledIr) {
  IR ir = diamond();
  const Indices shuffle = {3, 2, 4, 0, 1};  // new position k holds old equation shuffle[k]
  std::vector<Eqn> eqns;
  for (size_t old : shuffle) eqns.push_back(ir.eqns[old]);
  ir.eqns = eqns;
  // Ready first: e(2) and a(3), lowest index first; then c(1) and b(4); then d(0).
  Indices order = topological_order(ir);
  EXPECT_EQ(order, (Indices{2, 3, 1, 4, 0}));
  // Every equation comes after the producers of its inputs.
  std::vector<size_t> def = defining_eqn(ir);
  std::vector<size_t> position(order.size());
  for (size_t k = 0; k < order.size(); ++k) position[order[k]] = k;
  for (size_t j = 0; j < ir.eqns.size(); ++j)
    for (const Atom& a : ir.eqns[j].in)
      if (def[a.var] != SIZE_MAX) {
        EXPECT_LT(position[def[a.var]], position[j]);
      }
  // Descendants/ancestors do not depend on the stored order.
  EXPECT_EQ(ancestors(ir, 0), (Indices{1, 3, 4}));
  EXPECT_EQ(descendants(ir, 3), (Indices{0, 1, 4}));
}

struct BadCase {
  const char* name;
  std::function<IR()> build;
  std::vector<const char*> fragments;
};

const BadCase kBadCases[] = {
    {"undefined_var",
     [] { return simple_ir({kStr, kStr}, {V(0)}, {eqn("irtest.a", {V(0), V(9)}, {1})}, V(1)); },
     {"equation 0 (irtest.a)", "%9", "neither an IR input"}},
    {"var_never_defined",
     [] { return simple_ir({kStr, kStr, kStr}, {V(0)}, {eqn("irtest.a", {V(2)}, {1})}, V(1)); },
     {"%2"}},
    {"undefined_output", [] { return simple_ir({kStr, kStr}, {V(0)}, {}, V(1)); }, {"output 0", "%1"}},
    {"cycle",
     [] {
       return simple_ir({kStr, kStr, kStr, kStr}, {V(0)},
                        {eqn("irtest.d", {V(2)}, {3}), eqn("irtest.a", {V(0), V(2)}, {1}),
                         eqn("irtest.b", {V(1)}, {2})},
                        V(3));
     },
     {"cycle", "equation 2 (irtest.b) uses %1 from equation 1 (irtest.a) uses %2 from equation 2"}},
    {"self_loop", [] { return simple_ir({kStr, kStr}, {V(0)}, {eqn("irtest.a", {V(1)}, {1})}, V(1)); },
     {"cycle", "equation 0 (irtest.a) uses %1 from equation 0"}},
};

class IrGraphErrors : public ::testing::TestWithParam<BadCase> {};

TEST_P(IrGraphErrors, TopologicalOrderRejects) {
  try {
    topological_order(GetParam().build());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::InvalidArgument);
    for (const char* f : GetParam().fragments)
      EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what() << "\nmissing: " << f;
  }
}

INSTANTIATE_TEST_SUITE_P(IrGraph, IrGraphErrors, ::testing::ValuesIn(kBadCases),
                         [](const ::testing::TestParamInfo<BadCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace af
