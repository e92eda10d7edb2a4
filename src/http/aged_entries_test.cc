#include "http/aged_entries.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace tokenbatch::server {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(AgedEntries, AnEntryComesDueOnTheSecondRotationAfterItsAdd) {
  AgedEntries<int> list;
  std::vector<int> due;
  EXPECT_TRUE(list.Add(1));   // idle: the caller starts its timer
  EXPECT_FALSE(list.Add(2));  // a timer is already running
  EXPECT_TRUE(list.Rotate(due));
  EXPECT_THAT(due, IsEmpty());  // 1 and 2 are less than a period old
  EXPECT_FALSE(list.Add(3));
  EXPECT_TRUE(list.Rotate(due));
  EXPECT_THAT(due, ElementsAre(1, 2));
  EXPECT_FALSE(list.Rotate(due));  // nothing left waiting: the timer stops
  EXPECT_THAT(due, ElementsAre(3));
  EXPECT_TRUE(list.Add(4));  // idle again
}

TEST(AgedEntries, ConcurrentAddsAreEachHandedOutOnce) {
  AgedEntries<int> list;
  constexpr int kPerThread = 20000;
  std::atomic<int> adders_done{0};
  auto add = [&](int base) {
    for (int i = 0; i < kPerThread; ++i) (void)list.Add(base + i);
    adders_done.fetch_add(1);
  };
  std::thread a(add, 0);
  std::thread b(add, kPerThread);
  std::vector<int> seen(2 * kPerThread, 0);
  std::vector<int> due;
  auto rotate = [&] {
    const bool waiting = list.Rotate(due);
    for (int v : due) ++seen[v];
    return waiting;
  };
  while (adders_done.load() < 2) rotate();  // rotating while both threads add
  a.join();
  b.join();
  while (rotate()) {
  }
  for (int v = 0; v < 2 * kPerThread; ++v) ASSERT_EQ(seen[v], 1) << v;
}

}  // namespace
}  // namespace tokenbatch::server
