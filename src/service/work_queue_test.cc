// WorkQueue: every task posted before Join runs exactly once, none after, and a
// thread stuck in a long task does not hold up the tasks queued behind it.
#include "service/work_queue.h"

#include <atomic>
#include <future>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace tokenbatch::server {
namespace {

TEST(WorkQueueTest, RunsEveryTaskOnceFromManyProducers) {
  constexpr int kProducers = 4, kPerProducer = 2000;
  std::vector<std::atomic<int>> runs(kProducers * kPerProducer);
  {
    WorkQueue queue(2);
    std::vector<std::thread> producers;
    for (int p = 0; p < kProducers; ++p) {
      producers.emplace_back([&, p] {
        for (int i = 0; i < kPerProducer; ++i) {
          ASSERT_TRUE(queue.Post([&runs, k = p * kPerProducer + i] { runs[k].fetch_add(1); }));
        }
      });
    }
    for (std::thread& t : producers) t.join();
    queue.Join();  // runs what is still queued
  }
  for (std::size_t k = 0; k < runs.size(); ++k) ASSERT_EQ(runs[k].load(), 1) << "task " << k;
}

TEST(WorkQueueTest, RefusesPostsAfterJoinAndJoinIsIdempotent) {
  WorkQueue queue(1);
  std::atomic<int> ran{0};
  ASSERT_TRUE(queue.Post([&] { ran.fetch_add(1); }));
  queue.Join();
  EXPECT_EQ(ran.load(), 1);
  EXPECT_FALSE(queue.Post([&] { ran.fetch_add(1); }));
  queue.Join();
  EXPECT_EQ(ran.load(), 1);
}

TEST(WorkQueueTest, TasksPostedWhileBusyRunInOrderOnOneThread) {
  // One thread blocked in a task: the next tasks queue up and then run back to
  // back, in posting order.
  WorkQueue queue(1);
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  std::mutex mu;
  std::vector<int> order;
  ASSERT_TRUE(queue.Post([gate] { gate.wait(); }));
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(queue.Post([&, i] {
      std::lock_guard<std::mutex> lock(mu);
      order.push_back(i);
    }));
  }
  release.set_value();
  queue.Join();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

TEST(WorkQueueTest, AStalledThreadLetsASecondThreadRunTheRest) {
  // The first thread is held in a task (longer than kStall); the tasks posted
  // meanwhile wake the second thread, which runs them all while the first is
  // still held.
  WorkQueue queue(2);
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  std::promise<void> first_started;
  ASSERT_TRUE(queue.Post([&, gate] {
    first_started.set_value();
    gate.wait();
  }));
  first_started.get_future().wait();
  std::this_thread::sleep_for(2 * WorkQueue::kStall);  // the first thread now counts as stalled
  std::atomic<int> done{0};
  std::promise<void> all_done;
  const int n = 3;  // below the backlog threshold: only the stall rule wakes
  for (int i = 0; i < n; ++i) {
    ASSERT_TRUE(queue.Post([&] {
      if (done.fetch_add(1) + 1 == n) all_done.set_value();
    }));
  }
  // Bounded wait: if no second thread woke, this fails rather than hangs.
  const bool ran = all_done.get_future().wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  release.set_value();
  queue.Join();
  EXPECT_TRUE(ran) << "the stalled thread's queue did not wake the idle thread";
  EXPECT_EQ(done.load(), n);
}

}  // namespace
}  // namespace tokenbatch::server
