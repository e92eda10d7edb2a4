// Shutdown: drain or fail what is queued; nothing is ever left unresolved.
#include <algorithm>
#include <thread>

#include <gtest/gtest.h>

#include "runtime/test_backend.h"

namespace tokenbatch {
namespace {

using testing::MakeTokens;
using testing::RecordingBackend;
using testing::SumBatcher;
using testing::SumOf;

BatcherOptions Options() {
  BatcherOptions o;
  o.scheduler.cost_model = CostModel::Sum();
  o.scheduler.max_batch_tokens = 64;
  o.scheduler.max_wait = std::chrono::seconds(60);  // only fill, drain or shutdown dispatch
  o.scheduler.adaptive_wait = false;
  return o;
}

TEST(BatcherLifecycleTest, DrainRunsEverythingQueued) {
  RecordingBackend backend;
  auto batcher = std::move(*SumBatcher::Create(Options(), backend.AsBackend()));
  std::vector<SumBatcher::Future> futures;
  for (int i = 0; i < 10; ++i) futures.push_back(std::move(batcher->Submit(MakeTokens(2, i), 2)->result));
  // 20 tokens < 0.9 x 64 and max_wait is a minute: nothing runs until the drain.
  batcher->Shutdown(ShutdownMode::kDrain);
  for (int i = 0; i < 10; ++i) {
    auto r = futures[i].get();
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(*r, SumOf(MakeTokens(2, i)));
  }
  EXPECT_EQ(GetErrorKind(batcher->Submit(MakeTokens(1), 1).status()), ErrorKind::kShuttingDown);
  EXPECT_EQ(batcher->metrics().dispatch_reasons["drain"], 1u);
}

TEST(BatcherLifecycleTest, CancelQueuedFailsTheQueueButFinishesTheRunningBatch) {
  RecordingBackend backend;
  backend.HoldFirstCall();
  BatcherOptions o = Options();
  o.scheduler.max_wait = std::chrono::milliseconds(0);
  auto batcher = std::move(*SumBatcher::Create(o, backend.AsBackend()));
  auto running = batcher->Submit(MakeTokens(3), 3);
  backend.WaitUntilEntered();
  std::vector<SumBatcher::Future> queued;
  for (int i = 0; i < 5; ++i) queued.push_back(std::move(batcher->Submit(MakeTokens(2), 2)->result));
  std::thread stopper([&] { batcher->Shutdown(ShutdownMode::kCancelQueued); });
  for (auto& f : queued) EXPECT_EQ(GetErrorKind(f.get().status()), ErrorKind::kShuttingDown);
  backend.Release();
  stopper.join();
  auto r = running->result.get();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 6);
  EXPECT_EQ(backend.batches().size(), 1u);
}

TEST(BatcherLifecycleTest, DestructorResolvesEveryFuture) {
  RecordingBackend backend;
  std::vector<SumBatcher::Future> futures;
  {
    BatcherOptions o = Options();
    o.shutdown_on_destroy = ShutdownMode::kCancelQueued;
    auto batcher = std::move(*SumBatcher::Create(o, backend.AsBackend()));
    for (int i = 0; i < 4; ++i) futures.push_back(std::move(batcher->Submit(MakeTokens(1), 1)->result));
  }
  for (auto& f : futures) {
    ASSERT_EQ(f.wait_for(std::chrono::seconds(0)), std::future_status::ready);
    EXPECT_EQ(GetErrorKind(f.get().status()), ErrorKind::kShuttingDown);
  }
}

TEST(BatcherLifecycleTest, ShutdownIsIdempotent) {
  RecordingBackend backend;
  auto batcher = std::move(*SumBatcher::Create(Options(), backend.AsBackend()));
  batcher->Shutdown(ShutdownMode::kDrain);
  batcher->Shutdown(ShutdownMode::kCancelQueued);
  EXPECT_EQ(GetErrorKind(batcher->Submit(MakeTokens(1), 1).status()), ErrorKind::kShuttingDown);
}

// More live requests than one chunk of the payload table (1,024 slots) while the
// worker runs: the table grows under load, every result is the request's own,
// and a second wave reuses the freed slots just as correctly.
TEST(BatcherLifecycleTest, ThousandsOfLiveRequestsSpanSeveralPayloadChunks) {
  RecordingBackend backend;
  backend.HoldFirstCall();
  BatcherOptions o = Options();
  o.scheduler.max_wait = std::chrono::milliseconds(1);
  auto batcher = std::move(*SumBatcher::Create(o, backend.AsBackend()));
  for (int wave = 0; wave < 2; ++wave) {
    std::vector<SumBatcher::Future> futures;
    for (int i = 0; i < 3000; ++i) futures.push_back(std::move(batcher->Submit(MakeTokens(3, i + wave), 3)->result));
    if (wave == 0) {
      backend.WaitUntilEntered();  // the first batch is running, the rest are live and queued
      backend.Release();
    }
    for (int i = 0; i < 3000; ++i) {
      auto r = futures[i].get();
      ASSERT_TRUE(r.ok()) << r.status();
      ASSERT_EQ(*r, SumOf(MakeTokens(3, i + wave))) << "wave " << wave << ", request " << i;
    }
  }
  EXPECT_EQ(batcher->metrics().requests_succeeded, 6000u);
}

// A split request cancelled while its first window runs: answered once with
// Cancelled, its queued windows never run, its running one's output is dropped,
// the merge never runs, and requests that reuse its slots get their own results.
TEST(BatcherLifecycleTest, CancellingASplitRequestMidwayAnswersOnceAndItsSlotsStartClean) {
  RecordingBackend backend;
  backend.HoldFirstCall();
  BatcherOptions o = Options();
  o.scheduler.max_batch_size = 1;
  o.scheduler.max_input_tokens = 4;
  o.scheduler.oversize = OversizePolicy::kSplit;
  o.scheduler.split_overlap_tokens = 0;
  int merges = 0;
  SumBatcher::Hooks hooks{[](const testing::Tokens& t, TokenWindow w) -> absl::StatusOr<testing::Tokens> {
                            return testing::Tokens(t.begin() + w.begin, t.begin() + w.end);
                          },
                          [&](std::span<const long> parts, std::span<const TokenWindow>) -> absl::StatusOr<long> {
                            ++merges;
                            long total = 0;
                            for (long p : parts) total += p;
                            return total;
                          }};
  auto batcher = std::move(*SumBatcher::Create(o, backend.AsBackend(), hooks));
  auto split = batcher->Submit(MakeTokens(12), 12);  // windows [0,4) [4,8) [8,12)
  ASSERT_TRUE(split.ok());
  backend.WaitUntilEntered();
  EXPECT_TRUE(batcher->Cancel(split->id));
  EXPECT_FALSE(batcher->Cancel(split->id));
  EXPECT_EQ(GetErrorKind(split->result.get().status()), ErrorKind::kCancelled);
  backend.Release();
  std::vector<SumBatcher::Future> after;
  for (int i = 0; i < 8; ++i) after.push_back(std::move(batcher->Submit(MakeTokens(4, 100 * i), 4)->result));
  auto whole = batcher->Submit(MakeTokens(12, 1000), 12);
  batcher->Shutdown(ShutdownMode::kDrain);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(*after[i].get(), SumOf(MakeTokens(4, 100 * i)));
  EXPECT_EQ(*whole->result.get(), SumOf(MakeTokens(12, 1000)));
  EXPECT_EQ(merges, 1);  // the later split only
  const std::vector<long> seen = backend.seen_sums();
  EXPECT_EQ(seen.front(), SumOf(MakeTokens(4)));  // the cancelled request's first window ran
  EXPECT_EQ(std::count(seen.begin(), seen.end(), SumOf(MakeTokens(4, 5))), 0);  // its second never did
}

TEST(BatcherLifecycleTest, DeferredStartChoosesTheFirstBatchFromTheWholeBurst) {
  // Three passages of 20 tokens, then three queries of 2. Submitted to running
  // workers, the first passage could be dispatched alone before the queries
  // arrive; with defer_start the length-aware core sees all six at once and
  // serves the queries first: their virtual deadlines, arrival + 10 ms × tokens,
  // come 180 ms before the passages', far more than the submits take even under
  // a sanitizer.
  RecordingBackend backend;
  BatcherOptions o;
  o.scheduler.policy = PackingPolicy::kLengthAware;
  o.scheduler.anchor_slack_per_token = std::chrono::milliseconds(10);
  o.scheduler.cost_model = CostModel::Padded();
  o.scheduler.max_batch_tokens = 64;
  o.scheduler.max_wait = std::chrono::milliseconds(0);
  o.scheduler.adaptive_wait = false;
  o.defer_start = true;
  auto batcher = std::move(*SumBatcher::Create(o, backend.AsBackend()));
  std::vector<SumBatcher::Future> futures;
  for (int i = 0; i < 3; ++i) futures.push_back(std::move(batcher->Submit(MakeTokens(20), 20)->result));
  for (int i = 0; i < 3; ++i) futures.push_back(std::move(batcher->Submit(MakeTokens(2), 2)->result));
  EXPECT_TRUE(backend.batches().empty());  // no worker runs before Start
  batcher->Start();
  batcher->Start();  // idempotent
  for (auto& f : futures) ASSERT_TRUE(f.get().ok());
  batcher->Shutdown(ShutdownMode::kDrain);
  const std::vector<std::vector<long>> batches = backend.batches();
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[0], (std::vector<long>{2, 2, 2}));
  EXPECT_EQ(batches[1], (std::vector<long>{20, 20, 20}));
}

TEST(BatcherLifecycleTest, DeferredStartCancelsOnShutdownWithoutStart) {
  RecordingBackend backend;
  BatcherOptions o = Options();
  o.scheduler.max_wait = std::chrono::milliseconds(0);  // a started worker would run them at once
  o.defer_start = true;
  auto batcher = std::move(*SumBatcher::Create(o, backend.AsBackend()));
  std::vector<SumBatcher::Future> futures;
  for (int i = 0; i < 3; ++i) futures.push_back(std::move(batcher->Submit(MakeTokens(2), 2)->result));
  batcher->Shutdown(ShutdownMode::kCancelQueued);
  for (auto& f : futures) EXPECT_EQ(GetErrorKind(f.get().status()), ErrorKind::kShuttingDown);
  batcher->Start();  // after Shutdown: nothing starts
  EXPECT_TRUE(backend.batches().empty());
}

TEST(BatcherLifecycleTest, DeferredStartDrainsOnShutdownWithoutStart) {
  RecordingBackend backend;
  BatcherOptions o = Options();
  o.defer_start = true;
  auto batcher = std::move(*SumBatcher::Create(o, backend.AsBackend()));
  std::vector<SumBatcher::Future> futures;
  for (int i = 0; i < 3; ++i) futures.push_back(std::move(batcher->Submit(MakeTokens(2, i), 2)->result));
  batcher->Shutdown(ShutdownMode::kDrain);
  for (int i = 0; i < 3; ++i) {
    auto r = futures[static_cast<std::size_t>(i)].get();
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(*r, SumOf(MakeTokens(2, i)));
  }
}

}  // namespace
}  // namespace tokenbatch
