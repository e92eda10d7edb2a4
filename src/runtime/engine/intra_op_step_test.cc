// The batch engine with BatcherOptions::intra_op, stepped on a manual clock: the
// threads each forward is given (set_forward_threads) follow the load the
// worker sees, each width has its own latency fit, and bad options are refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "runtime/engine/engine_test_util.h"

namespace tokenbatch::engine::testing {
namespace {

using ::testing::ElementsAre;

BatcherOptions TwoCores(std::vector<int>* widths) {
  BatcherOptions o = SmallOptions();
  o.num_workers = 2;
  o.intra_op = IntraOpOptions{.cores = 2, .narrow_hold = std::chrono::milliseconds(10)};
  o.set_forward_threads = [widths](int threads) { widths->push_back(threads); };
  return o;
}

TEST(IntraOpStepTest, WorkLeftQueuedNarrowsTheForwardsUntilTheHoldPasses) {
  FakeClient client;
  FakeRunner runner;
  std::vector<int> widths;
  auto engine = MakeEngine(TwoCores(&widths), client);
  for (int i = 0; i < 5; ++i) SubmitAt(*engine, runner, Ms(0), 10);
  // A full batch of 4 leaves one request queued behind it: one thread, so that
  // the other core can run the rest.
  WorkerStep step = engine->StepWorker(runner, Ms(0), Ms(1));
  EXPECT_EQ(step.batch.size(), 4u);
  EXPECT_EQ(step.threads, 1);
  // The last one goes at its max_wait, alone but within the hold: still one.
  step = engine->StepWorker(runner, Ms(4), Ms(5));
  EXPECT_EQ(step.batch.size(), 1u);
  EXPECT_EQ(step.threads, 1);
  // Once the hold (10 ms from the sign at 0) has passed, a lone batch gets both cores.
  SubmitAt(*engine, runner, Ms(20), 10);
  step = engine->StepWorker(runner, Ms(24), Ms(25));
  EXPECT_EQ(step.batch.size(), 1u);
  EXPECT_EQ(step.threads, 2);
  EXPECT_THAT(widths, ElementsAre(1, 1, 2));
  EXPECT_EQ(runner.resolutions, 6);
}

TEST(IntraOpStepTest, EachWidthLearnsItsOwnBatchTime) {
  FakeClient client;
  FakeRunner runner;
  std::vector<int> widths;
  auto engine = MakeEngine(TwoCores(&widths), client);
  // Narrow batches (two full ones at once: work queued behind the first, the
  // second within the hold) take 8 ms; wide ones (alone, long after the last
  // sign of load; 1 to 4 requests) take 5 ms.
  double t = 0;
  for (int round = 0; round < 4; ++round) {
    for (int i = 0; i < 8; ++i) SubmitAt(*engine, runner, Ms(t), 10);
    ASSERT_EQ(engine->StepWorker(runner, Ms(t), Ms(t + 8)).threads, 1);
    ASSERT_EQ(engine->StepWorker(runner, Ms(t + 8), Ms(t + 16)).threads, 1);
    t += 100;
    for (int i = 0; i <= round; ++i) SubmitAt(*engine, runner, Ms(t), 10);
    ASSERT_EQ(engine->StepWorker(runner, Ms(t + 4), Ms(t + 9)).threads, 2);
    t += 100;
  }
  const MetricsSnapshot m = engine->metrics();
  ASSERT_EQ(m.learned_latency.size(), 2u);  // narrow, then wide
  EXPECT_NEAR(m.learned_latency[0].PredictUs(40), 8000, 1e-6);
  EXPECT_NEAR(m.learned_latency[1].fixed_us, 5000, 1e-6);
  EXPECT_NEAR(m.learned_latency[1].us_per_cost, 0, 1e-9);
}

TEST(IntraOpStepTest, RefusesOptionsItCannotRun) {
  FakeClient client;
  std::vector<int> widths;
  BatcherOptions o = TwoCores(&widths);
  o.num_workers = 1;
  EXPECT_EQ(BatchEngineImpl::Make(o, client).status().code(), absl::StatusCode::kInvalidArgument);
  o = TwoCores(&widths);
  o.set_forward_threads = nullptr;
  EXPECT_EQ(BatchEngineImpl::Make(o, client).status().code(), absl::StatusCode::kInvalidArgument);
  o = TwoCores(&widths);
  o.intra_op->cores = 0;
  o.num_workers = 0;
  EXPECT_EQ(BatchEngineImpl::Make(o, client).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tokenbatch::engine::testing
