// The adaptive batching window, stepped with a manual clock: a batch waits for
// company only while arrivals expected soon gain more from sharing its fixed
// time than its queued requests lose, and never longer than max_wait.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/adaptive_wait.h"
#include "core/test_clock.h"
#include "tokenbatch/core/scheduler.h"

namespace tokenbatch {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

SchedulerOptions Options() {
  SchedulerOptions o;
  o.policy = PackingPolicy::kFifo;
  o.cost_model = CostModel::Sum();
  o.max_batch_tokens = 4096;
  o.max_batch_size = 64;
  o.max_wait = milliseconds(4);
  o.early_dispatch_fraction = 0.9;
  o.arrival_rate_window = milliseconds(100);
  return o;
}

class AdaptiveWaitTest : public ::testing::Test {
 protected:
  void Make(SchedulerOptions o = Options()) {
    auto s = Scheduler::Create(o);
    ASSERT_TRUE(s.ok()) << s.status();
    scheduler_ = std::move(*s);
  }
  EnqueueOutcome Add(std::int64_t tokens = 10) {
    auto out = scheduler_->Enqueue({next_id_++, tokens, clock_.now()});
    EXPECT_TRUE(out.ok()) << out.status();
    return out.value_or(EnqueueOutcome{});
  }
  Decision Next(const BatchLatencyModel* model) { return scheduler_->Next(clock_.now(), {4096, false, model}); }
  // `count` arrivals of `tokens`, `gap` apart, each of which must go alone at
  // once because waiting gains nothing under `model`.
  void ExpectEachGoesAlone(const BatchLatencyModel& model, int count, std::int64_t tokens, Duration gap) {
    for (int i = 0; i < count; ++i) {
      Add(tokens);
      const Decision d = Next(&model);
      ASSERT_EQ(d.batch.size(), 1u) << "arrival " << i;
      EXPECT_EQ(d.reason, DispatchReason::kNoGainInWaiting);
      clock_.Advance(gap);
    }
  }
  // 300 ms of arrivals, one per 100 µs, each dispatched at once (drain): the
  // arrival rate the scheduler has measured is then 0.01 per µs.
  void PrimeRate() {
    for (int i = 0; i < 3000; ++i) {
      Add();
      ASSERT_EQ(scheduler_->Next(clock_.now(), {4096, true, nullptr}).batch.size(), 1u);
      clock_.Advance(microseconds(100));
    }
  }

  testing::ManualClock clock_;
  std::unique_ptr<Scheduler> scheduler_;
  RequestId next_id_ = 1;
};

// A backend with no per-batch time (the noop backend): waiting never pays, so a
// lone request goes at once even while requests arrive fast.
TEST_F(AdaptiveWaitTest, NoFixedTimeDispatchesAtOnce) {
  Make();
  ExpectEachGoesAlone(BatchLatencyModel{0, 1.0}, 5, 10, microseconds(100));
}

// A backend whose time is all per batch (2 ms; a GPU at small batches) and one
// arrival every 100 µs: each arrival saves 2 ms of someone's latency, the
// queued requests lose n µs per µs, so the batch waits until about
// λ·g = 0.01/µs × 2000 µs = 20 requests are queued, well before max_wait.
TEST_F(AdaptiveWaitTest, HoldsWhileArrivalsShareTheFixedTime) {
  Make();
  PrimeRate();
  const BatchLatencyModel model{2000, 0};
  std::size_t dispatched_at = 0;
  for (int i = 1; i <= 40 && dispatched_at == 0; ++i) {
    Add();
    const Decision d = Next(&model);
    if (!d.batch.empty()) {
      EXPECT_EQ(d.reason, DispatchReason::kNoGainInWaiting);
      dispatched_at = d.batch.size();
    } else {
      // Held until g / n after this (the last) arrival: 2000 µs / i.
      ASSERT_TRUE(d.wake_at.has_value());
      EXPECT_EQ(*d.wake_at,
                clock_.now() + std::chrono::ceil<Duration>(std::chrono::duration<double, std::micro>(2000.0 / i)));
    }
    clock_.Advance(microseconds(100));
  }
  EXPECT_GE(dispatched_at, 18u);
  EXPECT_LE(dispatched_at, 22u);
}

// When arrivals stop (a closed-loop client population that is all queued),
// the rate that counts is at most one per elapsed interval: the hold ends g / n
// after the last arrival, here 2000 µs / 5 = 400 µs, not at max_wait.
TEST_F(AdaptiveWaitTest, StopsHoldingSoonAfterArrivalsStop) {
  Make();
  PrimeRate();
  const BatchLatencyModel model{2000, 0};
  for (int i = 0; i < 5; ++i) {
    if (i > 0) clock_.Advance(microseconds(100));
    Add();
  }
  const TimePoint last_arrival = clock_.now();
  const Decision held = Next(&model);
  ASSERT_TRUE(held.batch.empty());
  ASSERT_TRUE(held.wake_at.has_value());
  EXPECT_EQ(*held.wake_at, last_arrival + microseconds(400));
  clock_.AdvanceTo(*held.wake_at);
  const Decision d = Next(&model);
  EXPECT_EQ(d.batch.size(), 5u);
  EXPECT_EQ(d.reason, DispatchReason::kNoGainInWaiting);
}

// Compute-bound batches (a CPU): a joiner adds more time to the queued requests
// than the fixed part it saves, g = 100 - 10 µs × 20 tokens < 0.
TEST_F(AdaptiveWaitTest, ComputeBoundBatchesDoNotWait) {
  Make();
  ExpectEachGoesAlone(BatchLatencyModel{100, 10}, 3, 20, microseconds(10));
}

// A per-batch time so large that waiting always pays still waits no longer
// than max_wait from the oldest request.
TEST_F(AdaptiveWaitTest, NeverHoldsPastMaxWait) {
  Make();
  PrimeRate();
  const BatchLatencyModel model{1e6, 0};
  const TimePoint first = clock_.now();
  Decision d;
  while (true) {
    Add();
    d = Next(&model);
    if (!d.batch.empty()) break;
    ASSERT_TRUE(d.wake_at.has_value());
    EXPECT_LE(*d.wake_at, first + milliseconds(4));
    clock_.Advance(microseconds(100));
  }
  EXPECT_EQ(d.reason, DispatchReason::kMaxWait);
  EXPECT_EQ(clock_.now(), first + milliseconds(4));
}

// Without a learned model (the worker has not run enough batches), or with
// adaptive_wait off, a batch that is not full waits max_wait.
TEST_F(AdaptiveWaitTest, WithoutAModelOrWhenOffTheFixedWindowApplies) {
  for (const bool adaptive : {true, false}) {
    SchedulerOptions o = Options();
    o.adaptive_wait = adaptive;
    Make(o);
    const BatchLatencyModel model{0, 1.0};
    const TimePoint first = clock_.now();
    Add();
    const Decision held = Next(adaptive ? nullptr : &model);
    EXPECT_TRUE(held.batch.empty());
    ASSERT_TRUE(held.wake_at.has_value());
    EXPECT_EQ(*held.wake_at, first + milliseconds(4));
    clock_.AdvanceTo(*held.wake_at);
    EXPECT_EQ(Next(adaptive ? nullptr : &model).reason, DispatchReason::kMaxWait);
  }
}

// While a batch is held, only the arrival that brings the queue to about λ·g
// requests must wake a sleeping worker (Enqueue's hint and the sleepers' wake
// rule agree); the earlier ones cannot end the hold.
TEST_F(AdaptiveWaitTest, ArrivalsWakeTheWorkerOnlyAtTheHoldSize) {
  Make();
  PrimeRate();
  const BatchLatencyModel model{2000, 0};
  for (int i = 0; i < 5; ++i) {
    if (i > 0) clock_.Advance(microseconds(100));
    Add();
  }
  ASSERT_TRUE(Next(&model).batch.empty());
  ArrivalWakeRule rule = scheduler_->WakeRuleForArrivals();
  int first_rule_wake = 0;
  int first_enqueue_wake = 0;
  for (int queued = 6; queued <= 40; ++queued) {
    clock_.Advance(microseconds(1));
    if (first_rule_wake == 0 && rule.OnArrival(10, 0, clock_.now())) first_rule_wake = queued;
    if (first_enqueue_wake == 0 && Add().wake_worker) first_enqueue_wake = queued;
  }
  EXPECT_GE(first_rule_wake, 18);
  EXPECT_LE(first_rule_wake, 22);
  EXPECT_EQ(first_enqueue_wake, first_rule_wake);
}

// A hold also ends when arrivals add cost: with 10 µs per token, a long arrival
// adds more to the held batch's run time than sharing its fixed part saves. The
// sleepers' rule and Enqueue both wake the worker for it, and Next dispatches.
TEST_F(AdaptiveWaitTest, ALongArrivalEndsTheHold) {
  Make();
  PrimeRate();
  const BatchLatencyModel model{2000, 10};
  Add(10);
  ASSERT_TRUE(Next(&model).batch.empty());  // g = 2000 - 100 = 1900 µs, λ·g = 19 > 1
  ArrivalWakeRule rule = scheduler_->WakeRuleForArrivals();
  clock_.Advance(microseconds(10));
  EXPECT_FALSE(rule.OnArrival(20, 0, clock_.now()));  // cost 30: λ·g = 0.01 × 1700 = 17 > 2
  EXPECT_FALSE(Add(20).wake_worker);
  clock_.Advance(microseconds(10));
  EXPECT_TRUE(rule.OnArrival(200, 0, clock_.now()));  // cost 230: g < 0
  EXPECT_TRUE(Add(200).wake_worker);
  const Decision d = Next(&model);
  EXPECT_EQ(d.batch.size(), 3u);
  EXPECT_EQ(d.reason, DispatchReason::kNoGainInWaiting);
}

// Draining dispatches a batch the adaptive window would hold.
TEST_F(AdaptiveWaitTest, DrainOverridesAHold) {
  Make();
  PrimeRate();
  const BatchLatencyModel model{2000, 0};
  Add();
  ASSERT_TRUE(Next(&model).batch.empty());
  const Decision d = scheduler_->Next(clock_.now(), {4096, true, &model});
  EXPECT_EQ(d.batch.size(), 1u);
  EXPECT_EQ(d.reason, DispatchReason::kDrain);
}

// A model with a non-finite or negative term is no model: the fixed window.
TEST_F(AdaptiveWaitTest, AnUnusableModelMeansTheFixedWindow) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (const BatchLatencyModel model :
       {BatchLatencyModel{nan, 0}, BatchLatencyModel{inf, 0}, BatchLatencyModel{2000, nan}, BatchLatencyModel{-1, 0},
        BatchLatencyModel{0, -1}}) {
    Make();
    PrimeRate();
    const TimePoint first = clock_.now();
    Add();
    const Decision d = Next(&model);
    EXPECT_TRUE(d.batch.empty());
    EXPECT_EQ(d.wake_at, first + milliseconds(4));
  }
}

TEST(ArrivalRateTest, MeasuresASteadyRateAndDecaysWhenArrivalsStop) {
  internal::ArrivalRate rate(milliseconds(100));
  TimePoint t = TimePoint{} + std::chrono::seconds(1);
  EXPECT_TRUE(rate.empty());
  EXPECT_EQ(rate.PerUs(t), 0);
  for (int i = 0; i < 20000; ++i) {  // 2 s at one per 100 µs
    rate.OnArrival(t);
    t += microseconds(100);
  }
  t -= microseconds(100);
  EXPECT_NEAR(rate.PerUs(t), 0.01, 0.01 * 0.01);
  EXPECT_EQ(rate.last_arrival(), t);
  // A late report of an earlier arrival counts, at its age.
  const double before = rate.PerUs(t);
  rate.OnArrival(t - milliseconds(100));
  EXPECT_NEAR(rate.PerUs(t) - before, std::exp(-1.0) / 1e5, 1e-9);
  // One window of silence divides it by e.
  EXPECT_NEAR(rate.PerUs(t + milliseconds(100)), rate.PerUs(t) * std::exp(-1.0), 1e-9);
}

}  // namespace
}  // namespace tokenbatch
