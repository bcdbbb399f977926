// SmallVec: an equation's inputs and outputs, inline up to two, on the heap
// beyond. Run with a trivial element (VarId) and with one that owns memory
// (std::string), whose copies, moves and destruction must each happen once
// (the sanitizer builds check the latter).
#include <gtest/gtest.h>

#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ir/ir.h"
#include "value/small_vec.h"

namespace af {
namespace {

template <class T>
T item(size_t i);
template <>
VarId item<VarId>(size_t i) { return VarId(i * 3); }
template <>
std::string item<std::string>(size_t i) { return "a string long enough to live on the heap #" + std::to_string(i); }

template <class T>
class SmallVecTest : public ::testing::Test {
 protected:
  using Vec = SmallVec<T, 2>;
  static std::vector<T> items(const Vec& v) { return std::vector<T>(v.begin(), v.end()); }
  static Vec of(size_t n) {
    Vec v;
    for (size_t i = 0; i < n; ++i) v.push_back(item<T>(i));
    return v;
  }
};
using Elements = ::testing::Types<VarId, std::string>;
TYPED_TEST_SUITE(SmallVecTest, Elements);

TYPED_TEST(SmallVecTest, GrowsFromInlineToHeapKeepingItsElements) {
  typename TestFixture::Vec v;
  EXPECT_TRUE(v.empty());
  std::vector<TypeParam> want;
  for (size_t i = 0; i < 40; ++i) {
    v.push_back(item<TypeParam>(i));
    want.push_back(item<TypeParam>(i));
    ASSERT_EQ(this->items(v), want) << "after " << i + 1 << " elements";
  }
  std::span<const TypeParam> s = v;
  EXPECT_EQ(s.size(), 40u);
  EXPECT_EQ(s[39], item<TypeParam>(39));
  EXPECT_EQ(v.back(), item<TypeParam>(39));
  v.pop_back();
  EXPECT_EQ(v.size(), 39u);
}

TYPED_TEST(SmallVecTest, PushesAnElementOfItselfWhileGrowing) {
  for (size_t n : {2u, 3u, 4u}) {  // full inline, and full on the heap
    auto v = this->of(n);
    v.reserve(n);
    v.push_back(v[0]);
    EXPECT_EQ(v.back(), item<TypeParam>(0)) << n;
  }
}

TYPED_TEST(SmallVecTest, CopiesAndMovesInlineAndHeapElements) {
  using Vec = typename TestFixture::Vec;
  for (size_t n : {0u, 1u, 2u, 3u, 17u}) {
    Vec a = this->of(n);
    Vec copy = a;
    EXPECT_EQ(copy, a);
    Vec moved = std::move(copy);
    EXPECT_EQ(moved, a);
    EXPECT_TRUE(copy.empty());  // NOLINT: a moved-from SmallVec is empty, by contract
    Vec assigned = this->of(4);
    assigned = a;
    EXPECT_EQ(assigned, a);
    assigned = Vec{item<TypeParam>(5)};
    EXPECT_EQ(this->items(assigned), std::vector<TypeParam>{item<TypeParam>(5)});
    assigned = std::move(moved);
    EXPECT_EQ(assigned, a);
    Vec from_vector = std::vector<TypeParam>(a.begin(), a.end());
    EXPECT_EQ(from_vector, a);
  }
}

TYPED_TEST(SmallVecTest, AssignsAndComparesLikeAVector) {
  using Vec = typename TestFixture::Vec;
  const TypeParam x = item<TypeParam>(1), y = item<TypeParam>(7), z = item<TypeParam>(8);
  Vec v = std::vector<TypeParam>{x, y, z};
  EXPECT_EQ(this->items(v), (std::vector<TypeParam>{x, y, z}));
  std::vector<TypeParam> four{x, y, y, y};
  v.assign(four.begin(), four.end());
  EXPECT_EQ(this->items(v), four);
  v[0] = z;
  EXPECT_EQ(v, (Vec{z, y, y, y}));
  EXPECT_FALSE(v == (Vec{z, y, y}));
  v.clear();
  EXPECT_TRUE(v.empty());
  v.reserve(10);
  v.emplace_back(x);
  EXPECT_EQ(this->items(v), std::vector<TypeParam>{x});
}

TEST(SmallVec, HoldsAnEquationsTwoInputsAndOutputsInline) {
  EXPECT_EQ(sizeof(Atom), 16u);  // the variable id in the literal's tail padding
  EXPECT_EQ(sizeof(VarIds), 2 * sizeof(VarId) + 8);
  EXPECT_EQ(sizeof(EqnAtoms), 2 * sizeof(Atom) + 8);
  EXPECT_EQ(sizeof(Eqn), 96u);  // docs/PERFORMANCE.md, "A denser Eqn"
}

}  // namespace
}  // namespace af
