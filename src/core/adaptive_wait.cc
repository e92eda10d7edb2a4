#include "core/adaptive_wait.h"

#include <algorithm>
#include <cmath>

namespace tokenbatch::internal {

void ArrivalRate::OnArrival(TimePoint arrival) {
  if (!seen_) {
    seen_ = true;
    first_ = last_ = arrival;
    weight_at_last_ = 1;
    return;
  }
  if (arrival < first_) first_ = arrival;
  if (arrival >= last_) {
    weight_at_last_ = weight_at_last_ * std::exp(-ToUs(arrival - last_) / window_us_) + 1;
    last_ = arrival;
  } else {
    weight_at_last_ += std::exp(-ToUs(last_ - arrival) / window_us_);
  }
}

double ArrivalRate::PerUs(TimePoint now) const {
  if (!seen_) return 0;
  const double since_last = std::max(0.0, ToUs(now - last_));
  const double since_first = std::max(0.0, ToUs(now - first_));
  // The part of the window that arrivals could have filled: all of it once the
  // first arrival is a window old, less at start-up.
  const double covered = window_us_ * -std::expm1(-since_first / window_us_);
  if (covered <= 0) return 0;
  return weight_at_last_ * std::exp(-since_last / window_us_) / covered;
}

bool UsableModel(const BatchLatencyModel& model) {
  return std::isfinite(model.fixed_us) && std::isfinite(model.us_per_cost) && model.fixed_us >= 0 &&
         model.us_per_cost >= 0;
}

HoldDecision DecideHold(const BatchLatencyModel& model, const ArrivalRate& rate, std::int64_t size, std::int64_t cost,
                        TimePoint now, TimePoint latest) {
  HoldDecision d;
  if (size < 1 || rate.empty() || latest <= now) return d;
  const double n = static_cast<double>(size);
  const double gain_per_arrival_us = model.fixed_us - model.us_per_cost * static_cast<double>(cost);
  if (!(gain_per_arrival_us > 0)) return d;
  const double window_rate = rate.PerUs(now);
  const double since_last_us = std::max(0.0, ToUs(now - rate.last_arrival()));
  // Never more than one arrival per elapsed interval: arrivals that stopped do
  // not count as coming. That bound, 1 / since_last, is compared multiplied out
  // so that at the `until` computed below it holds exactly.
  if (!(window_rate * gain_per_arrival_us > n)) return d;
  if (!(gain_per_arrival_us > n * since_last_us)) return d;
  d.hold = true;
  d.rate_per_us = window_rate;
  // recent_rate falls below n / g once since_last > g / n; rounded up so that
  // the re-decision is not a nanosecond early. Clamped to `latest` before the
  // conversion, so a huge g / n cannot overflow.
  const double end_after_last_us = gain_per_arrival_us / n;
  const double latest_after_last_us = ToUs(latest - rate.last_arrival());
  d.until = end_after_last_us >= latest_after_last_us ? latest : rate.last_arrival() + CeilFromUs(end_after_last_us);
  if (d.until <= now) d.until = now + Duration(1);
  if (d.until > latest) d.until = latest;
  return d;
}

HoldDecision DecideReturnHold(const BatchLatencyModel& model, double expected_returns, TimePoint expected_by,
                              std::int64_t size, TimePoint now, TimePoint latest) {
  HoldDecision d;
  if (size < 1 || !(expected_returns > 0) || expected_by <= now || latest <= now) return d;
  const double wait_us = ToUs(std::min(expected_by, latest) - now);
  if (!(expected_returns * (model.fixed_us - wait_us) > static_cast<double>(size) * wait_us)) return d;
  d.hold = true;
  d.until = std::min(expected_by, latest);
  d.awaited_arrivals = std::max<std::int64_t>(1, std::llround(expected_returns));
  return d;
}

}  // namespace tokenbatch::internal
