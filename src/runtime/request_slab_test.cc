// RequestSlab: ids are unique, stale ids never match a reused slot, capacity
// grows by chunks.
#include "tokenbatch/runtime/request_slab.h"

#include <gtest/gtest.h>

#include <set>

namespace tokenbatch {
namespace {

struct Rec {
  std::uint64_t id = 0;
  int value = 0;
};

TEST(RequestSlabTest, IdsAreUniqueAndStaleIdsDoNotMatchAReusedSlot) {
  RequestSlab<Rec> slab;
  EXPECT_EQ(slab.Find(1), nullptr);  // nothing allocated yet
  (void)slab.Allocate();
  EXPECT_EQ(slab.Find(0), nullptr);  // free records have id 0: never a match
  const std::uint64_t a = *slab.Allocate();
  EXPECT_NE(a, 0u);
  ASSERT_NE(slab.Find(a), nullptr);
  slab.Get(a).value = 7;
  EXPECT_EQ(slab.Find(a)->value, 7);
  slab.Get(a) = Rec{};  // the owner resets the record, then releases the slot
  slab.Release(a);
  EXPECT_EQ(slab.Find(a), nullptr);
  const std::uint64_t b = *slab.Allocate();  // same slot, next generation
  EXPECT_EQ(b & ((1u << 26) - 1), a & ((1u << 26) - 1));
  EXPECT_NE(b, a);
  EXPECT_EQ(slab.Find(a), nullptr);
  EXPECT_EQ(slab.Find(b), &slab.Get(b));
}

TEST(RequestSlabTest, GrowsByChunksAndHandsOutEveryLiveIdOnce) {
  RequestSlab<Rec> slab;
  std::set<std::uint64_t> ids;
  const std::size_t n = RequestSlab<Rec>::kChunkSize * 2 + 5;
  for (std::size_t i = 0; i < n; ++i) ids.insert(*slab.Allocate());
  EXPECT_EQ(ids.size(), n);
  EXPECT_EQ(slab.capacity(), RequestSlab<Rec>::kChunkSize * 3);
  std::size_t live = 0;
  slab.ForEachLive([&](const Rec& r) { live += ids.count(r.id); });
  EXPECT_EQ(live, n);
}

}  // namespace
}  // namespace tokenbatch
