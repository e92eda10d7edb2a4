// AnsweredReturns: what fraction of an answered batch's clients come back, and
// how long after the answer, learned from plain times.
#include "core/answered_returns.h"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>

#include "core/test_clock.h"

namespace tokenbatch::internal {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

class AnsweredReturnsTest : public ::testing::Test {
 protected:
  // `count` arrivals `delay` after an answer of `answered` requests at now; the
  // clock ends at the last arrival.
  void Round(std::int64_t answered, int count, Duration delay) {
    const TimePoint at = clock_.now();
    returns_.OnAnswered(at, answered);
    for (int i = 0; i < count; ++i) returns_.OnArrival(at + delay);
    clock_.AdvanceTo(at + delay);
  }

  testing::ManualClock clock_;
  AnsweredReturns returns_{milliseconds(4)};
};

TEST_F(AnsweredReturnsTest, ExpectsNothingUntilItLearned) {
  returns_.OnAnswered(clock_.now(), 8);
  EXPECT_FALSE(returns_.ExpectedAt(clock_.now()).has_value());
  EXPECT_FALSE(returns_.return_fraction().has_value());
  EXPECT_FALSE(returns_.return_delay_mean_us().has_value());
}

// All 8 clients return 500 µs after the answer: fraction 1, delay 500 µs; the
// first sample's deviation of half of it shrinks by 3/4 at each of the 7 equal
// samples after it, and the next answer's returns are expected by mean + 2 ×
// deviation.
TEST_F(AnsweredReturnsTest, LearnsTheFractionAndTheDelayOfAFullReturn) {
  Round(8, 8, microseconds(500));
  ASSERT_TRUE(returns_.return_fraction().has_value());
  EXPECT_DOUBLE_EQ(*returns_.return_fraction(), 1.0);
  EXPECT_DOUBLE_EQ(*returns_.return_delay_mean_us(), 500.0);
  const double deviation_us = 250.0 * std::pow(0.75, 7);
  EXPECT_DOUBLE_EQ(returns_.return_delay_deviation_us(), deviation_us);

  clock_.Advance(milliseconds(1));
  const TimePoint answered = clock_.now();
  returns_.OnAnswered(answered, 8);
  const auto expected = returns_.ExpectedAt(answered);
  ASSERT_TRUE(expected.has_value());
  EXPECT_DOUBLE_EQ(expected->requests, 8.0);
  EXPECT_EQ(expected->by, answered + std::chrono::ceil<Duration>(std::chrono::duration<double, std::micro>(
                                         500.0 + 2 * deviation_us)));
  EXPECT_EQ(expected->answered, answered);
}

// RFC 6298's update: deviation moves 1/4 towards |mean - sample| (before the
// mean moves), the mean 1/8 towards the sample.
TEST_F(AnsweredReturnsTest, SmoothsTheDelayAsTcpSmoothsTheRoundTrip) {
  Round(1, 1, microseconds(500));
  Round(1, 1, microseconds(900));
  EXPECT_DOUBLE_EQ(*returns_.return_delay_mean_us(), 550.0);
  EXPECT_DOUBLE_EQ(returns_.return_delay_deviation_us(), 250.0 + (400.0 - 250.0) / 4);
}

// Returns that came already are not expected again.
TEST_F(AnsweredReturnsTest, CountsDownTheReturnsOfAnOpenAnswer) {
  Round(8, 8, microseconds(300));
  const TimePoint answered = clock_.now();
  returns_.OnAnswered(answered, 8);
  for (int i = 0; i < 3; ++i) returns_.OnArrival(answered + microseconds(200));
  const auto expected = returns_.ExpectedAt(answered + microseconds(200));
  ASSERT_TRUE(expected.has_value());
  EXPECT_DOUBLE_EQ(expected->requests, 5.0);
  for (int i = 0; i < 5; ++i) returns_.OnArrival(answered + microseconds(300));
  EXPECT_FALSE(returns_.ExpectedAt(answered + microseconds(300)).has_value());
}

// Half the clients return within the window: the answer is retired with 0.5
// when its window passes, and later answers expect half their requests; a
// second retirement moves the fraction by 1/8 of the difference.
TEST_F(AnsweredReturnsTest, LearnsAPartialFractionWhenTheWindowPasses) {
  const TimePoint first = clock_.now();
  returns_.OnAnswered(first, 4);
  returns_.OnArrival(first + milliseconds(1));
  returns_.OnArrival(first + milliseconds(1));
  EXPECT_FALSE(returns_.return_fraction().has_value());  // still open
  const TimePoint second = first + milliseconds(5);
  returns_.OnAnswered(second, 4);
  ASSERT_TRUE(returns_.return_fraction().has_value());
  EXPECT_DOUBLE_EQ(*returns_.return_fraction(), 0.5);
  const auto expected = returns_.ExpectedAt(second);
  ASSERT_TRUE(expected.has_value());
  EXPECT_DOUBLE_EQ(expected->requests, 2.0);

  returns_.OnAnswered(second + milliseconds(5), 4);  // retires `second` with 0 returned
  EXPECT_DOUBLE_EQ(*returns_.return_fraction(), 0.5 - 0.5 / 8);
}

// An arrival before any answer, or after an answer's window, is no return; an
// answer's window passing makes it expect nothing more.
TEST_F(AnsweredReturnsTest, ArrivalsOutsideTheWindowAreNotReturns) {
  Round(2, 2, microseconds(100));  // learned: fraction 1, delay 100 µs
  const TimePoint answered = clock_.now() + milliseconds(1);
  returns_.OnArrival(answered - microseconds(1));  // before the answer
  returns_.OnAnswered(answered, 2);
  ASSERT_TRUE(returns_.ExpectedAt(answered).has_value());
  EXPECT_DOUBLE_EQ(returns_.ExpectedAt(answered)->requests, 2.0);
  EXPECT_FALSE(returns_.ExpectedAt(answered + milliseconds(5)).has_value());
  returns_.OnArrival(answered + milliseconds(5));  // too late: retires it with 0
  EXPECT_DOUBLE_EQ(*returns_.return_fraction(), 1.0 - 1.0 / 8);
}

// A delay near the window, with its deviation, is expected by the window's end
// at the latest.
TEST_F(AnsweredReturnsTest, ExpectsReturnsByTheWindowAtTheLatest) {
  Round(1, 1, microseconds(3900));
  const TimePoint answered = clock_.now();
  returns_.OnAnswered(answered, 1);
  ASSERT_TRUE(returns_.ExpectedAt(answered).has_value());
  EXPECT_EQ(returns_.ExpectedAt(answered)->by, answered + milliseconds(4));
}

// At most kMaxAnswers stay open: the oldest is retired (with what returned)
// when one more comes, and an arrival then counts for the oldest still open.
TEST_F(AnsweredReturnsTest, KeepsAtMostMaxAnswersOpen) {
  const TimePoint start = clock_.now();
  for (std::size_t i = 0; i <= AnsweredReturns::kMaxAnswers; ++i) {
    returns_.OnAnswered(start + microseconds(static_cast<int>(i)), 1);
  }
  ASSERT_TRUE(returns_.return_fraction().has_value());
  EXPECT_DOUBLE_EQ(*returns_.return_fraction(), 0.0);
  returns_.OnArrival(start + microseconds(100));
  // The first answer still open was at 1 µs.
  EXPECT_DOUBLE_EQ(*returns_.return_delay_mean_us(), 99.0);
}

}  // namespace
}  // namespace tokenbatch::internal
