// The batch engine's deadline step, driven by a manual clock: a deadline expires
// strictly after it passes, whether the request is queued or running, and a late
// result is dropped; the worker expires queued requests itself when it decides.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/engine/engine_test_util.h"

namespace tokenbatch::engine::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(DeadlineStepTest, AQueuedRequestExpiresStrictlyAfterItsDeadline) {
  FakeClient client;
  FakeRunner runner;
  auto engine = MakeEngine(SmallOptions(), client);
  const RequestId r = SubmitPlannedAt(*engine, runner, Ms(0), {{0, 10}}, {0, Ms(2)});
  const RequestId other = SubmitAt(*engine, runner, Ms(0), 10);
  EXPECT_EQ(engine->StepDeadlines(runner, Ms(2)), 0u);
  EXPECT_EQ(runner.outcomes.count(r), 0u);
  EXPECT_EQ(engine->StepDeadlines(runner, Ms(2) + Duration(1)), 1u);
  EXPECT_EQ(GetErrorKind(runner.StatusOf(r)), ErrorKind::kDeadlineExceeded);
  EXPECT_TRUE(runner.outcomes.at(r).fired);
  // The expired request left the queue: the next batch holds only the other one.
  EXPECT_THAT(engine->StepWorker(runner, Ms(4)).batch, ElementsAre(other));
  EXPECT_EQ(runner.resolutions, 2);
}

TEST(DeadlineStepTest, ADeadlinePassingDuringTheRunAnswersAtOnceAndDropsTheResult) {
  FakeClient client;
  FakeRunner runner;
  FakeRunner deadline_thread;
  auto engine = MakeEngine(SmallOptions(), client);
  const RequestId r = SubmitPlannedAt(*engine, runner, Ms(0), {{0, 10}}, {0, Ms(6)});
  runner.rule = [&](std::span<const RequestId>, std::span<absl::Status>, auto, IsolationReport&) {
    EXPECT_EQ(engine->StepDeadlines(deadline_thread, Ms(7)), 1u);  // while the model runs
  };
  EXPECT_THAT(engine->StepWorker(runner, Ms(4)).batch, ElementsAre(r));
  EXPECT_EQ(GetErrorKind(deadline_thread.StatusOf(r)), ErrorKind::kDeadlineExceeded);
  EXPECT_EQ(runner.outcomes.count(r), 0u);
  EXPECT_EQ(engine->metrics().failures_by_kind["deadline_exceeded"], 1u);
  EXPECT_EQ(engine->metrics().requests_succeeded, 0u);
}

TEST(DeadlineStepTest, AResultThatCompletesAfterTheDeadlineIsNotDelivered) {
  FakeClient client;
  FakeRunner runner;
  auto engine = MakeEngine(SmallOptions(), client);
  const RequestId in_time = SubmitPlannedAt(*engine, runner, Ms(0), {{0, 10}}, {0, Ms(6)});
  EXPECT_THAT(engine->StepWorker(runner, Ms(4), Ms(6)).batch, ElementsAre(in_time));  // done at the deadline
  EXPECT_TRUE(runner.StatusOf(in_time).ok());
  // Dispatched in time, done after the deadline, before the deadline thread ran.
  const RequestId late = SubmitPlannedAt(*engine, runner, Ms(10), {{0, 10}}, {0, Ms(16)});
  EXPECT_THAT(engine->StepWorker(runner, Ms(14), Ms(17)).batch, ElementsAre(late));
  EXPECT_EQ(GetErrorKind(runner.StatusOf(late)), ErrorKind::kDeadlineExceeded);
  EXPECT_EQ(engine->StepDeadlines(runner, Ms(18)), 0u);  // already resolved: not twice
  EXPECT_EQ(runner.resolutions, 2);
}

TEST(DeadlineStepTest, TheWorkerExpiresQueuedRequestsWhenItDecides) {
  FakeClient client;
  FakeRunner runner;
  auto engine = MakeEngine(SmallOptions(), client);
  const RequestId r = SubmitPlannedAt(*engine, runner, Ms(0), {{0, 10}}, {0, Ms(2)});
  const WorkerStep step = engine->StepWorker(runner, Ms(3));
  EXPECT_THAT(step.batch, IsEmpty());
  EXPECT_EQ(step.expired, 1u);
  EXPECT_EQ(GetErrorKind(runner.StatusOf(r)), ErrorKind::kDeadlineExceeded);
  EXPECT_EQ(engine->StepDeadlines(runner, Ms(3)), 0u);  // its deadline entry went with it
  EXPECT_EQ(runner.resolutions, 1);
}

// Completions owed when the worker has taken its next batch are fired with
// CallbackDelaysNextBatch() true; those fired when it has nothing to run, false.
TEST(DeadlineStepTest, ExpiriesFiredBeforeABatchSayTheBatchWaits) {
  FakeClient client;
  FakeRunner runner;
  auto engine = MakeEngine(SmallOptions(), client);
  const RequestId expired = SubmitPlannedAt(*engine, runner, Ms(0), {{0, 10}}, {0, Ms(2)});
  const RequestId runs = SubmitAt(*engine, runner, Ms(1), 10);
  const WorkerStep step = engine->StepWorker(runner, Ms(5));
  EXPECT_THAT(step.batch, ElementsAre(runs));
  EXPECT_EQ(step.expired, 1u);
  EXPECT_TRUE(runner.outcomes.at(expired).fired_before_batch);
  EXPECT_FALSE(runner.outcomes.at(runs).fired_before_batch);
  EXPECT_FALSE(CallbackDelaysNextBatch());  // not on this thread outside Fire
}

TEST(DeadlineStepTest, ASplitRequestExpiresOnceWithAllItsWindows) {
  FakeClient client;
  FakeRunner runner;
  auto engine = MakeEngine(SmallOptions(), client);
  std::vector<RequestId> windows;
  const RequestId r = SubmitPlannedAt(*engine, runner, Ms(0), {{0, 60}, {50, 110}}, {0, Ms(1)}, &windows);
  ASSERT_EQ(windows.size(), 2u);
  EXPECT_EQ(engine->StepDeadlines(runner, Ms(2)), 1u);
  EXPECT_EQ(GetErrorKind(runner.StatusOf(r)), ErrorKind::kDeadlineExceeded);
  EXPECT_THAT(engine->StepWorker(runner, Ms(10)).batch, IsEmpty());
  EXPECT_EQ(engine->metrics().queue_requests, 0u);
  EXPECT_EQ(runner.resolutions, 1);
}

}  // namespace
}  // namespace tokenbatch::engine::testing
