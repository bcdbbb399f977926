// Value: kinds, sharing, structural equality and hashing, dict lookup.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "expect_error.h"
#include "value/error.h"
#include "value/value.h"

namespace af {
namespace {

Value S(const char* s) { return Value::str(s); }
Value I(int64_t i) { return Value::integer(i); }
Value F(double f) { return Value::floating(f); }
Value B(bool b) { return Value::boolean(b); }
Value L(std::vector<Value> items) { return Value::list(std::move(items)); }
Value D(std::vector<Entry> entries) { return Value::dict(std::move(entries)); }
Value P(uint64_t frame, uint32_t var, Kind k = Kind::Str) {
  return Value::placeholder({frame, var, k});
}

// ---- kinds

struct KindCase {
  const char* label;
  Value v;
  Kind kind;
  const char* name;
  bool leaf, container, null;
};
void PrintTo(const KindCase& c, std::ostream* os) { *os << c.label; }

class ValueKinds : public ::testing::TestWithParam<KindCase> {};

TEST_P(ValueKinds, KindNameAndPredicates) {
  const KindCase& c = GetParam();
  EXPECT_EQ(c.v.kind(), c.kind);
  EXPECT_STREQ(kind_name(c.v.kind()), c.name);
  EXPECT_EQ(c.v.is_leaf(), c.leaf);
  EXPECT_EQ(c.v.is_container(), c.container);
  EXPECT_EQ(c.v.is_null(), c.null);
}

INSTANTIATE_TEST_SUITE_P(
    All, ValueKinds,
    ::testing::Values(KindCase{"null", Value(), Kind::Null, "null", false, false, true},
                      KindCase{"bool", B(true), Kind::Bool, "bool", true, false, false},
                      KindCase{"int", I(-3), Kind::Int, "int", true, false, false},
                      KindCase{"float", F(2.5), Kind::Float, "float", true, false, false},
                      KindCase{"str", S("x"), Kind::Str, "str", true, false, false},
                      KindCase{"empty_str", S(""), Kind::Str, "str", true, false, false},
                      KindCase{"list", L({I(1)}), Kind::List, "list", false, true, false},
                      KindCase{"empty_list", L({}), Kind::List, "list", false, true, false},
                      KindCase{"dict", D({{"a", I(1)}}), Kind::Dict, "dict", false, true, false},
                      KindCase{"placeholder", P(1, 0), Kind::Placeholder, "placeholder", true,
                               false, false}),
    [](const auto& info) { return std::string(info.param.label); });

TEST(Value, AccessorsReturnWhatWasStored) {
  EXPECT_TRUE(B(true).as_bool());
  EXPECT_FALSE(B(false).as_bool());
  EXPECT_EQ(I(std::numeric_limits<int64_t>::min()).as_int(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(I(std::numeric_limits<int64_t>::max()).as_int(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(F(-0.25).as_float(), -0.25);
  EXPECT_EQ(S("héllo").as_str(), "héllo");
  EXPECT_EQ(std::string("a\0b", 3), Value::str(std::string("a\0b", 3)).as_str());
  Value l = L({I(1), S("two")});
  ASSERT_EQ(l.items().size(), 2u);
  EXPECT_EQ(l.items()[1].as_str(), "two");
  Value p = P(7, 3, Kind::Int);
  EXPECT_EQ(p.placeholder_ref().frame, 7u);
  EXPECT_EQ(p.placeholder_ref().var, 3u);
  EXPECT_EQ(p.placeholder_ref().kind, Kind::Int);
}

TEST(Value, AccessorsOfTheWrongKindAreEmpty) {
  EXPECT_EQ(I(1).as_str(), "");
  EXPECT_TRUE(S("x").items().empty());
  EXPECT_TRUE(L({}).entries().empty());
  EXPECT_TRUE(S("x").sorted().empty());
  EXPECT_EQ(S("x").placeholder_ref().frame, 0u);
}

TEST(Value, Size) {
  EXPECT_EQ(L({I(1), I(2), I(3)}).size(), 3u);
  EXPECT_EQ(D({{"a", I(1)}, {"b", I(2)}}).size(), 2u);
  EXPECT_EQ(S("abc").size(), 0u);
  EXPECT_EQ(Value().size(), 0u);
}

// ---- sharing

TEST(ValueSharing, CopyingAStrSharesTheHeapNode) {
  Value a = S("a string long enough to live outside any small-string buffer");
  Value b = a;
  EXPECT_EQ(a.as_str().data(), b.as_str().data());
  Value c;
  c = a;
  EXPECT_EQ(a.as_str().data(), c.as_str().data());
  Value in_list = L({a});
  EXPECT_EQ(in_list.items()[0].as_str().data(), a.as_str().data());
}

TEST(ValueSharing, CopyingAContainerSharesItsItems) {
  Value a = L({S("x"), D({{"k", S("v")}})});
  Value b = a;
  EXPECT_EQ(&a.items(), &b.items());
  Value d = D({{"k", S("v")}});
  Value e = d;
  EXPECT_EQ(&d.entries(), &e.entries());
}

TEST(ValueSharing, CopyOutlivesTheOriginal) {
  Value b;
  {
    Value a = S("short-lived original");
    b = a;
  }
  EXPECT_EQ(b.as_str(), "short-lived original");
  Value list;
  {
    Value item = S("item");
    list = L({item, item});
  }
  EXPECT_EQ(list.items()[0].as_str(), "item");
  EXPECT_EQ(list.items()[0].as_str().data(), list.items()[1].as_str().data());
}

TEST(ValueSharing, MoveLeavesNull) {
  Value a = S("moved");
  const char* data = a.as_str().data();
  Value b = std::move(a);
  EXPECT_TRUE(a.is_null());  // NOLINT(bugprone-use-after-move): documented state
  EXPECT_EQ(b.as_str().data(), data);
  Value c = I(5);
  c = std::move(b);
  EXPECT_TRUE(b.is_null());  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(c.as_str(), "moved");
}

TEST(ValueSharing, SelfAssignmentKeepsTheValue) {
  Value a = S("self");
  Value& ref = a;
  a = ref;
  EXPECT_EQ(a.as_str(), "self");
  a = std::move(ref);
  EXPECT_EQ(a.as_str(), "self");
}

TEST(ValueSharing, AssignmentReplacesAnyKind) {
  Value v = L({S("x")});
  v = I(3);
  EXPECT_EQ(v.kind(), Kind::Int);
  EXPECT_EQ(v.as_int(), 3);
  v = S("y");
  EXPECT_EQ(v.as_str(), "y");
  v = Value();
  EXPECT_TRUE(v.is_null());
}

// ---- equality and hashing

struct EqCase {
  const char* label;
  Value a, b;
  bool equal;
};
void PrintTo(const EqCase& c, std::ostream* os) { *os << c.label; }

class ValueEquality : public ::testing::TestWithParam<EqCase> {};

TEST_P(ValueEquality, EqualityIsStructuralAndHashAgrees) {
  const EqCase& c = GetParam();
  EXPECT_EQ(c.a == c.b, c.equal);
  EXPECT_EQ(c.b == c.a, c.equal) << "== must be symmetric";
  EXPECT_TRUE(c.a == c.a) << "== must be reflexive";
  if (c.equal) {
    EXPECT_EQ(c.a.hash(), c.b.hash()) << "equal values must hash equal";
  }
}

const double kNaN = std::numeric_limits<double>::quiet_NaN();

INSTANTIATE_TEST_SUITE_P(
    All, ValueEquality,
    ::testing::Values(
        EqCase{"null_null", Value(), Value(), true},
        EqCase{"null_vs_empty_str", Value(), S(""), false},
        EqCase{"int_vs_float", I(1), F(1.0), false},
        EqCase{"bool_vs_int", B(true), I(1), false},
        EqCase{"bool_vs_bool", B(false), B(false), true},
        EqCase{"bool_differs", B(true), B(false), false},
        EqCase{"int_same", I(-42), I(-42), true},
        EqCase{"int_differs", I(1), I(2), false},
        EqCase{"float_same", F(0.1), F(0.1), true},
        EqCase{"float_zero_signs_differ", F(0.0), F(-0.0), false},
        EqCase{"float_nan_reflexive", F(kNaN), F(kNaN), true},
        EqCase{"float_nan_signs_differ", F(kNaN), F(-kNaN), false},
        EqCase{"str_separate_heaps", S("abc"), S("abc"), true},
        EqCase{"str_differs", S("abc"), S("abd"), false},
        EqCase{"str_embedded_nul", Value::str(std::string("a\0b", 3)), Value::str("a"), false},
        EqCase{"empty_list_vs_empty_dict", L({}), D({}), false},
        EqCase{"list_same", L({I(1), S("a")}), L({I(1), S("a")}), true},
        EqCase{"list_order_matters", L({I(1), I(2)}), L({I(2), I(1)}), false},
        EqCase{"list_length", L({I(1)}), L({I(1), Value()}), false},
        EqCase{"list_nested_int_vs_float", L({L({I(1)})}), L({L({F(1)})}), false},
        EqCase{"dict_key_order_matters", D({{"a", I(1)}, {"b", I(2)}}),
               D({{"b", I(2)}, {"a", I(1)}}), false},
        EqCase{"dict_value_kind", D({{"a", I(1)}}), D({{"a", F(1)}}), false},
        EqCase{"dict_key_differs", D({{"a", I(1)}}), D({{"b", I(1)}}), false},
        EqCase{"dict_extra_key", D({{"a", I(1)}}), D({{"a", I(1)}, {"b", I(1)}}), false},
        EqCase{"dict_nested_order_matters",
               L({D({{"x", D({{"p", I(1)}, {"q", I(2)}})}, {"y", Value()}})}),
               L({D({{"y", Value()}, {"x", D({{"q", I(2)}, {"p", I(1)}})}})}), false},
        EqCase{"list_vs_str", L({S("a")}), S("a"), false},
        EqCase{"placeholder_same", P(3, 4), P(3, 4), true},
        EqCase{"placeholder_var_differs", P(3, 4), P(3, 5), false},
        EqCase{"placeholder_frame_differs", P(3, 4), P(4, 4), false},
        EqCase{"placeholder_vs_str", P(3, 4), S(""), false}),
    [](const auto& info) { return std::string(info.param.label); });

TEST(ValueHash, DistinguishesCommonNearMisses) {
  // Not a contract of hashing, but a hash that collides on these would make
  // every structural cache degenerate.
  std::vector<Value> distinct = {Value(), B(false), B(true), I(0), I(1), F(1.0), F(0.5),
                                 S(""), S("a"), S("b"), L({}), D({}), L({S("a")}),
                                 L({S("a"), S("b")}), L({S("b"), S("a")}), D({{"a", S("b")}}),
                                 D({{"b", S("a")}})};
  for (size_t i = 0; i < distinct.size(); ++i)
    for (size_t j = i + 1; j < distinct.size(); ++j) {
      ASSERT_FALSE(distinct[i] == distinct[j]) << i << " " << j;
      EXPECT_NE(distinct[i].hash(), distinct[j].hash()) << "values " << i << " and " << j;
    }
}

// Equality decides "the same computation" (IR equality, CSE, memoize keys,
// the plan cache): two values that print differently must never be equal.
// A sweep over values built to be near misses of each other: float signs
// and spellings, dicts in every key order, nested.
TEST(ValueEquality, ValuesThatPrintDifferentlyAreNeverEqual) {
  std::vector<Value> leaves = {F(0.0), F(-0.0), F(1.0), F(1.0000000000000002), F(-1.0), F(1e-310),
                               F(-1e-310), F(1e300), I(0), I(1), I(-1), B(true), B(false), S(""),
                               S("0"), S("0.0"), S("-0.0"), Value()};
  std::vector<Value> all = leaves;
  // Dicts of two and three keys in every order, over a few leaf choices.
  const char* keys[] = {"a", "b", "c"};
  for (size_t v = 0; v + 2 < leaves.size(); v += 3) {
    int order[] = {0, 1, 2};
    do {
      std::vector<Entry> e3, e2;
      for (int k : order) e3.emplace_back(keys[k], leaves[v + size_t(k)]);
      for (int k : order)
        if (k < 2) e2.emplace_back(keys[k], leaves[v + size_t(k)]);
      all.push_back(D(e3));
      all.push_back(D(e2));
      all.push_back(L({D(e2), leaves[v]}));
    } while (std::next_permutation(order, order + 3));
  }
  for (size_t i = 0; i + 1 < leaves.size(); ++i) all.push_back(L({leaves[i], leaves[i + 1]}));
  size_t pairs = 0;
  for (size_t i = 0; i < all.size(); ++i)
    for (size_t j = 0; j < all.size(); ++j) {
      const bool printed_alike = stringify(all[i]) == stringify(all[j]) && to_json(all[i]) == to_json(all[j]);
      if (all[i] == all[j]) {
        EXPECT_TRUE(printed_alike) << to_json(all[i]) << " == " << to_json(all[j]);
        EXPECT_EQ(all[i].hash(), all[j].hash()) << to_json(all[i]);
      } else if (i != j && !printed_alike) {
        ++pairs;
        EXPECT_NE(all[i].hash(), all[j].hash()) << to_json(all[i]) << " vs " << to_json(all[j]);
      }
      if (!printed_alike) {
        EXPECT_FALSE(all[i] == all[j]) << to_json(all[i]) << " vs " << to_json(all[j]);
      }
    }
  EXPECT_GT(pairs, 10000u);
}

TEST(ValueHash, IsDeterministicAcrossCopies) {
  Value a = L({S("x"), D({{"k", F(2.5)}}), I(7)});
  Value b = a;
  EXPECT_EQ(a.hash(), b.hash());
  EXPECT_EQ(a.hash(), L({S("x"), D({{"k", F(2.5)}}), I(7)}).hash());
}

// ---- dicts

TEST(ValueDict, KeepsInsertionOrderAndSortsForLookup) {
  Value d = D({{"b", I(1)}, {"a", I(2)}, {"c", I(3)}});
  ASSERT_EQ(d.entries().size(), 3u);
  EXPECT_EQ(d.entries()[0].first, "b");
  EXPECT_EQ(d.entries()[1].first, "a");
  EXPECT_EQ(d.entries()[2].first, "c");
  EXPECT_EQ(d.sorted(), (std::vector<uint32_t>{1, 0, 2}));
}

struct FindCase {
  const char* key;
  const Value* expected;  // nullptr = absent
};

TEST(ValueDict, FindByKey) {
  Value d = D({{"b", I(1)}, {"a", I(2)}, {"ab", I(3)}, {"", I(4)}, {"é", I(5)}});
  const Value one = I(1), two = I(2), three = I(3), four = I(4), five = I(5);
  const FindCase cases[] = {{"a", &two},  {"b", &one},     {"ab", &three}, {"", &four},
                            {"é", &five}, {"c", nullptr},  {"A", nullptr}, {"abc", nullptr},
                            {"aa", nullptr}};
  for (const FindCase& c : cases) {
    SCOPED_TRACE(std::string("key \"") + c.key + "\"");
    const Value* got = d.find(c.key);
    if (!c.expected) {
      EXPECT_EQ(got, nullptr);
    } else {
      ASSERT_NE(got, nullptr);
      EXPECT_EQ(*got, *c.expected);
    }
  }
}

TEST(ValueDict, FindOnNonDictsIsAbsent) {
  EXPECT_EQ(L({S("a")}).find("a"), nullptr);
  EXPECT_EQ(S("a").find("a"), nullptr);
  EXPECT_EQ(Value().find(""), nullptr);
  EXPECT_EQ(D({}).find(""), nullptr);
}

TEST(ValueDict, DuplicateKeyIsInvalidArgument) {
  EXPECT_AF_ERROR(D({{"a", I(1)}, {"a", I(2)}}), Code::InvalidArgument, "duplicate dict key \"a\"");
  EXPECT_AF_ERROR(D({{"x", I(1)}, {"k", I(1)}, {"y", I(1)}, {"k", S("v")}}),
                  Code::InvalidArgument, "duplicate dict key \"k\"");
  EXPECT_AF_ERROR(D({{"", I(1)}, {"", I(1)}}), Code::InvalidArgument, "duplicate dict key \"\"");
}

// ---- placeholders

TEST(ValuePlaceholder, HasPlaceholderLooksThroughContainers) {
  struct Case {
    const char* label;
    Value v;
    bool expected;
  };
  const Case cases[] = {
      {"null", Value(), false},
      {"str", S("x"), false},
      {"placeholder", P(1, 0), true},
      {"empty list", L({}), false},
      {"list of leaves", L({I(1), S("a")}), false},
      {"nested list", L({I(1), L({Value(), P(1, 2)})}), true},
      {"dict", D({{"a", D({{"b", P(1, 2, Kind::Int)}})}}), true},
      {"dict without", D({{"a", D({{"b", I(2)}})}}), false},
  };
  for (const Case& c : cases) EXPECT_EQ(c.v.has_placeholder(), c.expected) << c.label;
}

}  // namespace
}  // namespace af
