// Misbehaving user code and deadlines: throwing callbacks, slicers and merges, a
// merge that calls back into the Batcher, and deadlines that pass while every
// worker is busy or while the request's own batch runs.
#include <stdexcept>

#include <gtest/gtest.h>

#include "runtime/test_backend.h"
#include "testing/wait_until.h"

namespace tokenbatch {
namespace {

using testing::MakeTokens;
using testing::RecordingBackend;
using testing::SumBatcher;
using testing::Tokens;
using testing::kWaitLimit;
using testing::WaitUntil;

BatcherOptions SplitOptions() {
  BatcherOptions o;
  o.scheduler.cost_model = CostModel::Sum();
  o.scheduler.max_batch_tokens = 1000;
  o.scheduler.max_input_tokens = 4;
  o.scheduler.split_overlap_tokens = 0;
  o.scheduler.oversize = OversizePolicy::kSplit;
  o.scheduler.max_wait = std::chrono::milliseconds(0);
  return o;
}

SumBatcher::Slicer Slice() {
  return [](const Tokens& t, TokenWindow w) -> absl::StatusOr<Tokens> {
    return Tokens(t.begin() + w.begin, t.begin() + w.end);
  };
}

TEST(BatcherRobustnessTest, AMergeMayCallBackIntoTheBatcherAndAThrowingMergeFailsOnlyItsRequest) {
  RecordingBackend backend;
  SumBatcher* self = nullptr;
  bool throw_next = false;
  SumBatcher::Hooks hooks{Slice(), [&](std::span<const long> parts, std::span<const TokenWindow>) -> absl::StatusOr<long> {
                            (void)self->metrics();  // would deadlock if the merge ran under the lock
                            if (throw_next) throw std::runtime_error("merge boom");
                            long total = 0;
                            for (long p : parts) total += p;
                            return total;
                          }};
  auto batcher = std::move(*SumBatcher::Create(SplitOptions(), backend.AsBackend(), hooks));
  self = batcher.get();
  auto ok = batcher->Submit(MakeTokens(8), 8)->result.get();  // windows 1..4 and 5..8
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(*ok, 36);
  throw_next = true;
  auto failed = batcher->Submit(MakeTokens(8), 8)->result.get();
  EXPECT_EQ(GetErrorKind(failed.status()), ErrorKind::kBackend);
  EXPECT_NE(failed.status().message().find("merge boom"), std::string_view::npos);
  EXPECT_EQ(batcher->metrics().failures_by_kind["backend"], 1u);
}

TEST(BatcherRobustnessTest, AThrowingSlicerIsARefusalNotACrash) {
  RecordingBackend backend;
  SumBatcher::Hooks hooks{[](const Tokens&, TokenWindow) -> absl::StatusOr<Tokens> { throw std::runtime_error("cut"); },
                          [](std::span<const long>, std::span<const TokenWindow>) -> absl::StatusOr<long> { return 0; }};
  auto batcher = std::move(*SumBatcher::Create(SplitOptions(), backend.AsBackend(), hooks));
  Tokens input = MakeTokens(8);
  auto r = batcher->Submit(std::move(input), 8);
  EXPECT_EQ(GetErrorKind(r.status()), ErrorKind::kInvalidArgument);
  EXPECT_NE(r.status().message().find("cut"), std::string_view::npos);
  EXPECT_EQ(input.size(), 8u);  // still the caller's
}

TEST(BatcherRobustnessTest, ThrowingCallbacksDoNotStopTheWorkerAndEmptyCallbacksAreRefused) {
  RecordingBackend backend;
  BatcherOptions o = SplitOptions();
  o.scheduler.oversize = OversizePolicy::kReject;
  auto batcher = std::move(*SumBatcher::Create(o, backend.AsBackend()));
  EXPECT_EQ(GetErrorKind(batcher->Submit(MakeTokens(1), 1, {}, nullptr).status()), ErrorKind::kInvalidArgument);
  ASSERT_TRUE(batcher->Submit(MakeTokens(1), 1, {}, [](SumBatcher::Result) { throw std::runtime_error("x"); }).ok());
  auto after = batcher->Submit(MakeTokens(2), 2)->result.get();  // the worker is still alive
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(*after, 3);
}

TEST(BatcherRobustnessTest, DeadlinesFireWhileEveryWorkerIsBusyAndWhileTheRequestRuns) {
  // The first request's deadline is set before it is submitted, so it must be
  // long enough for the worker to take it into the backend; a slow worker lets
  // it expire in the queue instead. That outcome is also correct, but tests
  // something else: try again with a longer deadline.
  bool tested = false;
  for (const auto timeout : {std::chrono::milliseconds(20), std::chrono::milliseconds(80),
                             std::chrono::milliseconds(320), std::chrono::milliseconds(1280),
                             std::chrono::milliseconds(5120)}) {
    RecordingBackend backend;
    backend.HoldFirstCall();
    BatcherOptions o = SplitOptions();
    o.scheduler.oversize = OversizePolicy::kReject;
    auto batcher = std::move(*SumBatcher::Create(o, backend.AsBackend()));
    SubmitOptions soon;
    soon.deadline = SteadyClock::now() + timeout;
    auto running = batcher->Submit(MakeTokens(1), 1, soon);  // held inside the backend
    ASSERT_TRUE(running.ok()) << running.status();
    const bool resolved_or_entered = WaitUntil([&] {
      return !backend.batches().empty() || running->result.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
    });
    ASSERT_TRUE(resolved_or_entered);
    if (backend.batches().empty()) {  // resolved before the backend saw it: expired in the queue
      // Released in case its batch was taken just as it expired and reaches the
      // backend only now: the held call would keep the batcher from shutting down.
      backend.Release();
      EXPECT_EQ(GetErrorKind(running->result.get().status()), ErrorKind::kDeadlineExceeded);
      continue;
    }
    soon.deadline = SteadyClock::now() + timeout;
    auto queued = batcher->Submit(MakeTokens(2), 2, soon);  // behind the busy worker
    if (!queued.ok()) backend.Release();  // else the batcher's shutdown waits for the held call
    ASSERT_TRUE(queued.ok()) << queued.status();
    // Both resolve with DeadlineExceeded although the backend call is still held.
    const bool both = running->result.wait_for(kWaitLimit) == std::future_status::ready &&
                      queued->result.wait_for(kWaitLimit) == std::future_status::ready;
    backend.Release();
    ASSERT_TRUE(both) << "a deadline did not fire while the backend call was held";
    EXPECT_EQ(GetErrorKind(running->result.get().status()), ErrorKind::kDeadlineExceeded);
    EXPECT_EQ(GetErrorKind(queued->result.get().status()), ErrorKind::kDeadlineExceeded);
    batcher->Shutdown(ShutdownMode::kDrain);
    EXPECT_EQ(backend.seen_sums().size(), 1u);  // the queued one never ran
    EXPECT_EQ(batcher->metrics().failures_by_kind["deadline_exceeded"], 2u);
    tested = true;
    break;
  }
  EXPECT_TRUE(tested) << "the worker never took the first request before its deadline";
}

}  // namespace
}  // namespace tokenbatch
