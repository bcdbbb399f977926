// Interned node shapes (core/lazy/shapes.h): equal structures share one
// Shape, structures that differ in anything observable never do, and a
// forgotten shape's id is never given again.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "ir/registry.h"
#include "lazy/shapes.h"

namespace af::lazy {
namespace {

// A concat of a promise and a literal `lit`, as record_ir records it.
struct Recorded {
  explicit Recorded(Value lit, Tags t = nullptr) : in{Value::str("x"), std::move(lit)}, tags(std::move(t)) {
    in_avals = {aval_of(in[0]), aval_of(in[1])};
  }
  ShapeOf view() const {
    return ShapeOf{prim("concat"), params, tree, out_tree, tags, in, literal, in_avals, out_avals};
  }
  std::vector<Value> in;
  Tags tags;
  Params params;
  TreeDef tree = TreeDef::flat_list(2), out_tree = TreeDef::flat_list(1);
  std::vector<uint8_t> literal{0, 1};
  std::vector<Aval> in_avals, out_avals{Aval{Kind::Str, 0}};
};

Value dict(bool b_first) {
  std::vector<Entry> e = {{"a", Value::integer(1)}, {"b", Value::integer(2)}};
  if (b_first) std::swap(e[0], e[1]);
  return Value::dict(std::move(e));
}

TEST(LazyShapes, EqualStructuresShareOneShape) {
  ShapeTable t;
  auto a = t.intern(Recorded(Value::str("e")).view());
  auto b = t.intern(Recorded(Value::str("e")).view());
  EXPECT_EQ(a.get(), b.get());
  EXPECT_EQ(a->literals.size(), 1u);
  EXPECT_EQ(t.size(), 1u);
}

TEST(LazyShapes, WhatPrintsDifferentlyIsAnotherShape) {
  ShapeTable t;
  const std::vector<std::pair<Value, Value>> twins = {
      {Value::floating(0.0), Value::floating(-0.0)},
      {dict(false), dict(true)},
      {Value::integer(1), Value::floating(1.0)},
      {Value::str("e"), Value::str("f")},
  };
  for (const auto& [x, y] : twins) {
    auto a = t.intern(Recorded(x).view()), b = t.intern(Recorded(y).view());
    EXPECT_NE(a->id, b->id) << to_json(x) << " / " << to_json(y);
  }
  auto tagged = t.intern(Recorded(Value::str("e"), std::make_shared<const std::vector<std::string>>(
                                                       std::vector<std::string>{"t"}))
                             .view());
  EXPECT_NE(tagged->id, t.intern(Recorded(Value::str("e")).view())->id);
}

TEST(LazyShapes, AForgottenShapeIsNeverGivenItsIdAgain) {
  ShapeTable t;
  auto first = t.intern(Recorded(Value::integer(-1)).view());
  // Fill past two sweeps without recording `first` again: it is forgotten.
  for (int64_t i = 0; i < int64_t(3 * ShapeTable::kMinEntries); ++i) t.intern(Recorded(Value::integer(i)).view());
  EXPECT_LT(t.size(), 3 * ShapeTable::kMinEntries);
  auto again = t.intern(Recorded(Value::integer(-1)).view());
  EXPECT_NE(again->id, first->id);
  EXPECT_EQ(first->literals[0].second, Value::integer(-1));  // its nodes still hold it
  // One recorded between sweeps is kept.
  auto hot = t.intern(Recorded(Value::integer(-2)).view());
  for (int64_t i = 0; i < int64_t(3 * ShapeTable::kMinEntries); ++i) {
    t.intern(Recorded(Value::integer(100000 + i)).view());
    if (i % 1000 == 0) {
      EXPECT_EQ(t.intern(Recorded(Value::integer(-2)).view())->id, hot->id);
    }
  }
}

TEST(LazyShapes, TheLiteralsItKeepsAreBounded) {
  // Constants of called IRs, each new: the table keeps about two sweeps'
  // worth of them, not all.
  ShapeTable t;
  const std::string mb(size_t(1) << 20, 'x');
  for (int i = 0; i < 300; ++i) t.intern(Recorded(Value::str(std::to_string(i) + mb)).view());
  EXPECT_LE(t.literal_bytes(), 2 * ShapeTable::kMinLiteralBytes + (size_t(2) << 20));
  EXPECT_GT(t.literal_bytes(), size_t(1) << 20);
  EXPECT_LT(t.size(), 300u);
}

}  // namespace
}  // namespace af::lazy
