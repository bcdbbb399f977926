// TreeDef: structure of Value trees, flatten/unflatten, structural equality,
// check_structure and broadcast_prefix. Trees are written as JSON for reading.
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "expect_error.h"
#include "value/error.h"
#include "value/tree.h"
#include "value/value.h"

namespace af {
namespace {

Value J(const char* json) { return from_json(json); }

std::string leaves_json(const std::vector<Value>& leaves) { return to_json(Value::list(leaves)); }

// ---- of / flatten / unflatten

struct FlattenCase {
  const char* tree;         // JSON
  const char* leaves;       // JSON list of the leaves in flattening order
  const char* structure;    // TreeDef::to_string
  size_t num_nodes;
};
void PrintTo(const FlattenCase& c, std::ostream* os) { *os << c.tree; }

class TreeFlatten : public ::testing::TestWithParam<FlattenCase> {};

TEST_P(TreeFlatten, FlattenOrderStructureAndRoundTrip) {
  const FlattenCase& c = GetParam();
  Value v = J(c.tree);
  auto [leaves, def] = flatten(v);
  EXPECT_EQ(leaves_json(leaves), c.leaves);
  EXPECT_EQ(def.to_string(), c.structure);
  EXPECT_EQ(def.num_leaves(), leaves.size());
  EXPECT_EQ(def.nodes().size(), c.num_nodes);
  EXPECT_EQ(def.root().n_nodes, c.num_nodes);
  EXPECT_TRUE(def == TreeDef::of(v));

  std::vector<Value> into;
  flatten_into(v, into);
  EXPECT_EQ(leaves_json(into), c.leaves);

  // unflatten restores the value exactly, including dict insertion order.
  Value back = def.unflatten(leaves);
  EXPECT_EQ(back, v);
  EXPECT_EQ(to_json(back), to_json(v));
}

INSTANTIATE_TEST_SUITE_P(
    All, TreeFlatten,
    ::testing::Values(
        FlattenCase{R"("x")", R"(["x"])", "*", 1},
        FlattenCase{"3", "[3]", "*", 1},
        FlattenCase{"null", "[]", "null", 1},
        FlattenCase{"[]", "[]", "[]", 1},
        FlattenCase{"{}", "[]", "{}", 1},
        FlattenCase{R"([1, "a", 2.5, true])", R"([1,"a",2.5,true])", "[*, *, *, *]", 5},
        FlattenCase{R"([null, [null], 1])", "[1]", "[null, [null], *]", 5},
        FlattenCase{R"({"b": 1, "a": 2})", "[2,1]", R"({"a": *, "b": *})", 3},
        FlattenCase{R"({"z": [1, {"y": 2, "x": 3}], "a": null, "m": "s"})", R"(["s",1,3,2])",
                    R"({"a": null, "m": *, "z": [*, {"x": *, "y": *}]})", 8},
        FlattenCase{R"([[["deep"]], {"k": [[], {}]}])", R"(["deep"])",
                    R"([[[*]], {"k": [[], {}]}])", 8},
        FlattenCase{R"({"a\"b": 1})", "[1]", R"({"a\"b": *})", 2}),
    [](const auto& info) { return "case" + std::to_string(info.index); });

TEST(TreeDef, UnflattenRestoresDictInsertionOrderWithNewLeaves) {
  TreeDef def = TreeDef::of(J(R"({"c": 0, "a": 0, "b": {"y": 0, "x": 0}})"));
  // Leaves go in sorted-key order: a, b.x, b.y, c.
  std::vector<Value> leaves = {Value::str("A"), Value::str("BX"), Value::str("BY"),
                               Value::str("C")};
  EXPECT_EQ(to_json(def.unflatten(leaves)), R"({"c":"C","a":"A","b":{"y":"BY","x":"BX"}})");
}

TEST(TreeDef, UnflattenWithTheWrongLeafCountIsAnError) {
  TreeDef def = TreeDef::of(J("[1, 2]"));
  std::vector<Value> one = {Value::integer(1)};
  EXPECT_THROW(def.unflatten(one), Error);
}

TEST(TreeDef, LeafDefaults) {
  EXPECT_TRUE(TreeDef().is_leaf());
  EXPECT_TRUE(TreeDef::leaf().is_leaf());
  EXPECT_EQ(TreeDef::leaf().num_leaves(), 1u);
  EXPECT_TRUE(TreeDef::of(Value::placeholder({1, 2, Kind::Int})).is_leaf());
  EXPECT_FALSE(TreeDef::of(Value()).is_leaf());
  EXPECT_EQ(TreeDef::of(Value()).num_leaves(), 0u);
  std::vector<Value> one = {Value::str("v")};
  EXPECT_EQ(TreeDef::leaf().unflatten(one), Value::str("v"));
}

TEST(TreeDef, NodeCounts) {
  TreeDef def = TreeDef::of(J(R"([1, {"b": [2, 3], "a": null}])"));
  const auto& n = def.nodes();
  ASSERT_EQ(n.size(), 7u);  // [ , 1, { , a:null, b:[ , 2, 3
  EXPECT_EQ(n[0].type, TreeDef::NodeType::List);
  EXPECT_EQ(n[0].n_children, 2u);
  EXPECT_EQ(n[0].n_leaves, 3u);
  EXPECT_EQ(n[2].type, TreeDef::NodeType::Dict);
  EXPECT_EQ(n[2].keys, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(n[2].n_leaves, 2u);
  EXPECT_EQ(n[2].n_nodes, 5u);
  EXPECT_EQ(n[3].type, TreeDef::NodeType::Null);
  EXPECT_EQ(n[4].type, TreeDef::NodeType::List);
}

// ---- flat_list / list_of / child / children

TEST(TreeDef, FlatListIsAListOfLeaves) {
  for (size_t n : {size_t(0), size_t(1), size_t(3), size_t(63), size_t(64), size_t(200)}) {
    SCOPED_TRACE(n);
    TreeDef def = TreeDef::flat_list(n);
    EXPECT_EQ(def.num_leaves(), n);
    EXPECT_EQ(def.root().n_children, n);
    EXPECT_EQ(def.nodes().size(), n + 1);
    std::vector<Value> items(n, Value::integer(0));
    EXPECT_TRUE(def == TreeDef::of(Value::list(items)));
    EXPECT_EQ(def.hash(), TreeDef::of(Value::list(items)).hash());
  }
  EXPECT_EQ(TreeDef::flat_list(2).to_string(), "[*, *]");
}

TEST(TreeDef, ListOfNestsTheGivenTrees) {
  std::vector<TreeDef> kids = {TreeDef::leaf(), TreeDef::of(J(R"({"b": [1, 2], "a": 0})")),
                               TreeDef::of(Value()), TreeDef::flat_list(0)};
  TreeDef def = TreeDef::list_of(kids);
  EXPECT_EQ(def.to_string(), R"([*, {"a": *, "b": [*, *]}, null, []])");
  EXPECT_EQ(def.num_leaves(), 4u);
  EXPECT_EQ(def.root().n_nodes, def.nodes().size());
  EXPECT_TRUE(def == TreeDef::of(J(R"([0, {"a": 0, "b": [0, 0]}, null, []])")));
  // Dict insertion order of a child survives list_of.
  std::vector<Value> leaves = {Value::integer(1), Value::integer(2), Value::integer(3),
                               Value::integer(4)};
  EXPECT_EQ(to_json(def.unflatten(leaves)), R"([1,{"b":[3,4],"a":2},null,[]])");
  EXPECT_EQ(TreeDef::list_of({}).to_string(), "[]");
}

TEST(TreeDef, ChildAndChildren) {
  TreeDef def = TreeDef::of(J(R"([1, {"b": [2, 3], "a": null}, [[]]])"));
  auto kids = def.children();
  ASSERT_EQ(kids.size(), 3u);
  EXPECT_EQ(kids[0].to_string(), "*");
  EXPECT_TRUE(kids[0].is_leaf());
  EXPECT_EQ(kids[1].to_string(), R"({"a": null, "b": [*, *]})");
  EXPECT_EQ(kids[2].to_string(), "[[]]");
  EXPECT_TRUE(def.child(1) == kids[1]);
  // Dict children are in sorted key order.
  EXPECT_EQ(kids[1].child(0).to_string(), "null");
  EXPECT_EQ(kids[1].child(1).to_string(), "[*, *]");
  EXPECT_EQ(kids[1].child(1).num_leaves(), 2u);
  EXPECT_TRUE(TreeDef::leaf().children().empty());
  EXPECT_AF_ERROR(def.child(3), Code::Internal, "out of range");
}

TEST(TreeDef, ChildKeepsDictInsertionOrder) {
  TreeDef def = TreeDef::of(J(R"([{"z": 1, "a": 2}])"));
  std::vector<Value> leaves = {Value::str("A"), Value::str("Z")};
  EXPECT_EQ(to_json(def.child(0).unflatten(leaves)), R"({"z":"Z","a":"A"})");
}

// ---- equality and hash

struct TreeEqCase {
  const char* a;
  const char* b;
  bool equal;
};
void PrintTo(const TreeEqCase& c, std::ostream* os) { *os << c.a << " vs " << c.b; }

class TreeEquality : public ::testing::TestWithParam<TreeEqCase> {};

TEST_P(TreeEquality, StructuralEqualityAndHash) {
  const TreeEqCase& c = GetParam();
  TreeDef a = TreeDef::of(J(c.a)), b = TreeDef::of(J(c.b));
  EXPECT_EQ(a == b, c.equal) << a.to_string() << " vs " << b.to_string();
  EXPECT_EQ(b == a, c.equal);
  if (c.equal) {
    EXPECT_EQ(a.hash(), b.hash());
  } else {
    EXPECT_NE(a.hash(), b.hash());
  }
}

INSTANTIATE_TEST_SUITE_P(
    All, TreeEquality,
    ::testing::Values(
        TreeEqCase{R"("a")", "1", true},  // leaf kinds are not structure
        TreeEqCase{"[1, 2]", R"(["x", true])", true},
        TreeEqCase{R"({"a": 1, "b": 2})", R"({"b": "x", "a": "y"})", true},
        TreeEqCase{R"([{"q": [1], "p": null}])", R"([{"p": null, "q": ["z"]}])", true},
        TreeEqCase{"null", "1", false},
        TreeEqCase{"[]", "{}", false},
        TreeEqCase{"[]", "null", false},
        TreeEqCase{"[1]", "[[1]]", false},
        TreeEqCase{"[1, 2]", "[1]", false},
        TreeEqCase{"[1, null]", "[null, 1]", false},
        TreeEqCase{R"({"a": 1})", R"({"b": 1})", false},
        TreeEqCase{R"({"a": 1})", R"({"a": [1]})", false},
        TreeEqCase{R"({"a": 1})", R"({"a": 1, "b": 1})", false},
        TreeEqCase{"[1]", "1", false}),
    [](const auto& info) { return "case" + std::to_string(info.index); });

// ---- check_structure

struct CheckCase {
  const char* value;
  const char* fragment;  // nullptr = no error
};
void PrintTo(const CheckCase& c, std::ostream* os) { *os << c.value; }

class TreeCheckStructure : public ::testing::TestWithParam<CheckCase> {};

TEST_P(TreeCheckStructure, ErrorsNameThePath) {
  const CheckCase& c = GetParam();
  TreeDef def = TreeDef::of(J(R"([{"k": [1, 2, 3], "n": null}, "s"])"));
  Value v = J(c.value);
  if (!c.fragment) {
    EXPECT_NO_THROW(check_structure(v, def, "input"));
  } else {
    EXPECT_AF_ERROR(check_structure(v, def, "input"), Code::InvalidArgument, c.fragment);
  }
}

INSTANTIATE_TEST_SUITE_P(
    All, TreeCheckStructure,
    ::testing::Values(
        CheckCase{R"([{"k": [1, 2, 3], "n": null}, "s"])", nullptr},
        CheckCase{R"([{"n": null, "k": ["a", 2.5, true]}, 0])", nullptr},
        CheckCase{R"([{"k": [1, 2, [3]], "n": null}, "s"])",
                  R"(input[0]["k"][2]: expected a leaf, found a list of 1)"},
        CheckCase{R"([{"k": [1, 2, null], "n": null}, "s"])",
                  R"(input[0]["k"][2]: expected a leaf, found null)"},
        CheckCase{R"([{"k": [1, 2], "n": null}, "s"])",
                  R"(input[0]["k"]: expected a list of 3, found a list of 2)"},
        CheckCase{R"([{"k": [1, 2, 3], "n": 0}, "s"])",
                  R"(input[0]["n"]: expected null, found a leaf (int))"},
        CheckCase{R"([{"k": [1, 2, 3]}, "s"])",
                  R"(input[0]: expected a dict with keys {"k", "n"}, found a dict with keys {"k"})"},
        CheckCase{R"([{"k": [1, 2, 3], "m": null}, "s"])",
                  R"(input[0]: expected a dict with keys {"k", "n"}, found a dict with keys {"k", "m"})"},
        CheckCase{R"([[1, 2, 3], "s"])", R"(input[0]: expected a dict with keys {"k", "n"}, found a list of 3)"},
        CheckCase{R"([{"k": [1, 2, 3], "n": null}, {"s": 1}])",
                  "input[1]: expected a leaf, found a dict"},
        CheckCase{R"("s")", "input: expected a list of 2, found a leaf (str)"},
        CheckCase{"null", "input: expected a list of 2, found null"}),
    [](const auto& info) { return "case" + std::to_string(info.index); });

TEST(TreeCheckStructure, LeafCheckSeesEachLeafWithItsIndexAndPath) {
  TreeDef def = TreeDef::of(J(R"([{"b": 1, "a": [2, 3]}, 4])"));
  std::vector<std::string> seen;
  check_structure(J(R"([{"a": ["x", "y"], "b": "z"}, "w"])"), def, "in",
                  [&](size_t i, const Value& v, const std::string& path) {
                    seen.push_back(std::to_string(i) + " " + path + "=" + v.as_str());
                  });
  EXPECT_EQ(seen, (std::vector<std::string>{R"(0 in[0]["a"][0]=x)", R"(1 in[0]["a"][1]=y)",
                                            R"(2 in[0]["b"]=z)", "3 in[1]=w"}));
}

TEST(TreeCheckStructure, LeafCheckErrorsPropagate) {
  TreeDef def = TreeDef::of(J("[1]"));
  EXPECT_AF_ERROR(check_structure(J("[1]"), def, "x",
                                  [](size_t, const Value&, const std::string& path) {
                                    invalid(path + ": rejected by the leaf check");
                                  }),
                  Code::InvalidArgument, "x[0]: rejected by the leaf check");
}

TEST(TreeCheckStructure, KeysWithQuotesAreEscapedInPaths) {
  TreeDef def = TreeDef::of(J(R"({"a\"b": [1]})"));
  EXPECT_AF_ERROR(check_structure(J(R"({"a\"b": 1})"), def, "v"), Code::InvalidArgument,
                  R"(v["a\"b"]: expected a list of 1)");
}

// ---- broadcast_prefix

struct PrefixCase {
  const char* prefix;
  const char* tree;
  const char* expected;  // JSON list of the covering values, or nullptr
  const char* fragment;  // error fragment when expected is nullptr
};
void PrintTo(const PrefixCase& c, std::ostream* os) { *os << c.prefix << " over " << c.tree; }

class TreeBroadcastPrefix : public ::testing::TestWithParam<PrefixCase> {};

TEST_P(TreeBroadcastPrefix, CoversEveryLeaf) {
  const PrefixCase& c = GetParam();
  TreeDef def = TreeDef::of(J(c.tree));
  if (c.expected) {
    std::vector<Value> got = broadcast_prefix(J(c.prefix), def, "the mask");
    EXPECT_EQ(leaves_json(got), c.expected);
  } else {
    EXPECT_AF_ERROR(broadcast_prefix(J(c.prefix), def, "the mask"), Code::InvalidArgument,
                    c.fragment);
  }
}

INSTANTIATE_TEST_SUITE_P(
    All, TreeBroadcastPrefix,
    ::testing::Values(
        // A leaf covers the whole subtree.
        PrefixCase{"true", R"([1, [2, 3], {"a": 4}])", "[true,true,true,true]", nullptr},
        PrefixCase{"[true, false, true]", R"([1, [2, 3], {"a": 4}])", "[true,false,false,true]",
                   nullptr},
        PrefixCase{"[false, [true, false], {\"a\": true}]", R"([1, [2, 3], {"a": 4}])",
                   "[false,true,false,true]", nullptr},
        // The tree itself is a prefix of itself.
        PrefixCase{R"([1, [2, 3], {"a": 4}])", R"([0, [0, 0], {"a": 0}])", "[1,2,3,4]", nullptr},
        // Dict prefixes match by key; leaves come in sorted key order.
        PrefixCase{R"({"b": "B", "a": "A"})", R"({"a": [0, 0], "b": 0})", R"(["A","A","B"])",
                   nullptr},
        // Null subtrees have no leaves to cover.
        PrefixCase{"[true, false]", "[null, 1]", "[false]", nullptr},
        PrefixCase{"false", "[]", "[]", nullptr},
        PrefixCase{"7", "5", "[7]", nullptr},
        // Not prefixes.
        PrefixCase{"[true]", "[1, 2]", nullptr,
                   "the mask is not a prefix of the inputs' structure at the root: it has a list "
                   "of 1 where the inputs have a list of 2"},
        PrefixCase{"[[true], false]", "[1, 2]", nullptr,
                   "the mask is not a prefix of the inputs' structure at [0]: it has a list of 1 "
                   "where the inputs have a leaf"},
        PrefixCase{R"({"x": true})", R"({"a": 1})", nullptr,
                   "the mask is not a prefix of the inputs' structure at the root"},
        PrefixCase{R"({"a": true})", "[1]", nullptr, "is not a prefix"},
        PrefixCase{"[true]", R"({"a": 1})", nullptr, "is not a prefix"},
        PrefixCase{R"([{"a": [true]}])", R"([{"a": [1, 2]}])", nullptr,
                   R"(at [0]["a"]: it has a list of 1 where the inputs have a list of 2)"},
        PrefixCase{"[[]]", "[null]", nullptr, "where the inputs have null"}),
    [](const auto& info) { return "case" + std::to_string(info.index); });

TEST(TreeBroadcastPrefix, KeysWithQuotesAreEscapedInPaths) {
  // Same path syntax as check_structure: keys are JSON strings.
  TreeDef def = TreeDef::of(J(R"({"a\"b": [1, 2]})"));
  EXPECT_AF_ERROR(broadcast_prefix(J(R"({"a\"b": [true]})"), def, "m"), Code::InvalidArgument,
                  R"(m is not a prefix of the inputs' structure at ["a\"b"]: it has a list of 1)");
}

}  // namespace
}  // namespace af
