// ArrivalOrder against a std::map doing the same operations: in-order appends
// (the ring), out-of-order arrivals (the late btree), removals anywhere
// (tombstones, trimming and compaction), and ordered iteration over both.
#include "core/arrival_order.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <random>
#include <vector>

namespace tokenbatch::internal {
namespace {

using std::chrono::microseconds;

std::vector<std::pair<ArrivalKey, Slot>> Items(const ArrivalOrder& order) {
  return {order.begin(), order.end()};
}
std::vector<std::pair<ArrivalKey, Slot>> Items(const std::map<ArrivalKey, Slot>& ref) {
  return {ref.begin(), ref.end()};
}

TEST(ArrivalOrder, MergesInOrderAndLateArrivals) {
  ArrivalOrder order;
  const TimePoint t0{};
  order.emplace({t0 + microseconds(10), 0}, {1, 5});
  order.emplace({t0 + microseconds(30), 1}, {2, 5});
  order.emplace({t0 + microseconds(20), 2}, {3, 5});  // late: older than the newest
  order.emplace({t0 + microseconds(5), 3}, {4, 5});   // late, and the oldest of all
  ASSERT_EQ(order.size(), 4u);
  std::vector<RequestId> ids;
  for (const auto& [key, slot] : order) ids.push_back(slot.id);
  EXPECT_EQ(ids, (std::vector<RequestId>{4, 1, 3, 2}));
  EXPECT_EQ(order.begin()->second.id, 4u);
  EXPECT_EQ(order.erase({t0 + microseconds(5), 3}), 1u);
  EXPECT_EQ(order.erase({t0 + microseconds(5), 3}), 0u);  // already gone
  EXPECT_EQ(order.begin()->second.id, 1u);
  EXPECT_EQ(order.erase({t0 + microseconds(10), 0}), 1u);
  EXPECT_EQ(order.begin()->second.id, 3u);
  EXPECT_EQ(order.size(), 2u);
}

TEST(ArrivalOrder, MatchesAnOrderedMapUnderRandomOperations) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    ArrivalOrder order;
    std::map<ArrivalKey, Slot> ref;
    std::uint64_t seq = 0;
    TimePoint clock{};
    const int late_percent = trial % 5 == 0 ? 0 : 10 * (trial % 5);
    for (int step = 0; step < 3000; ++step) {
      const auto roll = rng() % 100;
      if (roll < 55 || ref.empty()) {
        clock += microseconds(rng() % 3);
        TimePoint arrival = clock;
        if (static_cast<int>(rng() % 100) < late_percent) arrival -= microseconds(rng() % 50);
        const ArrivalKey key{arrival, seq++};
        const Slot slot{seq, static_cast<std::int64_t>(rng() % 100)};
        order.emplace(key, slot);
        ref.emplace(key, slot);
      } else {
        // Remove the oldest (as dispatch mostly does) or any entry.
        auto it = ref.begin();
        if (roll % 2 == 0) std::advance(it, static_cast<long>(rng() % ref.size()));
        ASSERT_EQ(order.erase(it->first), 1u);
        ref.erase(it);
      }
      ASSERT_EQ(order.size(), ref.size());
      ASSERT_EQ(order.empty(), ref.empty());
      if (!ref.empty()) {
        ASSERT_EQ(order.begin()->first, ref.begin()->first);
      }
      if (step % 97 == 0) {
        ASSERT_EQ(Items(order), Items(ref)) << "trial " << trial << " step " << step;
      }
    }
    ASSERT_EQ(Items(order), Items(ref));
  }
}

}  // namespace
}  // namespace tokenbatch::internal
