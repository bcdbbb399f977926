// The plan cache: a hash is never trusted alone, bounds evict least recently
// used first, and a directory level survives corrupt files.
#include <gtest/gtest.h>

#include <span>
#include <vector>

#include "rt/env.h"
#include "exec/plan_cache.h"
#include "expect_error.h"
#include "prims/ops.h"
#include "trace/trace.h"

namespace af {
namespace {

// concat of the input with itself n times.
PlanCacheOptions bounds(size_t entries, size_t bytes = size_t(256) << 20) {
  PlanCacheOptions o;
  o.max_entries = entries;
  o.max_bytes = bytes;
  return o;
}

IRPtr chain(size_t n) {
  RunEnv env;
  Value example = Value::str("e");
  return trace(
      [&](std::span<const Value> in) {
        Value prev = in[0];
        for (size_t i = 0; i < n; ++i) {
          const Value args[2] = {prev, in[0]};
          prev = op_concat(args, env);
        }
        return prev;
      },
      std::span<const Value>(&example, 1), Value());
}

TEST(PlanCache, EqualStructuresShareOneProgram) {
  PlanCache cache;
  IRPtr a = chain(3), b = chain(3);
  ASSERT_NE(a.get(), b.get());
  auto pa = cache.get(a);
  auto pb = cache.get(b);
  EXPECT_EQ(pa.get(), pb.get());
  EXPECT_EQ(cache.stats().misses, 1u);
  EXPECT_EQ(cache.stats().hits, 1u);
}

TEST(PlanCache, ASharedHashIsConfirmedByEquality) {
  // Two different IRs filed under one hash (as a collision would): each
  // gets its own program, and each lookup finds its own.
  PlanCache cache;
  IRPtr a = chain(2), b = chain(5);
  const uint64_t same = 42;
  auto pa = cache.get(a, same);
  auto pb = cache.get(b, same);
  EXPECT_NE(pa.get(), pb.get());
  EXPECT_EQ(pa->ir.get(), a.get());
  EXPECT_EQ(pb->ir.get(), b.get());
  EXPECT_EQ(cache.get(chain(2), same).get(), pa.get());
  EXPECT_EQ(cache.get(chain(5), same).get(), pb.get());
  EXPECT_EQ(cache.stats().misses, 2u);
  EXPECT_EQ(cache.stats().entries, 2u);
}

TEST(PlanCache, ASignatureFindsOnlyTheProgramStoredWithIt) {
  // The lazy evaluator's lookup: programs filed under one key are told
  // apart by their signatures, and one stored without a signature (by
  // af_compile) is never found that way.
  PlanCache cache;
  const uint64_t key = 7;
  const std::vector<uint32_t> sig_a = {1, 0, 2}, sig_b = {1, 0, 3};
  auto pa = cache.get(chain(2), key, {}, sig_a);
  auto pb = cache.get(chain(4), key, {}, sig_b);
  cache.get(chain(6), key);
  EXPECT_EQ(cache.find(key, sig_a).get(), pa.get());
  EXPECT_EQ(cache.find(key, sig_b).get(), pb.get());
  EXPECT_EQ(cache.find(key, std::vector<uint32_t>{1, 0}), nullptr);
  EXPECT_EQ(cache.find(key, {}), nullptr);
  EXPECT_EQ(cache.find(key + 1, sig_a), nullptr);
  EXPECT_EQ(cache.stats().hits, 2u);  // a find that misses counts nothing
  EXPECT_EQ(cache.stats().misses, 3u);
}

TEST(PlanCache, EvictsLeastRecentlyUsedByEntriesAndBytes) {
  PlanCache cache;
  cache.configure(bounds(2));
  IRPtr a = chain(1), b = chain(2), c = chain(3);
  auto pa = cache.get(a);
  cache.get(b);
  cache.get(a);  // a is now the most recent
  cache.get(c);  // evicts b
  EXPECT_EQ(cache.stats().evictions, 1u);
  EXPECT_EQ(cache.get(a).get(), pa.get());
  EXPECT_EQ(cache.stats().hits, 2u);
  cache.get(b);  // a miss again
  EXPECT_EQ(cache.stats().misses, 4u);

  // A byte bound below one program keeps none: a program over it runs
  // (get returns it) but is not kept.
  cache.configure(bounds(100, 1));
  EXPECT_EQ(cache.stats().entries, 0u);
  EXPECT_EQ(cache.stats().bytes, 0u);
  EXPECT_NE(cache.get(a), nullptr);
  EXPECT_EQ(cache.stats().entries, 0u);
  EXPECT_EQ(cache.stats().not_kept, 1u);
  EXPECT_GT(program_bytes(*pa), sizeof(Program));
}

TEST(PlanCache, BadOptionsAreRefused) {
  PlanCache cache;
  EXPECT_AF_ERROR(cache.configure(bounds(0)), Code::InvalidArgument, "max_entries");
  PlanCacheOptions o;
  o.dir = "/proc/self/nope/plans";
  EXPECT_AF_ERROR(cache.configure(o), Code::IO, "plan cache");
}

}  // namespace
}  // namespace af
