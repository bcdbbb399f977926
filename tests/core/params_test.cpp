// Params lookups: blocks of up to 8 params are scanned, larger ones searched
// (the items are kept sorted by name); both must find every name and only those.
#include <gtest/gtest.h>

#include <string>

#include "ir/ir.h"

namespace af {
namespace {

TEST(Params, FindsEveryNameAtAnySize) {
  for (int n : {0, 1, 8, 9, 40}) {
    SCOPED_TRACE(n);
    Params p;
    for (int i = n - 1; i >= 0; --i) p.set("p" + std::to_string(i), Value::integer(i));  // out of order
    for (int i = 0; i < n; ++i) {
      const Param* found = p.find("p" + std::to_string(i));
      ASSERT_NE(found, nullptr);
      EXPECT_EQ(std::get<Value>(*found), Value::integer(i));
    }
    EXPECT_EQ(p.find("p"), nullptr);  // a prefix of every name
    EXPECT_EQ(p.find("p" + std::to_string(n)), nullptr);
    EXPECT_EQ(p.find(""), nullptr);
  }
}

}  // namespace
}  // namespace af
