// The engine's intake on its own: admission against the published queue size,
// refusals that leave nothing behind, the hand-over to the worker in arrival
// order, slot growth and reuse, planned requests' records; and, through the
// engine with a manual clock, what the hand-over means for the batches.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/engine/engine_test_util.h"
#include "runtime/engine/intake.h"

namespace tokenbatch::engine::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

class IntakeTest : public ::testing::Test {
 protected:
  IntakeTest() {
    options_.cost_model = CostModel::Sum();
    options_.max_batch_tokens = 100;
    options_.max_queue_size = 3;
    options_.max_queued_tokens = 1000;
    scheduler_ = std::move(*Scheduler::Create(options_));
  }
  absl::StatusOr<RequestId> Submit(std::int64_t tokens, TimePoint now, int* filled) {
    bool wake = false;
    return intake_.Submit(
        tokens, 0, now, [&](RequestId) { ++*filled; }, &wake);
  }

  SchedulerOptions options_;
  FakeClient client_;
  Intake intake_{options_, client_};
  std::unique_ptr<Scheduler> scheduler_;
  Mutex engine_mu_;
  std::vector<RequestId> released_;
};

TEST_F(IntakeTest, AcceptsUpToTheQueueLimitAndRefusesWithoutSideEffects) {
  int filled = 0;
  std::vector<RequestId> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(*Submit(10, Ms(i), &filled));
  absl::StatusOr<RequestId> refused = Submit(10, Ms(3), &filled);
  EXPECT_EQ(GetErrorKind(refused.status()), ErrorKind::kQueueFull);
  EXPECT_EQ(filled, 3);  // the refused one's payload was never written
  EXPECT_EQ(intake_.counts().requests, 3u);
  EXPECT_EQ(intake_.counts().submitted, 3u);
  EXPECT_THAT(client_.grown_to, ElementsAre(RequestSlab<EngineRecord>::kChunkSize));  // one chunk, once
  const EngineRecord& r = intake_.Get(ids[1]);
  EXPECT_EQ(r.tokens, 10);
  EXPECT_EQ(r.arrival, Ms(1));
  EXPECT_EQ(r.stage, Stage::kQueued);
}

TEST_F(IntakeTest, TakenRequestsCountAsQueuedUntilTheSchedulerHasThemAndLeaves) {
  int filled = 0;
  const RequestId a = *Submit(10, Ms(0), &filled);
  const RequestId b = *Submit(20, Ms(1), &filled);
  std::vector<RequestId> taken;
  {
    MutexLock lock(&engine_mu_);
    intake_.TakeAllLocked(engine_mu_, *scheduler_, released_, taken);
  }
  EXPECT_THAT(taken, ElementsAre(a, b));  // arrival order
  EXPECT_EQ(intake_.counts().requests, 0u);
  // Still counted (settling): 2 + 1 = 3 fits, a fourth does not.
  EXPECT_TRUE(Submit(10, Ms(2), &filled).ok());
  EXPECT_FALSE(Submit(10, Ms(2), &filled).ok());
  // Once published from an empty Scheduler (as after a dispatch), there is room again.
  {
    MutexLock lock(&engine_mu_);
    EXPECT_FALSE(intake_.PublishLocked(engine_mu_, *scheduler_, released_));  // nobody sleeps
  }
  EXPECT_TRUE(Submit(10, Ms(3), &filled).ok());
}

TEST_F(IntakeTest, AReleasedSlotIsReusedUnderANewId) {
  int filled = 0;
  const RequestId a = *Submit(10, Ms(0), &filled);
  std::vector<RequestId> taken;
  {
    MutexLock lock(&engine_mu_);
    intake_.TakeAllLocked(engine_mu_, *scheduler_, released_, taken);
    intake_.Get(a) = EngineRecord{};
    released_.push_back(a);
    (void)intake_.PublishLocked(engine_mu_, *scheduler_, released_);
  }
  EXPECT_THAT(released_, IsEmpty());
  const RequestId b = *Submit(10, Ms(1), &filled);
  EXPECT_NE(a, b);
  EXPECT_EQ(RequestSlot(a), RequestSlot(b));
  EXPECT_FALSE(intake_.IsLiveRequest(a));
  EXPECT_TRUE(intake_.IsLiveRequest(b));
}

TEST_F(IntakeTest, APlannedSplitRequestTakesOneRecordPerWindowPlusItself) {
  std::vector<RequestId> scheduled;
  bool wake = false;
  MutexLock lock(&engine_mu_);
  const std::vector<TokenWindow> windows{{0, 50}, {40, 90}};
  absl::StatusOr<RequestId> request = intake_.AllocatePlannedLocked(engine_mu_, windows, 0, Ms(0), scheduled, &wake);
  ASSERT_TRUE(request.ok());
  ASSERT_EQ(scheduled.size(), 2u);
  EXPECT_NE(scheduled[0], *request);
  // The queue limit counts windows: two more windows would make 4 > 3.
  std::vector<RequestId> more;
  EXPECT_EQ(GetErrorKind(intake_.AllocatePlannedLocked(engine_mu_, windows, 0, Ms(0), more, &wake).status()),
            ErrorKind::kQueueFull);
  // Nothing was taken by the refusal: one window still fits, in the very next slot.
  const RequestId next = *intake_.AllocatePlannedLocked(engine_mu_, {{TokenWindow{0, 5}}}, 0, Ms(0), more, &wake);
  EXPECT_EQ(RequestSlot(next), RequestSlot(scheduled[1]) + 1);
  EXPECT_THAT(more, ElementsAre(next));
  intake_.Close();
  EXPECT_EQ(
      GetErrorKind(intake_.AllocatePlannedLocked(engine_mu_, {{TokenWindow{0, 1}}}, 0, Ms(0), more, &wake).status()),
      ErrorKind::kShuttingDown);
}

// Through the engine: a request that arrives while the worker decides is in the
// very next decision, and fills the batch together with what was queued.
TEST(IntakeHandOverTest, ArrivalsJoinTheQueuedRequestsAtTheNextDecision) {
  FakeClient client;
  FakeRunner runner;
  auto engine = MakeEngine(SmallOptions(), client);
  const RequestId a = SubmitAt(*engine, runner, Ms(0), 40);
  EXPECT_THAT(engine->StepWorker(runner, Ms(0)).batch, IsEmpty());
  const RequestId b = SubmitAt(*engine, runner, Ms(1), 40);
  const RequestId c = SubmitAt(*engine, runner, Ms(1), 30);  // 110: over the 100-token budget
  EXPECT_THAT(engine->StepWorker(runner, Ms(1)).batch, ElementsAre(a, b));
  EXPECT_EQ(engine->metrics().dispatch_reasons["budget_full"], 1u);
  EXPECT_THAT(engine->StepWorker(runner, Ms(5)).batch, ElementsAre(c));  // its own window
}

}  // namespace
}  // namespace tokenbatch::engine::testing
