// advise_huge_pages is advice only: whatever the kernel does with it, the
// memory keeps its contents and stays usable, for any pointer and size.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <numeric>
#include <vector>

#include "value/huge_pages.h"

namespace af {
namespace {

TEST(HugePages, AdviceKeepsWhatTheMemoryHolds) {
  // 9 MiB plus an odd offset: an unaligned start, aligned huge pages inside,
  // and a tail past the last one.
  std::vector<uint32_t> v(9 * (1u << 20) / sizeof(uint32_t) + 3);
  std::iota(v.begin(), v.end(), 7u);
  advise_huge_pages(reinterpret_cast<char*>(v.data()) + 1, v.size() * sizeof(uint32_t) - 1);
  for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(v[i], uint32_t(i + 7)) << "at " << i;
  v.back() = 1;  // still writable
  EXPECT_EQ(v.back(), 1u);
}

TEST(HugePages, AdviceBeforeFirstTouchGivesUsableMemory) {
  const size_t n = 6 * (1u << 20);
  std::unique_ptr<uint8_t[]> p(new uint8_t[n]);
  advise_huge_pages(p.get(), n);
  for (size_t i = 0; i < n; i += 4096) p[i] = uint8_t(i >> 12);
  for (size_t i = 0; i < n; i += 4096) ASSERT_EQ(p[i], uint8_t(i >> 12));
}

TEST(HugePages, SmallOrEmptyRangesAreLeftAlone) {
  advise_huge_pages(nullptr, 0);
  advise_huge_pages(nullptr, 1u << 30);  // a null pointer is ignored
  uint64_t x = 42;
  advise_huge_pages(&x, sizeof x);
  EXPECT_EQ(x, 42u);
}

}  // namespace
}  // namespace af
