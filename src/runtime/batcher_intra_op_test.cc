// BatcherOptions::intra_op on real threads: the threads the running forwards
// were given never add up to more than the cores, a forward beside another runs
// on one thread, every wide forward runs on one and the same worker thread,
// every request is answered once, a lone batch after a quiet spell gets every
// core, and a drain right after a submit ends. Also runs under TSan.
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/test_backend.h"
#include "testing/wait_until.h"

namespace tokenbatch {
namespace {

using testing::MakeTokens;
using testing::SumBatcher;
using testing::SumOf;
using testing::Tokens;
using testing::WaitUntil;

thread_local int forward_threads = 0;  // what set_forward_threads gave this worker

// Counts the threads of the forwards running at once.
struct CoreLedger {
  std::atomic<int> threads_running{0}, forwards_running{0};
  std::atomic<int> most_threads{0}, wide_beside_another{0}, batches{0}, narrow{0}, last_width{0};
  std::mutex mu;
  std::set<std::thread::id> wide_threads;  // the threads that ran a wide forward

  absl::StatusOr<std::vector<long>> Run(std::span<const Tokens> batch) {
    const int width = forward_threads;
    const int threads = threads_running.fetch_add(width) + width;
    const int forwards = forwards_running.fetch_add(1) + 1;
    int seen = most_threads.load();
    while (threads > seen && !most_threads.compare_exchange_weak(seen, threads)) {
    }
    if (forwards > 1 && width > 1) wide_beside_another.fetch_add(1);
    batches.fetch_add(1);
    last_width.store(width);
    if (width == 1) narrow.fetch_add(1);
    if (width > 1) {
      std::lock_guard<std::mutex> lock(mu);
      wide_threads.insert(std::this_thread::get_id());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    forwards_running.fetch_sub(1);
    threads_running.fetch_sub(width);
    std::vector<long> out;
    for (const Tokens& t : batch) out.push_back(SumOf(t));
    return out;
  }
};

// Whether every thread of this process but the caller is blocked in the kernel
// (state S in /proc/self/task/*/stat). Once a worker has run a request's
// callback it goes back to sleep for work; until it is blocked there it may
// still be finishing its callbacks, and a request arriving meanwhile is not
// its to take (worker_loop.cc). Nothing else here holds a lock a worker
// could block on, so a worker in S is asleep waiting for work.
bool OtherThreadsAsleep() {
  const std::string self = std::to_string(syscall(SYS_gettid));
  std::error_code error;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", error)) {
    if (task.path().filename() == self) continue;
    std::ifstream stat(task.path() / "stat");
    std::string line;
    std::getline(stat, line);
    // "tid (name) state ...": the name may hold spaces and parentheses.
    const std::size_t name_end = line.rfind(')');
    if (name_end == std::string::npos || name_end + 2 >= line.size()) continue;  // the thread has ended
    if (line[name_end + 2] != 'S') return false;
  }
  return !error;
}

TEST(BatcherIntraOpTest, ForwardsNeverHoldMoreThreadsThanCores) {
  for (const int cores : {2, 3}) {
    CoreLedger ledger;
    BatcherOptions o;
    o.scheduler.cost_model = CostModel::Sum();
    o.scheduler.max_batch_tokens = 256;
    o.scheduler.max_batch_size = 4;
    o.scheduler.max_wait = std::chrono::microseconds(200);
    o.num_workers = cores;
    o.intra_op = IntraOpOptions{.cores = cores, .narrow_hold = std::chrono::milliseconds(5)};
    o.set_forward_threads = [](int threads) { forward_threads = threads; };
    auto batcher = std::move(*SumBatcher::Create(o, [&](std::span<const Tokens> b) { return ledger.Run(b); }));

    constexpr int kProducers = 4, kPerProducer = 150;
    std::vector<std::atomic<int>> calls(kProducers * kPerProducer);
    std::vector<long> values(calls.size()), expected(calls.size());
    std::vector<std::thread> producers;
    for (int p = 0; p < kProducers; ++p) {
      producers.emplace_back([&, p] {
        for (int i = 0; i < kPerProducer; ++i) {
          const std::size_t k = static_cast<std::size_t>(p * kPerProducer + i);
          Tokens t = MakeTokens(1 + (i * 7 + p) % 40, i);
          expected[k] = SumOf(t);
          const std::int64_t len = static_cast<std::int64_t>(t.size());
          ASSERT_TRUE(batcher
                          ->Submit(std::move(t), len, {},
                                   [&, k](SumBatcher::Result r) {
                                     if (r.ok()) values[k] = *r;
                                     calls[k].fetch_add(1);
                                   })
                          .ok());
        }
      });
    }
    for (auto& t : producers) t.join();
    // Wait until every answer is in, then past the hold: a lone request is wide.
    // The hold is measured in real time from the last sign of load, which came
    // before the last answer, so sleeping past it after that answer ends it.
    // Then lone requests one after another, each once every worker is back
    // asleep, not still running callbacks.
    ASSERT_TRUE(WaitUntil([&] { return batcher->metrics().requests_succeeded >= calls.size(); }));
    std::this_thread::sleep_for(4 * o.intra_op->narrow_hold);
    const int before = ledger.batches.load();
    const int narrow_before = ledger.narrow.load();
    constexpr int kLone = 20;
    std::atomic<int> lone_calls{0};
    for (int i = 0; i < kLone; ++i) {
      ASSERT_TRUE(WaitUntil(OtherThreadsAsleep)) << "the workers did not go back to sleep";
      ASSERT_TRUE(batcher->Submit(MakeTokens(3), 3, {}, [&](SumBatcher::Result) { lone_calls.fetch_add(1); }).ok());
      ASSERT_TRUE(WaitUntil([&] { return lone_calls.load() >= i + 1; }));
    }
    batcher->Shutdown(ShutdownMode::kDrain);

    for (std::size_t k = 0; k < calls.size(); ++k) {
      ASSERT_EQ(calls[k].load(), 1) << k;
      EXPECT_EQ(values[k], expected[k]);
    }
    EXPECT_EQ(lone_calls.load(), kLone);
    EXPECT_LE(ledger.most_threads.load(), cores) << cores << " cores";
    EXPECT_EQ(ledger.wide_beside_another.load(), 0);
    EXPECT_GT(ledger.narrow.load(), 0) << "600 requests from 4 producers never queued behind a batch";
    EXPECT_EQ(ledger.batches.load(), before + kLone);
    // One worker runs every wide forward, so that only its OpenMP team has
    // helper threads (worker_loop.cc).
    EXPECT_EQ(ledger.wide_threads.size(), 1u);
    EXPECT_EQ(ledger.last_width.load(), cores) << "a lone batch after a quiet spell";
    EXPECT_EQ(ledger.narrow.load(), narrow_before) << "every lone batch gets every core";
    EXPECT_EQ(forward_threads, 0);  // set on the workers' threads, not this one
  }
}

// A drain right after a submit, when a worker other than worker 0 may find
// the lone batch due wide: it must not leave it to worker 0 and sleep on, or
// Shutdown waits for it forever (the test would hang until ctest's timeout).
TEST(BatcherIntraOpTest, ADrainRightAfterALoneSubmitEnds) {
  constexpr int kCores = 2, kRepeats = 300;
  for (int r = 0; r < kRepeats; ++r) {
    BatcherOptions o;
    o.scheduler.cost_model = CostModel::Sum();
    o.scheduler.max_batch_tokens = 256;
    o.num_workers = kCores;
    o.intra_op = IntraOpOptions{.cores = kCores, .narrow_hold = std::chrono::milliseconds(5)};
    o.set_forward_threads = [](int threads) { forward_threads = threads; };
    auto batcher = std::move(*SumBatcher::Create(o, [](std::span<const Tokens> b) {
      std::vector<long> sums;
      for (const Tokens& t : b) sums.push_back(SumOf(t));
      return absl::StatusOr<std::vector<long>>(std::move(sums));
    }));
    std::atomic<int> calls{0};
    long value = 0;
    ASSERT_TRUE(batcher
                    ->Submit(MakeTokens(3), 3, {},
                             [&](SumBatcher::Result result) {
                               if (result.ok()) value = *result;
                               calls.fetch_add(1);
                             })
                    .ok());
    batcher->Shutdown(ShutdownMode::kDrain);
    ASSERT_EQ(calls.load(), 1) << "repeat " << r;
    EXPECT_EQ(value, SumOf(MakeTokens(3)));
  }
}

}  // namespace
}  // namespace tokenbatch
