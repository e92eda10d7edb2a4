// The batch engine's worker step, driven by a manual clock and a fake runner: the
// batches it forms at each step, what it resolves, failure isolation and AIMD,
// cancellation before and during a run, and both shutdown modes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/engine/engine_test_util.h"

namespace tokenbatch::engine::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(WorkerStepTest, APartialBatchWaitsOutMaxWaitThenRunsInArrivalOrder) {
  FakeClient client;
  FakeRunner runner;
  auto engine = MakeEngine(SmallOptions(), client);
  const RequestId a = SubmitAt(*engine, runner, Ms(0), 10);
  const RequestId b = SubmitAt(*engine, runner, Ms(1), 20);
  WorkerStep step = engine->StepWorker(runner, Ms(1));
  EXPECT_THAT(step.batch, IsEmpty());
  EXPECT_EQ(step.wake_at, Ms(4));  // the oldest request's window
  step = engine->StepWorker(runner, Ms(3.9));
  EXPECT_THAT(step.batch, IsEmpty());
  step = engine->StepWorker(runner, Ms(4));
  EXPECT_THAT(step.batch, ElementsAre(a, b));
  EXPECT_EQ(runner.outcomes.at(a).output, 10);
  EXPECT_EQ(runner.outcomes.at(b).output, 20);
  EXPECT_TRUE(runner.outcomes.at(a).fired && runner.outcomes.at(b).fired);
  step = engine->StepWorker(runner, Ms(5));
  EXPECT_THAT(step.batch, IsEmpty());
  EXPECT_FALSE(step.wake_at.has_value());  // queue empty
  EXPECT_EQ(runner.resolutions, 2);
  EXPECT_THAT(client.cleared, ElementsAre(a, b));  // each payload dropped once, when freed
}

// The worker learns each batch's run time (on the manual clock, done_at - now)
// and passes the model to the core. Before it has learned, a request waits out
// max_wait. After four batches that each took 20 ms whatever their size, five
// requests arriving 100 µs apart are held for company, until g / n = 20 ms / 5
// after the last arrival (well before max_wait); after four batches that took
// no time, they go at once (waiting gains nothing).
TEST(WorkerStepTest, TheLearnedBatchTimeDecidesWhetherABatchWaits) {
  for (const double batch_ms : {20.0, 0.0}) {
    FakeClient client;
    FakeRunner runner;
    BatcherOptions options = SmallOptions();
    options.scheduler.max_batch_size = 8;
    options.scheduler.max_wait = std::chrono::milliseconds(50);
    options.scheduler.arrival_rate_window = std::chrono::milliseconds(10);
    auto engine = MakeEngine(options, client);
    double t = 0;
    for (int size = 1; size <= 4; ++size) {  // costs 10-40: the fit can tell fixed from per-token time
      for (int i = 0; i < size; ++i) SubmitAt(*engine, runner, Ms(t), 10);
      WorkerStep step = engine->StepWorker(runner, Ms(t));
      EXPECT_THAT(step.batch, IsEmpty()) << "not learned yet: the fixed window";
      EXPECT_EQ(step.wake_at, Ms(t + 50));
      step = engine->StepWorker(runner, Ms(t + 50), Ms(t + 50 + batch_ms));
      EXPECT_EQ(step.batch.size(), static_cast<std::size_t>(size));
      t += 50 + batch_ms + 100;  // long enough for the arrival rate to forget these
    }
    const MetricsSnapshot m = engine->metrics();
    ASSERT_EQ(m.learned_latency.size(), 1u);
    EXPECT_NEAR(m.learned_latency[0].fixed_us, batch_ms * 1000, 1e-6);
    EXPECT_NEAR(m.learned_latency[0].us_per_cost, 0, 1e-9);

    for (int i = 0; i < 5; ++i) SubmitAt(*engine, runner, Ms(t + 0.1 * i), 10);
    const double last = t + 0.4;
    const WorkerStep step = engine->StepWorker(runner, Ms(last));
    if (batch_ms > 0) {
      EXPECT_THAT(step.batch, IsEmpty());
      ASSERT_TRUE(step.wake_at.has_value());
      const double held_us = std::chrono::duration<double, std::micro>(*step.wake_at - Ms(last)).count();
      EXPECT_NEAR(held_us, 4000, 1);
    } else {
      EXPECT_EQ(step.batch.size(), 5u);
      EXPECT_EQ(engine->metrics().dispatch_reasons.at("no_gain_in_waiting"), 1u);
    }
  }
}

// A batch in which an input failed may have stopped early: its time says
// nothing of its shape, so the fit does not learn it. The same batches
// succeeding are learned (the test above).
TEST(WorkerStepTest, FailedBatchesAreNotLearned) {
  FakeClient client;
  FakeRunner runner;
  runner.rule = [](std::span<const RequestId>, std::span<absl::Status> statuses, auto, IsolationReport&) {
    statuses.back() = absl::InternalError("backend failed");
  };
  BatcherOptions options = SmallOptions();
  options.scheduler.max_batch_size = 8;
  auto engine = MakeEngine(options, client);
  double t = 0;
  // Lone requests (a failed batch of several would be bisected, and a bisected
  // batch is not learned either), of different lengths, 2.5 to 15 ms each.
  for (int i = 1; i <= 6; ++i) {
    SubmitAt(*engine, runner, Ms(t), 10 * i);
    const WorkerStep step = engine->StepWorker(runner, Ms(t + 4), Ms(t + 4 + 2.5 * i));
    EXPECT_EQ(step.batch.size(), 1u);
    t += 200;
  }
  int failed = 0;
  for (const auto& [id, outcome] : runner.outcomes) failed += outcome.status.ok() ? 0 : 1;
  EXPECT_EQ(failed, 6);
  const MetricsSnapshot m = engine->metrics();
  ASSERT_EQ(m.learned_latency.size(), 1u);
  EXPECT_EQ(m.learned_latency[0].fixed_us, 0);  // not ready: nothing learned
  EXPECT_EQ(m.learned_latency[0].us_per_cost, 0);
}

TEST(WorkerStepTest, AFullBatchGoesAtOnceAndTheRestWaits) {
  FakeClient client;
  FakeRunner runner;
  auto engine = MakeEngine(SmallOptions(), client);
  std::vector<RequestId> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(SubmitAt(*engine, runner, Ms(0), 30));
  // 30 + 30 + 30 = 90: a fourth would exceed the 100-token budget.
  WorkerStep step = engine->StepWorker(runner, Ms(0));
  EXPECT_THAT(step.batch, ElementsAre(ids[0], ids[1], ids[2]));
  step = engine->StepWorker(runner, Ms(0));
  EXPECT_THAT(step.batch, IsEmpty());
  EXPECT_EQ(step.wake_at, Ms(4));
  step = engine->StepWorker(runner, Ms(4));
  EXPECT_THAT(step.batch, ElementsAre(ids[3], ids[4]));
  EXPECT_EQ(engine->metrics().requests_succeeded, 5u);
}

TEST(WorkerStepTest, OnlyTheFailingRequestFailsAndOomShrinksTheBudgetOncePerBatch) {
  FakeClient client;
  FakeRunner runner;
  auto engine = MakeEngine(SmallOptions(), client);
  std::vector<RequestId> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(SubmitAt(*engine, runner, Ms(0), 10));
  // The runner reports two OOMs for the batch (as a bisection would) and fails one input.
  runner.rule = [&](std::span<const RequestId> batch, std::span<absl::Status> statuses, auto on_oom,
                    IsolationReport& report) {
    on_oom(0, batch.size());
    on_oom(0, 2);
    report.oom_events = 2;
    statuses[2] = OutOfMemoryError("input 2 alone does not fit");
  };
  const WorkerStep step = engine->StepWorker(runner, Ms(0));
  ASSERT_THAT(step.batch, ElementsAre(ids[0], ids[1], ids[2], ids[3]));
  EXPECT_TRUE(runner.StatusOf(ids[0]).ok());
  EXPECT_TRUE(IsOutOfMemory(runner.StatusOf(ids[2])));
  EXPECT_TRUE(runner.StatusOf(ids[3]).ok());
  EXPECT_LT(engine->effective_budget(), 100);
  EXPECT_GE(engine->effective_budget(), 20);  // one cut from the batch's cost, not two
  EXPECT_EQ(engine->metrics().failures_by_kind["out_of_memory"], 1u);
}

TEST(WorkerStepTest, ACancelledRequestIsNeverRunAndARunningOneIsDropped) {
  FakeClient client;
  FakeRunner runner;
  auto engine = MakeEngine(SmallOptions(), client);
  const RequestId queued = SubmitAt(*engine, runner, Ms(0), 10);
  const RequestId running = SubmitAt(*engine, runner, Ms(0), 10);
  EXPECT_TRUE(engine->Cancel(queued, runner));
  EXPECT_EQ(GetErrorKind(runner.StatusOf(queued)), ErrorKind::kCancelled);
  FakeRunner canceller;
  // Cancelled by another thread while its batch runs: answered now, result dropped.
  runner.rule = [&](std::span<const RequestId>, std::span<absl::Status>, auto, IsolationReport&) {
    EXPECT_TRUE(engine->Cancel(running, canceller));
  };
  const WorkerStep step = engine->StepWorker(runner, Ms(4));
  EXPECT_THAT(step.batch, ElementsAre(running));
  EXPECT_EQ(GetErrorKind(canceller.StatusOf(running)), ErrorKind::kCancelled);
  EXPECT_EQ(runner.outcomes.count(running), 0u);  // the run's output was not delivered
  EXPECT_FALSE(engine->Cancel(running, canceller));
  EXPECT_EQ(runner.resolutions + canceller.resolutions, 2);
}

TEST(WorkerStepTest, HigherPriorityRunsFirst) {
  FakeClient client;
  FakeRunner runner;
  BatcherOptions o = SmallOptions();
  o.scheduler.max_batch_size = 1;
  auto engine = MakeEngine(o, client);
  const RequestId low = SubmitAt(*engine, runner, Ms(0), 10, 0);
  const RequestId high = SubmitAt(*engine, runner, Ms(1), 10, 5);
  EXPECT_THAT(engine->StepWorker(runner, Ms(1)).batch, ElementsAre(high));
  EXPECT_THAT(engine->StepWorker(runner, Ms(1)).batch, ElementsAre(low));
}

TEST(WorkerStepTest, DrainShutdownRunsWhatIsQueuedWithoutWaitingThenStops) {
  FakeClient client;
  FakeRunner runner;
  auto engine = MakeEngine(SmallOptions(), client);
  const RequestId a = SubmitAt(*engine, runner, Ms(0), 10);
  engine->Shutdown(ShutdownMode::kDrain, runner);
  EXPECT_EQ(SubmitAt(*engine, runner, Ms(0), 10), 0u);  // refused: shutting down
  WorkerStep step = engine->StepWorker(runner, Ms(0));  // no max_wait while draining
  EXPECT_THAT(step.batch, ElementsAre(a));
  step = engine->StepWorker(runner, Ms(0));
  EXPECT_TRUE(step.stop);
  EXPECT_TRUE(runner.StatusOf(a).ok());
}

TEST(WorkerStepTest, CancelShutdownAnswersEveryQueuedRequestOnce) {
  FakeClient client;
  FakeRunner runner;
  auto engine = MakeEngine(SmallOptions(), client);
  const RequestId a = SubmitAt(*engine, runner, Ms(0), 10);
  std::vector<RequestId> windows;
  const RequestId b = SubmitPlannedAt(*engine, runner, Ms(0), {{0, 50}, {40, 90}, {80, 120}}, {}, &windows);
  ASSERT_EQ(windows.size(), 3u);
  engine->Shutdown(ShutdownMode::kCancelQueued, runner);
  EXPECT_EQ(GetErrorKind(runner.StatusOf(a)), ErrorKind::kShuttingDown);
  EXPECT_EQ(GetErrorKind(runner.StatusOf(b)), ErrorKind::kShuttingDown);
  EXPECT_EQ(runner.resolutions, 2);
  EXPECT_TRUE(engine->StepWorker(runner, Ms(0)).stop);
  EXPECT_EQ(engine->metrics().queue_requests, 0u);
}

TEST(WorkerStepTest, ASplitRequestIsMergedWhenItsLastWindowCompletes) {
  FakeClient client;
  FakeRunner runner;
  BatcherOptions o = SmallOptions();
  o.scheduler.max_batch_size = 2;
  auto engine = MakeEngine(o, client);
  std::vector<RequestId> windows;
  const RequestId r = SubmitPlannedAt(*engine, runner, Ms(0), {{0, 30}, {20, 50}, {40, 60}}, {}, &windows);
  ASSERT_EQ(windows.size(), 3u);
  EXPECT_THAT(engine->StepWorker(runner, Ms(0)).batch, ElementsAre(windows[0], windows[1]));
  EXPECT_EQ(runner.outcomes.count(r), 0u);  // one window still to run
  EXPECT_THAT(engine->StepWorker(runner, Ms(4)).batch, ElementsAre(windows[2]));
  ASSERT_TRUE(runner.StatusOf(r).ok());
  EXPECT_EQ(runner.outcomes.at(r).output, 30 + 30 + 20);
  EXPECT_THAT(runner.outcomes.at(r).windows, ElementsAre(TokenWindow{0, 30}, TokenWindow{20, 50}, TokenWindow{40, 60}));
  EXPECT_EQ(runner.resolutions, 1);
}

TEST(WorkerStepTest, AFailedWindowFailsItsRequestAndTakesTheOtherWindowsOutOfTheQueue) {
  FakeClient client;
  FakeRunner runner;
  BatcherOptions o = SmallOptions();
  o.scheduler.max_batch_size = 1;
  auto engine = MakeEngine(o, client);
  std::vector<RequestId> windows;
  const RequestId r = SubmitPlannedAt(*engine, runner, Ms(0), {{0, 30}, {20, 50}}, {}, &windows);
  runner.rule = [](std::span<const RequestId>, std::span<absl::Status> statuses, auto, IsolationReport&) {
    statuses[0] = BackendError("window failed");
  };
  EXPECT_THAT(engine->StepWorker(runner, Ms(0)).batch, ElementsAre(windows[0]));
  EXPECT_EQ(GetErrorKind(runner.StatusOf(r)), ErrorKind::kBackend);
  EXPECT_THAT(engine->StepWorker(runner, Ms(10)).batch, IsEmpty());  // the second window is gone
  EXPECT_EQ(engine->metrics().queue_requests, 0u);
  EXPECT_EQ(runner.resolutions, 1);
}

}  // namespace
}  // namespace tokenbatch::engine::testing
