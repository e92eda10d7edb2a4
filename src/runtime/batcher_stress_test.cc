// Seeded random workloads on real threads: concurrent producers, cancellations,
// poison requests, out-of-memory batches and a shutdown at the end. Each request's
// callback must run exactly once with the right outcome. Also runs under TSan.
#include <atomic>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "runtime/test_backend.h"

namespace tokenbatch {
namespace {

using testing::MakeTokens;
using testing::RecordingBackend;
using testing::SumBatcher;
using testing::SumOf;
using testing::Tokens;

struct Record {
  std::atomic<int> calls{0};
  std::atomic<int> kind{-1};
  long value = 0;
  bool poison = false;
  bool cancel_requested = false;
  long expected = 0;
};

class BatcherStressTest : public ::testing::TestWithParam<std::uint32_t> {};

TEST_P(BatcherStressTest, EveryCallbackRunsExactlyOnceWithTheRightOutcome) {
  std::mt19937 rng(GetParam());
  RecordingBackend backend;
  backend.OomAboveTokens(600);  // batches above 600 tokens run out of memory
  BatcherOptions o;
  o.scheduler.cost_model = CostModel::Sum();
  o.scheduler.max_batch_tokens = 1024;
  o.scheduler.max_batch_size = 1 + rng() % 64;
  o.scheduler.max_wait = std::chrono::microseconds(rng() % 500);
  o.scheduler.policy = static_cast<PackingPolicy>(rng() % 3);
  o.scheduler.max_queue_size = 0;
  o.num_workers = 1 + static_cast<int>(rng() % 3);
  if (rng() % 2 == 0) {  // the workers share the cores (a worker may wait for one)
    o.intra_op = IntraOpOptions{.cores = o.num_workers, .narrow_hold = std::chrono::microseconds(rng() % 2000)};
    o.set_forward_threads = [](int) {};
  }
  auto batcher = std::move(*SumBatcher::Create(o, backend.AsBackend()));

  constexpr int kProducers = 3, kPerProducer = 300;
  std::vector<Record> records(kProducers * kPerProducer);
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p, seed = rng()] {
      std::mt19937 local(seed);
      for (int i = 0; i < kPerProducer; ++i) {
        Record& rec = records[p * kPerProducer + i];
        const int len = 1 + static_cast<int>(local() % 200);
        Tokens t = MakeTokens(len, static_cast<int>(local() % 1000));
        rec.poison = local() % 25 == 0;
        if (rec.poison) t[len / 2] = -1;
        rec.expected = SumOf(t);
        auto id = batcher->Submit(std::move(t), len, {}, [&rec](SumBatcher::Result r) {
          rec.kind = static_cast<int>(GetErrorKind(r.status()));
          if (r.ok()) rec.value = *r;
          rec.calls.fetch_add(1);
        });
        ASSERT_TRUE(id.ok()) << id.status();
        if (local() % 20 == 0) {
          rec.cancel_requested = true;
          batcher->Cancel(*id);
        }
      }
    });
  }
  for (auto& t : producers) t.join();
  batcher->Shutdown(ShutdownMode::kDrain);

  int succeeded = 0;
  for (const Record& rec : records) {
    ASSERT_EQ(rec.calls.load(), 1);
    const auto kind = static_cast<ErrorKind>(rec.kind.load());
    if (rec.cancel_requested && kind == ErrorKind::kCancelled) continue;
    if (rec.poison) {
      EXPECT_EQ(kind, ErrorKind::kBackend);
    } else {
      ASSERT_EQ(kind, ErrorKind::kNone);  // no single request exceeds the OOM threshold
      EXPECT_EQ(rec.value, rec.expected);
      ++succeeded;
    }
  }
  // No backend call exceeded max_batch_size or the budget (sum cost: Σ tokens).
  for (const auto& sizes : backend.batches()) {
    EXPECT_LE(static_cast<std::int64_t>(sizes.size()), o.scheduler.max_batch_size);
    long total = 0;
    for (long s : sizes) total += s;
    EXPECT_LE(total, o.scheduler.max_batch_tokens);
  }
  const MetricsSnapshot m = batcher->metrics();
  EXPECT_EQ(m.requests_succeeded, static_cast<std::uint64_t>(succeeded));
  EXPECT_EQ(m.queue_requests, 0u);
}

INSTANTIATE_TEST_SUITE_P(Seeds, BatcherStressTest, ::testing::Values(1u, 2u, 3u, 4u, 5u, 6u));

}  // namespace
}  // namespace tokenbatch
