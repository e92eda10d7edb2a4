// The adaptive window and closed-loop clients, stepped with a manual clock: a
// batch waits for the returns of clients answered just before (OnAnswered) when
// their sharing its fixed time gains more than its queued requests lose, also
// past its anchor's max_wait, never past max_wait after the answer.
#include <gtest/gtest.h>

#include "core/test_clock.h"
#include "tokenbatch/core/scheduler.h"

namespace tokenbatch {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

// Time mostly per batch (a GPU at small batches): 2 ms a batch plus 1 µs a token.
constexpr BatchLatencyModel kPerBatchModel{2000, 1.0};
constexpr std::int64_t kClients = 8;

SchedulerOptions Options() {
  SchedulerOptions o;
  o.policy = PackingPolicy::kFifo;
  o.cost_model = CostModel::Sum();
  o.max_batch_tokens = 4096;
  o.max_batch_size = 64;
  o.max_wait = milliseconds(4);
  o.arrival_rate_window = milliseconds(100);
  return o;
}

class ClosedLoopHoldTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = Scheduler::Create(Options());
    ASSERT_TRUE(s.ok()) << s.status();
    scheduler_ = std::move(*s);
  }
  EnqueueOutcome Add() {
    auto out = scheduler_->Enqueue({next_id_++, 10, clock_.now()});
    EXPECT_TRUE(out.ok()) << out.status();
    return out.value_or(EnqueueOutcome{});
  }
  Decision Next() { return scheduler_->Next(clock_.now(), {4096, false, &kPerBatchModel}); }
  // Rounds of a closed loop whose batches take 50 ms (so the arrival rate alone
  // never makes the window wait): `answered` clients are answered (when
  // `report` the scheduler is told), each returns 300 + 20·i µs later, and the
  // round is drained. Leaves the clock 50 ms after the last round's answer.
  void LearnRounds(int rounds, bool report = true) {
    for (int r = 0; r < rounds; ++r) {
      const TimePoint answered = clock_.now();
      if (report) scheduler_->OnAnswered(answered, kClients);
      for (int i = 0; i < kClients; ++i) {
        clock_.AdvanceTo(answered + microseconds(300 + 20 * i));
        Add();
      }
      ASSERT_EQ(scheduler_->Next(clock_.now(), {4096, true, &kPerBatchModel}).batch.size(),
                static_cast<std::size_t>(kClients));
      clock_.AdvanceTo(answered + milliseconds(50));
    }
  }
  // After LearnRounds(3): the 8 clients are answered now (reported when
  // `report`), and the first of them is back 300 µs later. Returns the answer's time.
  TimePoint FirstReturnAfterLearning(bool report = true) {
    LearnRounds(3, report);
    const TimePoint answered = clock_.now();
    if (report) scheduler_->OnAnswered(answered, kClients);
    clock_.AdvanceTo(answered + microseconds(300));
    Add();
    return answered;
  }

  testing::ManualClock clock_;
  std::unique_ptr<Scheduler> scheduler_;
  RequestId next_id_ = 1;
};

// Once it learned that all 8 clients come back about 300-440 µs after their
// answer, the first return waits for the other 7, and the batch goes when the
// last arrives.
TEST_F(ClosedLoopHoldTest, WaitsForTheRestOfTheAnsweredBatch) {
  LearnRounds(3);
  const TimePoint answered = clock_.now();
  scheduler_->OnAnswered(answered, kClients);
  for (int i = 0; i < kClients; ++i) {
    clock_.AdvanceTo(answered + microseconds(300 + 20 * i));
    Add();
    const Decision d = Next();
    if (i + 1 < kClients) {
      ASSERT_TRUE(d.batch.empty()) << "return " << i;
      ASSERT_TRUE(d.wake_at.has_value());
      EXPECT_GT(*d.wake_at, clock_.now());
      EXPECT_LE(*d.wake_at, answered + milliseconds(4));
    } else {
      EXPECT_EQ(d.batch.size(), static_cast<std::size_t>(kClients));
      EXPECT_EQ(d.reason, DispatchReason::kNoGainInWaiting);
    }
  }
}

// The same traffic without the answers reported: the arrival rate alone is too
// low to wait for, and each return goes alone.
TEST_F(ClosedLoopHoldTest, WithoutAnswersTheRateAloneDoesNotWait) {
  FirstReturnAfterLearning(/*report=*/false);
  const Decision d = Next();
  EXPECT_EQ(d.batch.size(), 1u);
  EXPECT_EQ(d.reason, DispatchReason::kNoGainInWaiting);
}

// A request that queued while the worker was busy has waited past max_wait when
// the worker's batch is answered: it waits for that batch's returns, until they
// are expected (overdue: it goes), never past max_wait after the answer.
TEST_F(ClosedLoopHoldTest, WaitsPastTheAnchorsMaxWaitForReturnsAnsweredSince) {
  LearnRounds(3);
  const TimePoint anchor = clock_.now();
  Add();
  clock_.AdvanceTo(anchor + microseconds(4500));
  const TimePoint answered = clock_.now();
  scheduler_->OnAnswered(answered, kClients);
  const Decision held = Next();
  ASSERT_TRUE(held.batch.empty());
  ASSERT_TRUE(held.wake_at.has_value());
  EXPECT_GT(*held.wake_at, anchor + milliseconds(4));
  EXPECT_GT(*held.wake_at, answered);
  EXPECT_LE(*held.wake_at, answered + milliseconds(4));

  clock_.AdvanceTo(*held.wake_at);  // no client came back
  const Decision overdue = Next();
  EXPECT_EQ(overdue.batch.size(), 1u);
  EXPECT_EQ(overdue.reason, DispatchReason::kMaxWait);
}

// During a returns hold, an arrival wakes the worker only once the awaited
// returns came: the first return of 8 awaits 7 more, through Enqueue and
// through the snapshot rule a buffering driver uses.
TEST_F(ClosedLoopHoldTest, OnlyTheAwaitedReturnsWakeTheWorker) {
  FirstReturnAfterLearning();
  ASSERT_TRUE(Next().batch.empty());

  ArrivalWakeRule rule = scheduler_->WakeRuleForArrivals();
  for (int i = 1; i < kClients; ++i) {
    clock_.Advance(microseconds(20));
    const bool expected_wake = i == kClients - 1;
    EXPECT_EQ(rule.OnArrival(10, 0, clock_.now()), expected_wake) << "return " << i;
    EXPECT_EQ(Add().wake_worker, expected_wake) << "return " << i;
  }
  EXPECT_EQ(Next().batch.size(), static_cast<std::size_t>(kClients));
}

// A backend with no per-batch time gains nothing from company: no return is
// waited for.
TEST_F(ClosedLoopHoldTest, ComputeOnlyBackendsDoNotWaitForReturns) {
  FirstReturnAfterLearning();
  const BatchLatencyModel compute_only{0, 1.0};
  const Decision d = scheduler_->Next(clock_.now(), {4096, false, &compute_only});
  EXPECT_EQ(d.batch.size(), 1u);
  EXPECT_EQ(d.reason, DispatchReason::kNoGainInWaiting);
}

}  // namespace
}  // namespace tokenbatch
