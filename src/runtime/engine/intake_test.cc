// The engine's intake on its own: admission against the published queue size,
// refusals that leave nothing behind, the hand-over to the worker in arrival
// order, slot growth and reuse, planned requests' records, which sleeping
// worker a wake-up reaches; and, through the engine with a manual clock, what
// the hand-over means for the batches.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

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

// Worker 0 runs the wide forwards (worker_loop.cc), so a wake-up goes to it
// while it sleeps, the next one to another sleeper; WakeFirst reaches worker 0
// only, and at its next sleep if it is awake.
TEST_F(IntakeTest, WakeUpsPreferWorkerZeroAndWakeFirstReachesOnlyIt) {
  std::atomic<int> woke[2] = {0, 0};
  auto sleeper = [&](int worker) {
    engine_mu_.Lock();
    intake_.SleepLocked(engine_mu_, *scheduler_, std::nullopt, /*first_worker=*/worker == 0);
    woke[worker].fetch_add(1);
    engine_mu_.Unlock();
  };
  // Polls `done` for up to 10 s.
  auto within_10s = [](auto done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return done();
  };
  auto sleepers_are = [&](int n) { return within_10s([&] { return intake_.counts().sleeping_workers == n; }); };
  auto woken = [&](int worker) { return within_10s([&] { return woke[worker].load() > 0; }); };
  std::thread second(sleeper, 1);
  std::thread first;
  // Whatever fails below, the sleepers wake and the threads are joined.
  struct Cleanup {
    Intake& intake;
    std::thread& a;
    std::thread& b;
    ~Cleanup() {
      intake.WakeAll();
      if (a.joinable()) a.join();
      if (b.joinable()) b.join();
    }
  } cleanup{intake_, first, second};
  ASSERT_TRUE(sleepers_are(1));
  first = std::thread(sleeper, 0);
  ASSERT_TRUE(sleepers_are(2));

  intake_.WakeOne();
  ASSERT_TRUE(woken(0)) << "a wake-up did not reach worker 0";
  ASSERT_TRUE(sleepers_are(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(woke[1].load(), 0) << "one wake-up woke both workers";

  intake_.WakeFirst();  // worker 0 is awake: held for its next sleep
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(woke[1].load(), 0) << "WakeFirst woke another worker";
  engine_mu_.Lock();
  const auto start = std::chrono::steady_clock::now();
  intake_.SleepLocked(engine_mu_, *scheduler_, start + std::chrono::seconds(10), /*first_worker=*/true);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5)) << "WakeFirst was not held";
  engine_mu_.Unlock();

  intake_.WakeOne();
  EXPECT_TRUE(woken(1)) << "the next wake-up did not reach the other worker";
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
