#include "core/answered_returns.h"

#include "core/micros.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace tokenbatch::internal {

namespace {

// RFC 6298, section 2.3: alpha = 1/8 for the mean, beta = 1/4 for the deviation;
// the same 1/8 weights an answer's returned fraction.
constexpr double kMeanWeight = 1.0 / 8;
constexpr double kDeviationWeight = 1.0 / 4;

}  // namespace

AnsweredReturns::AnsweredReturns(Duration window) : window_(std::max(window, Duration(1))) {}

void AnsweredReturns::Retire(const Answer& answer) {
  const double returned = static_cast<double>(answer.returned) / static_cast<double>(answer.count);
  fraction_ = fraction_ ? *fraction_ + kMeanWeight * (returned - *fraction_) : returned;
}

void AnsweredReturns::RetireBefore(TimePoint now) {
  while (!open_.empty() && now - open_.front().at > window_) {
    Retire(open_.front());
    open_.pop_front();
  }
}

void AnsweredReturns::LearnDelay(double delay_us) {
  if (!delay_mean_us_) {
    delay_mean_us_ = delay_us;
    delay_deviation_us_ = delay_us / 2;
    return;
  }
  delay_deviation_us_ += kDeviationWeight * (std::abs(*delay_mean_us_ - delay_us) - delay_deviation_us_);
  *delay_mean_us_ += kMeanWeight * (delay_us - *delay_mean_us_);
}

void AnsweredReturns::OnAnswered(TimePoint now, std::int64_t count) {
  if (count <= 0) return;
  RetireBefore(now);
  if (open_.size() >= kMaxAnswers) {
    Retire(open_.front());
    open_.pop_front();
  }
  // Several workers may report slightly out of order: keep the answers sorted.
  const auto at = std::upper_bound(open_.begin(), open_.end(), now,
                                   [](TimePoint t, const Answer& a) { return t < a.at; });
  open_.insert(at, Answer{now, count});
}

void AnsweredReturns::OnArrival(TimePoint arrival) {
  RetireBefore(arrival);
  for (auto it = open_.begin(); it != open_.end(); ++it) {
    if (arrival < it->at) break;  // sorted: no later answer precedes it either
    if (it->returned >= it->count) continue;
    ++it->returned;
    LearnDelay(ToUs(arrival - it->at));
    if (it->returned == it->count) {
      Retire(*it);
      open_.erase(it);
    }
    return;
  }
}

std::optional<AnsweredReturns::Expected> AnsweredReturns::ExpectedAt(TimePoint now) const {
  if (!fraction_ || !delay_mean_us_) return std::nullopt;
  const double delay_us = std::min(*delay_mean_us_ + 2 * delay_deviation_us_, ToUs(window_));
  const Duration delay = CeilFromUs(delay_us);
  Expected expected;
  bool any = false;
  for (const Answer& answer : open_) {
    if (now - answer.at > window_) continue;
    const double remaining = *fraction_ * static_cast<double>(answer.count) - static_cast<double>(answer.returned);
    if (!(remaining > 0)) continue;
    expected.requests += remaining;
    expected.by = std::max(expected.by, answer.at + delay);
    expected.answered = std::max(expected.answered, answer.at);
    any = true;
  }
  if (!any) return std::nullopt;
  return expected;
}

}  // namespace tokenbatch::internal
