// Shutdown: drain or fail what is queued; nothing is ever left unresolved.
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

}  // namespace
}  // namespace tokenbatch
