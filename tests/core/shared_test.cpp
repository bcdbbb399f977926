// Shared<T>: the IR's one-pointer reference to an immutable shared block.
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "value/shared.h"

namespace af {
namespace {

// Counts live instances, so a test can see a block freed exactly once.
struct Counted {
  static inline int live = 0;
  std::string text;
  explicit Counted(std::string t) : text(std::move(t)) { ++live; }
  Counted(const Counted& o) : text(o.text) { ++live; }
  ~Counted() { --live; }
};

TEST(Shared, IsOnePointerWide) { EXPECT_EQ(sizeof(Shared<Counted>), sizeof(void*)); }

TEST(Shared, CopiesShareOneBlockFreedWithTheLastReference) {
  {
    Shared<Counted> a = Shared<Counted>::make("x");
    EXPECT_TRUE(a.unique());
    Shared<Counted> b = a;
    EXPECT_FALSE(a.unique());
    EXPECT_EQ(a, b);
    EXPECT_EQ(b->text, "x");
    Shared<Counted> c = std::move(b);
    EXPECT_FALSE(b);
    EXPECT_EQ(c.get(), a.get());
    a = nullptr;
    EXPECT_TRUE(c.unique());
    EXPECT_EQ(Counted::live, 1);
    const Shared<Counted>& same = c;
    c = same;  // assigning a block to its own holder keeps it
    EXPECT_EQ((*c).text, "x");
  }
  EXPECT_EQ(Counted::live, 0);
}

TEST(Shared, AssignmentReleasesTheOldBlock) {
  Shared<Counted> a = Shared<Counted>::make("a"), b = Shared<Counted>::make("b");
  EXPECT_EQ(Counted::live, 2);
  a = b;
  EXPECT_EQ(Counted::live, 1);
  EXPECT_EQ(a->text, "b");
  a = Shared<Counted>();
  b = std::move(a);
  EXPECT_EQ(Counted::live, 0);
  EXPECT_EQ(b, nullptr);
  EXPECT_EQ(b.get(), nullptr);
}

TEST(Shared, AUniqueBlockChangesInPlace) {
  Shared<Counted> a = Shared<Counted>::make("a");
  a.mutable_value().text = "changed";
  EXPECT_EQ(a->text, "changed");
}

TEST(Shared, AnImmortalBlockIsSharedUncountedAndNeverFreed) {
  static const auto* forever = new Shared<Counted>(Shared<Counted>::immortal("static"));
  const int live = Counted::live;
  {
    Shared<Counted> a = *forever, b = a;
    EXPECT_EQ(a, *forever);
    EXPECT_FALSE(a.unique());  // never changed in place
    b = nullptr;
    a = Shared<Counted>::make("other");
  }
  EXPECT_EQ(Counted::live, live);
  EXPECT_EQ((*forever)->text, "static");
}

}  // namespace
}  // namespace af
