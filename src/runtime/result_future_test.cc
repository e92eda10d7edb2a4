#include "tokenbatch/runtime/result_future.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace tokenbatch {
namespace {

using Promise = ResultPromise<std::string>;

TEST(ResultFutureTest, SetBeforeGetDeliversTheValue) {
  auto [promise, future] = Promise::Make();
  EXPECT_TRUE(future.valid());
  EXPECT_FALSE(future.ready());
  promise.Set(std::string("embedding"));
  EXPECT_FALSE(promise.valid());
  EXPECT_TRUE(future.ready());
  absl::StatusOr<std::string> r = future.get();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "embedding");
  EXPECT_FALSE(future.valid());
}

TEST(ResultFutureTest, ErrorsAreDelivered) {
  auto [promise, future] = Promise::Make();
  promise.Set(absl::ResourceExhaustedError("queue full"));
  absl::StatusOr<std::string> r = future.get();
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(r.status().message(), "queue full");
}

TEST(ResultFutureTest, WaitForTimesOutThenSeesTheValue) {
  auto [promise, future] = Promise::Make();
  EXPECT_EQ(future.wait_for(std::chrono::milliseconds(1)), std::future_status::timeout);
  EXPECT_EQ(future.wait_until(std::chrono::system_clock::now()), std::future_status::timeout);
  promise.Set(std::string("x"));
  EXPECT_EQ(future.wait_for(std::chrono::seconds(0)), std::future_status::ready);
}

// Timeouts and deadlines at the ends of their ranges neither overflow nor
// return early: a huge timeout waits for the value, a past deadline does not.
TEST(ResultFutureTest, ExtremeTimeoutsDoNotOverflow) {
  auto [promise, future] = Promise::Make();
  EXPECT_EQ(future.wait_for(std::chrono::hours::min()), std::future_status::timeout);
  EXPECT_EQ(future.wait_until(std::chrono::system_clock::time_point::min()), std::future_status::timeout);
  std::thread setter([p = std::move(promise)]() mutable {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    p.Set(std::string("late"));
  });
  EXPECT_EQ(future.wait_for(std::chrono::hours::max()), std::future_status::ready);
  EXPECT_EQ(future.wait_until(std::chrono::steady_clock::time_point::max()), std::future_status::ready);
  EXPECT_EQ(*future.get(), "late");
  setter.join();
}

TEST(ResultFutureTest, PromiseDestroyedUnsetDeliversInternal) {
  auto [promise, future] = Promise::Make();
  { Promise gone = std::move(promise); }
  absl::StatusOr<std::string> r = future.get();
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(r.status().message().find("never delivered"), std::string::npos);
}

// Either side may release first (run under ASan, a leak or double free fails).
TEST(ResultFutureTest, FutureDroppedBeforeSetIsFreedBySet) {
  auto [promise, future] = Promise::Make();
  { ResultFuture<std::string> gone = std::move(future); }
  EXPECT_FALSE(future.valid());
  promise.Set(std::string("nobody listens"));
}

TEST(ResultFutureTest, MoveAssignReleasesTheOldState) {
  auto [p1, f1] = Promise::Make();
  auto [p2, f2] = Promise::Make();
  p1.Set(std::string("one"));
  f1 = std::move(f2);  // drops the first state (already set)
  p2.Set(std::string("two"));
  EXPECT_EQ(*f1.get(), "two");
}

// A sleeping waiter is woken, across threads and many pairs; values arrive intact.
TEST(ResultFutureTest, CrossThreadWakeDeliversEveryValue) {
  constexpr int kPairs = 2000;
  std::vector<Promise> promises;
  std::vector<ResultFuture<std::string>> futures;
  for (int i = 0; i < kPairs; ++i) {
    auto [p, f] = Promise::Make();
    promises.push_back(std::move(p));
    futures.push_back(std::move(f));
  }
  std::thread setter([&] {
    for (int i = 0; i < kPairs; ++i) {
      if (i % 100 == 0) std::this_thread::yield();
      promises[i].Set(std::to_string(i));
    }
  });
  for (int i = 0; i < kPairs; ++i) {
    absl::StatusOr<std::string> r = futures[i].get();
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(*r, std::to_string(i));
  }
  setter.join();
}

}  // namespace
}  // namespace tokenbatch
