// SchedulerOptions::anchor_slack_per_token: the length-aware anchor is the
// earliest virtual deadline (arrival + slack × tokens), not the oldest request.
// Driven through the Scheduler with a manual clock; times in µs from the clock's
// start.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/test_clock.h"
#include "tokenbatch/core/errors.h"
#include "tokenbatch/core/scheduler.h"

namespace tokenbatch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using std::chrono::microseconds;

struct Arrival {
  RequestId id;
  std::int64_t tokens;
  std::int64_t at_us;
};

SchedulerOptions SlackOptions(Duration slack) {
  SchedulerOptions o;
  o.policy = PackingPolicy::kLengthAware;
  o.cost_model = CostModel::Padded();
  o.max_batch_tokens = 400;
  o.anchor_slack_per_token = slack;
  o.length_aware_min_padding_efficiency = 0;  // the anchor alone is under test
  return o;
}

// Enqueues `arrivals`, then returns the batches of successive drain decisions at
// the last arrival time.
std::vector<std::vector<RequestId>> Batches(const SchedulerOptions& o, const std::vector<Arrival>& arrivals) {
  testing::ManualClock clock;
  const TimePoint start = clock.now();
  auto s = Scheduler::Create(o);
  EXPECT_TRUE(s.ok()) << s.status();
  for (const Arrival& a : arrivals) {
    EXPECT_TRUE((*s)->Enqueue({.id = a.id, .tokens = a.tokens, .arrival = start + microseconds(a.at_us)}).ok());
    clock.AdvanceTo(start + microseconds(a.at_us));
  }
  std::vector<std::vector<RequestId>> batches;
  for (Decision d = (*s)->Next(clock.now(), {o.max_batch_tokens, /*drain=*/true}); !d.batch.empty();
       d = (*s)->Next(clock.now(), {o.max_batch_tokens, true})) {
    batches.push_back(d.batch);
  }
  EXPECT_EQ((*s)->queued_requests(), 0u);
  return batches;
}

//   id  tokens  arrival µs   virtual deadline µs (slack 1 µs/token)
//   1   300       0          300
//   2   300      10          310
//   3    10     100          110
//   4    12     200          212
//   5    10     400          410
const std::vector<Arrival> kLongThenShort = {{1, 300, 0}, {2, 300, 10}, {3, 10, 100}, {4, 12, 200}, {5, 10, 400}};

TEST(AnchorSlackTest, ShortRequestsBehindLongOnesAnchorTheFirstBatch) {
  // Anchor 3 (deadline 110), then the nearest lengths 5 (10) and 4 (12): 3 × 12 = 36.
  // A 300 would make 4 × 300 > 400. Then 1 and 2 (600 > 400: one each).
  EXPECT_THAT(Batches(SlackOptions(microseconds(1)), kLongThenShort),
              ElementsAre(ElementsAre(3, 5, 4), ElementsAre(1), ElementsAre(2)));
}

TEST(AnchorSlackTest, ZeroSlackIsTheOldestFirstAnchor) {
  EXPECT_THAT(Batches(SlackOptions(Duration::zero()), kLongThenShort),
              ElementsAre(ElementsAre(1), ElementsAre(2), ElementsAre(3, 5, 4)));
}

TEST(AnchorSlackTest, AgingLetsAnOldLongRequestGoBeforeANewerShortOne) {
  // 1: 300 tokens at 0 (deadline 300); 2: 10 tokens at 295 (deadline 305).
  // The long request's deadline is earlier, so it anchors first.
  EXPECT_THAT(Batches(SlackOptions(microseconds(1)), {{1, 300, 0}, {2, 10, 295}}),
              ElementsAre(ElementsAre(1), ElementsAre(2)));
  // Arriving at 289 (deadline 299), the short one goes first.
  EXPECT_THAT(Batches(SlackOptions(microseconds(1)), {{1, 300, 0}, {2, 10, 289}}),
              ElementsAre(ElementsAre(2), ElementsAre(1)));
}

TEST(AnchorSlackTest, OtherPoliciesIgnoreTheSlack) {
  SchedulerOptions o = SlackOptions(microseconds(1));
  o.policy = PackingPolicy::kFifo;
  EXPECT_THAT(Batches(o, kLongThenShort), ElementsAre(ElementsAre(1), ElementsAre(2), ElementsAre(3, 4, 5)));
}

TEST(AnchorSlackTest, MaxWaitStillCountsFromTheOldestRequest) {
  // Slack 1 ms/token: the 10-token request (deadline 10 ms) anchors ahead of the
  // 300-token one (deadline 300 ms), but the batch goes when the oldest request
  // (the long one) has waited max_wait (4 ms), not when the anchor has.
  // Budget 1,000: the two together cost 600 < 0.9 × 1,000, so they wait.
  SchedulerOptions o = SlackOptions(std::chrono::milliseconds(1));
  o.max_batch_tokens = 1000;
  auto s = Scheduler::Create(o);
  ASSERT_TRUE(s.ok());
  testing::ManualClock clock;
  const TimePoint t0 = clock.now();
  ASSERT_TRUE((*s)->Enqueue({.id = 1, .tokens = 300, .arrival = t0}).ok());
  ASSERT_TRUE((*s)->Enqueue({.id = 2, .tokens = 10, .arrival = t0 + microseconds(1000)}).ok());
  Decision d = (*s)->Next(t0 + microseconds(1000), {1000});
  EXPECT_TRUE(d.batch.empty());
  ASSERT_TRUE(d.wake_at.has_value());
  EXPECT_EQ(*d.wake_at, t0 + std::chrono::milliseconds(4));
  d = (*s)->Next(*d.wake_at, {1000});
  EXPECT_THAT(d.batch, ElementsAre(2, 1));  // anchor first
  EXPECT_EQ(d.reason, DispatchReason::kMaxWait);
}

TEST(AnchorSlackTest, HugeSlackSaturatesToOldestFirst) {
  // Every virtual deadline saturates at TimePoint::max(); ties go to the earlier
  // enqueued, so the order is the oldest-first one, without overflow.
  EXPECT_THAT(Batches(SlackOptions(Duration::max()), kLongThenShort),
              ElementsAre(ElementsAre(1), ElementsAre(2), ElementsAre(3, 5, 4)));
}

TEST(AnchorSlackTest, NegativeSlackIsInvalid) {
  const absl::Status s = Validate(SlackOptions(Duration(-1)));
  EXPECT_EQ(GetErrorKind(s), ErrorKind::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("anchor_slack_per_token"));
}

}  // namespace
}  // namespace tokenbatch
