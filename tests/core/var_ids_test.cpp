// VarIds: an equation's output ids, inline up to two, on the heap beyond.
#include <gtest/gtest.h>

#include <span>
#include <utility>
#include <vector>

#include "ir/var_ids.h"

namespace af {
namespace {

std::vector<VarId> ids(const VarIds& v) { return std::vector<VarId>(v.begin(), v.end()); }

TEST(VarIds, GrowsFromInlineToHeapKeepingItsIds) {
  VarIds v;
  EXPECT_TRUE(v.empty());
  std::vector<VarId> want;
  for (VarId i = 0; i < 40; ++i) {
    v.push_back(i * 3);
    want.push_back(i * 3);
    ASSERT_EQ(ids(v), want) << "after " << i + 1 << " ids";
  }
  std::span<const VarId> s = v;
  EXPECT_EQ(s.size(), 40u);
  EXPECT_EQ(s[39], 117u);
}

TEST(VarIds, CopiesAndMovesInlineAndHeapIds) {
  for (size_t n : {0u, 1u, 2u, 3u, 17u}) {
    VarIds a;
    for (size_t i = 0; i < n; ++i) a.push_back(VarId(i + 1));
    VarIds copy = a;
    EXPECT_EQ(copy, a);
    VarIds moved = std::move(copy);
    EXPECT_EQ(moved, a);
    EXPECT_TRUE(copy.empty());  // NOLINT: a moved-from VarIds is empty, by contract
    VarIds assigned{9, 9, 9, 9};
    assigned = a;
    EXPECT_EQ(assigned, a);
    assigned = VarIds{5};
    EXPECT_EQ(ids(assigned), std::vector<VarId>{5});
    assigned = std::move(moved);
    EXPECT_EQ(assigned, a);
  }
}

TEST(VarIds, AssignsAndComparesLikeAVector) {
  VarIds v = std::vector<VarId>{1, 2, 3};
  EXPECT_EQ(ids(v), (std::vector<VarId>{1, 2, 3}));
  std::vector<VarId> four{1, 7, 7, 7};
  v.assign(four.begin(), four.end());
  EXPECT_EQ(ids(v), four);
  v[0] = 8;
  EXPECT_EQ(v, (VarIds{8, 7, 7, 7}));
  EXPECT_FALSE(v == (VarIds{8, 7, 7}));
  v.clear();
  EXPECT_TRUE(v.empty());
  v.reserve(10);
  v.push_back(4);
  EXPECT_EQ(ids(v), std::vector<VarId>{4});
}

}  // namespace
}  // namespace af
