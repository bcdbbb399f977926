// Built-in primitives (format, concat, match, stop_gradient, depends,
// checkpoint): impl through the operations (evaluated at once outside a
// trace), abstract rules, what tracing records, and the registry.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "exec/sequential.h"
#include "ir/effects.h"
#include "ir/ir.h"
#include "ir/prim.h"
#include "prims/ops.h"
#include "ir/effects.h"
#include "ir/registry.h"
#include "trace/trace.h"
#include "transforms/builder.h"
#include "transforms/transforms.h"
#include "value/error.h"
#include "value/value.h"

namespace af {
namespace {

#define EXPECT_AF_ERROR(stmt, code_, fragment)                                            \
  do {                                                                                    \
    try {                                                                                 \
      stmt;                                                                               \
      ADD_FAILURE() << "expected af::Error containing \"" << (fragment) << "\"";          \
    } catch (const ::af::Error& e_) {                                                     \
      EXPECT_EQ(e_.code(), (code_)) << e_.what();                                         \
      EXPECT_NE(std::string(e_.what()).find(fragment), std::string::npos)                 \
          << "message: " << e_.what() << "\nexpected fragment: " << (fragment);           \
    }                                                                                     \
  } while (0)

using Args = std::span<const Value>;

Value S(const char* s) { return Value::str(s); }
Value J(const char* json) { return from_json(json); }
std::string label_of(size_t index) { return "case" + std::to_string(index); }

// ---- format

struct FormatCase {
  const char* tmpl;
  const char* args;   // JSON list of positional arguments
  const char* named;  // JSON dict or "null"
  const char* expected;
};
void PrintTo(const FormatCase& c, std::ostream* os) { *os << c.tmpl << " " << c.args << " " << c.named; }

class PrimsFormat : public ::testing::TestWithParam<FormatCase> {};

TEST_P(PrimsFormat, Evaluates) {
  const FormatCase& c = GetParam();
  RunEnv env;
  Value args = J(c.args);
  Value out = op_format(c.tmpl, args.items(), J(c.named), env);
  ASSERT_EQ(out.kind(), Kind::Str);
  EXPECT_EQ(out.as_str(), c.expected);
}

TEST_P(PrimsFormat, TracedGivesTheSameResult) {
  const FormatCase& c = GetParam();
  RunEnv env;
  // Every argument becomes a traced input (positional args, then named).
  Value named = J(c.named);
  std::vector<Value> examples = J(c.args).items();
  examples.push_back(named);
  size_t n_positional = examples.size() - 1;
  IRPtr ir = trace(
      [&](Args in) {
        std::vector<Value> pos(in.begin(), in.begin() + long(n_positional));
        return op_format(c.tmpl, pos, in[n_positional], env);
      },
      examples, Value());
  ASSERT_EQ(ir->eqns.size(), 1u);
  EXPECT_EQ(call(ir, examples, env), S(c.expected));
}

INSTANTIATE_TEST_SUITE_P(
    All, PrimsFormat,
    ::testing::Values(
        FormatCase{"Hello, {}!", R"(["World"])", "null", "Hello, World!"},
        FormatCase{"", "[]", "null", ""},
        FormatCase{"no fields", R"(["unused"])", "null", "no fields"},
        FormatCase{"{1}{0}", R"(["a", "b"])", "null", "ba"},
        FormatCase{"{0}{0}", R"(["x"])", "null", "xx"},
        FormatCase{"{} {} {} {}", R"([1, 2.5, true, false])", "null", "1 2.5 true false"},
        FormatCase{"{}", "[2.0]", "null", "2.0"},
        FormatCase{"{}", "[1e30]", "null", "1e+30"},
        FormatCase{"{}", "[-0.0]", "null", "-0.0"},
        FormatCase{"{}", "[null]", "null", "null"},
        FormatCase{"{}", R"([["a", 1]])", "null", R"(["a",1])"},
        FormatCase{"{}", "[[]]", "null", "[]"},
        FormatCase{"{}", R"([{"b": 1, "a": "x"}])", "null", R"({"b":1,"a":"x"})"},
        FormatCase{"{} {}", R"([null, ["a"]])", "null", R"(null ["a"])"},
        FormatCase{"{} {}", R"([["a", "b"], null])", "null", R"(["a","b"] null)"},
        FormatCase{"{} {}", R"([{"k": "v", "j": "w"}, null])", "null", R"({"k":"v","j":"w"} null)"},
        FormatCase{"{} {}", R"([["a", "b"], []])", "null", R"(["a","b"] [])"},
        FormatCase{"{}", R"(["quote \" and \\ stay raw"])", "null", "quote \" and \\ stay raw"},
        FormatCase{"{greet}, {name}!", "[]", R"({"name": "Ann", "greet": "Hi"})", "Hi, Ann!"},
        FormatCase{"{} {x} {}", R"(["a", "b"])", R"({"x": "X"})", "a X b"},
        FormatCase{"{n}", "[]", R"({"n": [1, {"k": null}]})", R"([1,{"k":null}])"},
        FormatCase{"{x}{x}", "[]", R"({"x": 3, "unused": "u"})", "33"},
        FormatCase{"{x}", "[]", R"({"x": null})", "null"},
        FormatCase{"{} {x}", "[[]]", R"({"x": {}})", "[] {}"},
        FormatCase{"{}", "[{}]", "null", "{}"},
        FormatCase{"{{}} {}", R"(["a"])", "null", "{} a"},
        FormatCase{"\xc3\xa9{}\xe2\x82\xac", "[\"\xf0\x9f\x98\x80\"]", "null",
                   "\xc3\xa9\xf0\x9f\x98\x80\xe2\x82\xac"}),
    [](const auto& info) { return label_of(info.index); });

TEST(PrimsFormat, ArgumentErrorsAtTheCall) {
  RunEnv env;
  std::vector<Value> one{S("a")};
  std::vector<Value> none;
  EXPECT_AF_ERROR(op_format("{} {}", one, Value(), env), Code::InvalidArgument,
                  "format template \"{} {}\" uses 2 positional argument(s) but 1 were given");
  EXPECT_AF_ERROR(op_format("{3}", one, Value(), env), Code::InvalidArgument,
                  "uses 4 positional argument(s) but 1 were given");
  EXPECT_AF_ERROR(op_format("{who}", none, Value(), env), Code::InvalidArgument,
                  "uses the named argument {who} but no such named argument was given");
  EXPECT_AF_ERROR(op_format("{who}", none, J(R"({"what": 1})"), env), Code::InvalidArgument,
                  "named argument {who}");
  EXPECT_AF_ERROR(op_format("{}", one, J("[1]"), env), Code::InvalidArgument,
                  "format: named arguments must be a dict, got list");
  EXPECT_AF_ERROR(op_format("\xff{}", one, Value(), env), Code::InvalidArgument,
                  "format: the template is not valid UTF-8");
  EXPECT_AF_ERROR(op_format("{", one, Value(), env), Code::InvalidArgument, "unbalanced '{'");
  std::vector<Value> nan{Value::floating(std::numeric_limits<double>::quiet_NaN())};
  EXPECT_AF_ERROR(op_format("{}", nan, Value(), env), Code::InvalidArgument, "non-finite");
}

// ---- concat

struct ConcatCase {
  const char* args;  // JSON list
  const char* expected;
};
void PrintTo(const ConcatCase& c, std::ostream* os) { *os << c.args; }

class PrimsConcat : public ::testing::TestWithParam<ConcatCase> {};

TEST_P(PrimsConcat, Evaluates) {
  RunEnv env;
  Value args = J(GetParam().args);
  EXPECT_EQ(op_concat(args.items(), env), S(GetParam().expected));
}

INSTANTIATE_TEST_SUITE_P(All, PrimsConcat,
                         ::testing::Values(ConcatCase{"[]", ""}, ConcatCase{R"(["a"])", "a"},
                                           ConcatCase{R"(["a", "b", "c"])", "abc"},
                                           ConcatCase{R"(["", "x", ""])", "x"},
                                           ConcatCase{"[\"\xc3\xa9\", \"\xf0\x9f\x98\x80\"]",
                                                      "\xc3\xa9\xf0\x9f\x98\x80"}),
                         [](const auto& info) { return label_of(info.index); });

TEST(PrimsConcat, KeepsEmbeddedNul) {
  RunEnv env;
  std::vector<Value> args{Value::str(std::string("a\0", 2)), S("b")};
  EXPECT_EQ(op_concat(args, env).as_str(), std::string("a\0b", 3));
}

struct ErrorCase {
  const char* args;  // JSON list
  const char* fragment;
};
void PrintTo(const ErrorCase& c, std::ostream* os) { *os << c.args; }

class PrimsConcatErrors : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(PrimsConcatErrors, EveryArgumentMustBeStr) {
  RunEnv env;
  Value args = J(GetParam().args);
  EXPECT_AF_ERROR(op_concat(args.items(), env), Code::InvalidArgument, GetParam().fragment);
}

INSTANTIATE_TEST_SUITE_P(
    All, PrimsConcatErrors,
    ::testing::Values(ErrorCase{"[1]", "concat: argument 0 is int; every argument must be str"},
                      ErrorCase{R"(["a", 2.5])", "concat: argument 1 is float"},
                      ErrorCase{R"(["a", true])", "concat: argument 1 is bool"},
                      ErrorCase{R"(["a", null])", "concat: argument 1 is null"},
                      ErrorCase{R"(["a", ["b"]])", "concat: argument 1 is list"},
                      ErrorCase{R"([{"k": "b"}])", "concat: argument 0 is dict"}),
    [](const auto& info) { return label_of(info.index); });

TEST(PrimsConcat, JsonNulArgument) {
  RunEnv env;
  Value args = J(R"(["a\u0000", "b"])");
  EXPECT_EQ(op_concat(args.items(), env).as_str(), std::string("a\0b", 3));
}

// ---- match

TEST(PrimsMatch, IsStringEquality) {
  struct Case {
    const char* a;
    const char* b;
    bool expected;
  };
  const Case cases[] = {{"a", "a", true},   {"a", "b", false}, {"", "", true},
                        {"a", "A", false},  {"a", "a ", false}, {"\xc3\xa9", "\xc3\xa9", true}};
  RunEnv env;
  for (const Case& c : cases)
    EXPECT_EQ(op_match(S(c.a), S(c.b), env), Value::boolean(c.expected)) << c.a << " vs " << c.b;
}

// A port expects match of a number against a string to be false, not an
// error; leaves of one kind compare by value.
TEST(PrimsMatch, AnyLeafKindsContainersAreRefused) {
  RunEnv env;
  EXPECT_EQ(op_match(S("a"), Value::integer(1), env), Value::boolean(false));
  EXPECT_EQ(op_match(S("1"), Value::integer(1), env), Value::boolean(false));
  EXPECT_EQ(op_match(Value::boolean(true), S("true"), env), Value::boolean(false));
  EXPECT_EQ(op_match(Value::integer(2), Value::integer(2), env), Value::boolean(true));
  EXPECT_EQ(op_match(Value::integer(1), Value::floating(1.0), env), Value::boolean(false));
  EXPECT_AF_ERROR(op_match(Value(), S("a"), env), Code::InvalidArgument,
                  "match: an argument is null; both must be leaves");
  EXPECT_AF_ERROR(op_match(S("a"), J("[\"a\"]"), env), Code::InvalidArgument,
                  "match: an argument is list");
}

// ---- stop_gradient, depends, checkpoint: identities on their first input

class PrimsIdentity : public ::testing::TestWithParam<const char*> {};

TEST_P(PrimsIdentity, ReturnTheValueUnchanged) {
  RunEnv env;
  Value v = J(GetParam());
  std::vector<Value> deps{S("d"), J("[1, {\"x\": null}]")};
  std::vector<Value> no_deps;
  for (const Value& out : {op_stop_gradient(v, env), op_depends(v, deps, env),
                           op_depends(v, no_deps, env), op_checkpoint(v, "k", "c", env)}) {
    EXPECT_EQ(out, v);
    EXPECT_EQ(to_json(out), to_json(v)) << "dict insertion order must survive";
  }
}

INSTANTIATE_TEST_SUITE_P(All, PrimsIdentity,
                         ::testing::Values(R"("a")", "1", "2.5", "true", "null", "[]", "{}",
                                           R"([1, {"b": 2, "a": "x"}, null])",
                                           R"({"z": {"y": [true]}, "a": 0})"),
                         [](const auto& info) { return label_of(info.index); });

TEST(PrimsIdentity, CheckpointKeyAndCollectionMustBeUtf8) {
  RunEnv env;
  EXPECT_AF_ERROR(op_checkpoint(S("v"), "\xff", "c", env), Code::InvalidArgument,
                  "checkpoint: key and collection must be valid UTF-8");
  EXPECT_AF_ERROR(op_checkpoint(S("v"), "k", "\xc3", env), Code::InvalidArgument,
                  "checkpoint: key and collection must be valid UTF-8");
}

TEST(PrimsIdentity, TracedEquations) {
  RunEnv env;
  IRPtr ir = trace(
      [&](Args in) {
        Value tree = Value::list({in[0], Value::dict({{"b", in[1]}, {"a", S("lit")}})});
        Value sg = op_stop_gradient(tree, env);
        std::vector<Value> deps{in[1], Value()};
        Value dep = op_depends(sg.items()[0], deps, env);
        return op_checkpoint(Value::list({dep, sg.items()[1]}), "key1", "coll", env);
      },
      std::vector<Value>{S("x"), Value::integer(1)}, Value());
  EXPECT_EQ(to_text(*ir),
            "ir (%0:str, %1:int) {\n"
            "  [%2:str, {\"a\": %3:str, \"b\": %4:int}] = stop_gradient([%0, {\"a\": \"lit\", "
            "\"b\": %1}])\n"
            "  %5:str = depends(%2, %1, null)\n"
            "  [%6:str, {\"a\": %7:str, \"b\": %8:int}] = checkpoint[collection=\"coll\", "
            "key=\"key1\"]([%5, {\"a\": %3, \"b\": %4}])\n"
            "  return [%6, {\"a\": %7, \"b\": %8}]\n"
            "}\n");
  EXPECT_NO_THROW(validate(*ir));
  std::vector<Value> args{S("v"), Value::integer(9)};
  EXPECT_EQ(to_json(call(ir, args, env)), R"(["v",{"b":9,"a":"lit"}])");
}

// ---- abstract rules

struct AbstractCase {
  const char* prim;
  std::vector<Aval> in;
  const char* in_tree;  // JSON whose structure is the input tree; nullptr = flat list
  std::vector<Aval> out;
  const char* out_tree;  // TreeDef::to_string of the expected output tree
  const char* fragment;  // error instead, when non-null
};
void PrintTo(const AbstractCase& c, std::ostream* os) { *os << c.prim; }

const Aval kStr{Kind::Str, 0}, kInt{Kind::Int, 0}, kFloat{Kind::Float, 0}, kBool{Kind::Bool, 0},
    kNull{Kind::Null, 0}, kListStr{Kind::Str, 1}, kList{Kind::List, 0};

class PrimsAbstract : public ::testing::TestWithParam<AbstractCase> {};

TEST_P(PrimsAbstract, Rule) {
  const AbstractCase& c = GetParam();
  const Prim& p = prim(c.prim);
  TreeDef in_tree = c.in_tree ? TreeDef::of(J(c.in_tree)) : TreeDef::flat_list(c.in.size());
  ASSERT_EQ(in_tree.num_leaves(), c.in.size()) << "bad test case";
  Params params;
  if (std::string(c.prim) == "format") {
    params.set("template", S("{}"));
    params.set("names", J("[]"));
  }
  if (c.fragment) {
    EXPECT_AF_ERROR(p.abstract_eval(params, c.in, in_tree), Code::InvalidArgument, c.fragment);
    return;
  }
  AbstractOut out = p.abstract_eval(params, c.in, in_tree);
  EXPECT_EQ(out.out, c.out);
  EXPECT_EQ(out.out_tree.to_string(), c.out_tree);
}

INSTANTIATE_TEST_SUITE_P(
    All, PrimsAbstract,
    ::testing::Values(
        AbstractCase{"concat", {}, nullptr, {kStr}, "*", nullptr},
        AbstractCase{"concat", {kStr, kStr, kStr}, nullptr, {kStr}, "*", nullptr},
        AbstractCase{"concat", {kStr, kInt}, nullptr, {}, "", "concat: argument 1 is int"},
        AbstractCase{"concat", {kListStr}, nullptr, {}, "", "concat: argument 0 is list<str>"},
        AbstractCase{"match", {kStr, kStr}, nullptr, {kBool}, "*", nullptr},
        AbstractCase{"match", {kStr}, nullptr, {}, "", "match: takes 2 arguments, got 1"},
        AbstractCase{"match", {kStr, kStr, kStr}, nullptr, {}, "", "match: takes 2 arguments, got 3"},
        AbstractCase{"match", {kStr, kBool}, nullptr, {kBool}, "*", nullptr},
        AbstractCase{"match", {kInt, kInt}, nullptr, {kBool}, "*", nullptr},
        AbstractCase{"match", {kStr, kListStr}, nullptr, {}, "", "match: argument 1 is list<str>"},
        AbstractCase{"format", {kStr, kInt, kFloat, kBool}, nullptr, {kStr}, "*", nullptr},
        AbstractCase{"format", {kListStr}, nullptr, {}, "", "format: argument 0 has kind list<str>"},
        AbstractCase{"format", {kStr, kNull}, nullptr, {}, "", "format: argument 1 has kind null"},
        AbstractCase{"format", {kList}, nullptr, {}, "", "format: argument 0 has kind list"},
        AbstractCase{"stop_gradient", {kStr, kInt}, R"([[0, {"k": 0}]])", {kStr, kInt},
                     R"([*, {"k": *}])", nullptr},
        AbstractCase{"stop_gradient", {}, "[null]", {}, "null", nullptr},
        AbstractCase{"depends", {kFloat, kStr, kBool}, "[0, 0, [0]]", {kFloat}, "*", nullptr},
        AbstractCase{"checkpoint", {kListStr}, "[0]", {kListStr}, "*", nullptr},
        AbstractCase{"checkpoint", {kStr, kBool}, R"([{"b": 0, "a": 0}])", {kStr, kBool},
                     R"({"a": *, "b": *})", nullptr}),
    [](const auto& info) { return label_of(info.index); });

// ---- registry

TEST(PrimsRegistry, BuiltinsAreRegisteredWithTheirFlags) {
  struct Case {
    const char* name;
    uint32_t flags;
    double cost;
  };
  const Case cases[] = {{"format", kPure, 1.0},        {"concat", kPure, 1.0},
                        {"match", kPure, 1.0},         {"stop_gradient", kPure, 0.0},
                        {"depends", kObservable, 0.0},
                        {"checkpoint", kEffectful | kNoMerge | kObservable, 0.0},
                        {"host_call", kEffectful | kNondeterministic | kObservable, 1.0}};
  std::vector<const Prim*> all = all_prims();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Prim* p = find_prim(c.name);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p, &prim(c.name));
    EXPECT_EQ(p, find_prim(c.name, 1));
    EXPECT_EQ(p->name, c.name);
    EXPECT_EQ(p->version, 1u);
    EXPECT_EQ(p->flags, c.flags);
    EXPECT_EQ(p->cost, c.cost);
    EXPECT_TRUE(p->impl || p->impl_async);  // a way to run
    EXPECT_NE(p->abstract_eval, nullptr);
    EXPECT_NE(std::find(all.begin(), all.end(), p), all.end());
  }
}

// A host call's flags come from its params: a function registered pure
// has none, an effectful one (no "pure" param) has the primitive's.
TEST(PrimsRegistry, HostCallFlagsFollowThePureParam) {
  const Prim& p = prim("host_call");
  Params effectful, pure, not_pure;
  pure.set("pure", Value::boolean(true));
  not_pure.set("pure", Value::boolean(false));
  EXPECT_EQ(eqn_flags(p, effectful), kEffectful | kNondeterministic | kObservable);
  EXPECT_EQ(eqn_flags(p, not_pure), kEffectful | kNondeterministic | kObservable);
  EXPECT_EQ(eqn_flags(p, pure), uint32_t(kPure));
  EXPECT_EQ(eqn_flags(prim("concat"), pure), uint32_t(kPure));  // no flags_of: the primitive's
}

// One primitive, one place: every built-in primitive of this layer names
// each of its rules in its own file (none is left to a transform's default).
TEST(PrimsRegistry, EveryPrimitiveHasEveryRule) {
  const char* names[] = {"format",    "concat",     "match",   "stop_gradient", "depends",
                         "checkpoint", "switch",    "while_loop", "while_scan", "scan",
                         "host_call", "map",        "batch_check", "broadcast",  "accumulate",
                         "accumulate_items", "zeros_like"};
  for (const char* name : names) {
    SCOPED_TRACE(name);
    const Prim* p = find_prim(name);
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(p->impl || p->impl_async);  // a way to run
    EXPECT_NE(p->abstract_eval, nullptr);
    EXPECT_NE(p->batch, nullptr);
    EXPECT_NE(p->pushforward, nullptr);
    EXPECT_NE(p->pullback_fwd, nullptr);
    EXPECT_NE(p->pullback_bwd, nullptr);
    EXPECT_NE(p->dce, nullptr);
  }
}

// No transform falls back to a default rule: one a primitive lacks is named
// when a transform needs it.
TEST(PrimsRegistry, AMissingRuleIsAnErrorAtUse) {
  static const Prim* bare = register_prim(Prim{
      .name = "prims_test.bare",
      .params = {},
      .impl = [](const Eqn&, std::span<const Value> in, std::span<Value> out, RunEnv&) { out[0] = in[0]; },
      .abstract_eval = [](const Params&, std::span<const Aval> in, const TreeDef&) {
        return AbstractOut{{in[0]}, TreeDef::leaf()};
      },
  });
  Builder b;
  Atom x = Atom::of_var(b.var(Aval{Kind::Str, 0}));
  Atom y = b.emit1(*bare, Params(), {x});
  IRPtr ir = b.finish({x}, TreeDef::flat_list(1), {y}, TreeDef::leaf());
  EXPECT_AF_ERROR(batch(ir, Value()), Code::InvalidArgument, "batch: primitive \"prims_test.bare\" has no batch rule");
  EXPECT_AF_ERROR(pushforward(*ir), Code::InvalidArgument, "pushforward: primitive \"prims_test.bare\" has no pushforward rule");
  EXPECT_AF_ERROR(pullback(*ir), Code::InvalidArgument, "pullback: primitive \"prims_test.bare\" has no pullback rule");
  EXPECT_AF_ERROR(dce(*ir, Value::boolean(true)), Code::InvalidArgument, "dce: primitive \"prims_test.bare\" has no dce rule");
}

TEST(PrimsRegistry, UnknownNamesAndVersions) {
  EXPECT_EQ(find_prim("no_such_prim"), nullptr);
  EXPECT_EQ(find_prim("format", 2), nullptr);
  EXPECT_EQ(find_prim(""), nullptr);
  EXPECT_AF_ERROR(prim("no_such_prim"), Code::Internal, "primitive \"no_such_prim\" is not registered");
}

TEST(PrimsRegistry, DuplicateRegistrationIsInvalidArgument) {
  Prim p;
  p.name = "format";
  EXPECT_AF_ERROR(register_prim(p), Code::InvalidArgument,
                  "primitive \"format\" version 1 is already registered");
}

AbstractOut one_str(const Params&, std::span<const Aval>, const TreeDef&) {
  return {{Aval{Kind::Str, 0}}, TreeDef::leaf()};
}

TEST(PrimsRegistry, VersionsOfOneName) {
  // Registered once per process (the registry lives as long as the process).
  static const std::pair<const Prim*, const Prim*> versions = [] {
    Prim v1;
    v1.name = "prims_test_versioned";
    v1.abstract_eval = one_str;
    Prim v2 = v1;
    v2.version = 2;
    const Prim* a = register_prim(v1);
    const Prim* b = register_prim(v2);
    return std::make_pair(a, b);
  }();
  EXPECT_EQ(find_prim("prims_test_versioned"), versions.second) << "version 0 = the newest";
  EXPECT_EQ(find_prim("prims_test_versioned", 1), versions.first);
  EXPECT_EQ(find_prim("prims_test_versioned", 2), versions.second);
  EXPECT_EQ(find_prim("prims_test_versioned", 3), nullptr);
  EXPECT_EQ(&prim("prims_test_versioned"), versions.second);
  Prim again;
  again.name = "prims_test_versioned";
  again.version = 2;
  EXPECT_AF_ERROR(register_prim(again), Code::InvalidArgument, "version 2 is already registered");
  // Registration keeps earlier pointers valid.
  EXPECT_EQ(versions.first->version, 1u);
  EXPECT_EQ(&prim("format"), find_prim("format"));
}

}  // namespace
}  // namespace af
