// A command-line number of time units (a double: µs, ms) as the core's Duration.
#pragma once

#include <chrono>
#include <cmath>
#include <optional>

#include "tokenbatch/core/request.h"

namespace tokenbatch::cli {

// `value` units of `Period` (std::micro for a flag in µs, std::milli in ms) as a
// Duration, saturating at Duration::max() instead of overflowing the integral
// count (a huge wait or slack means "never", as the core's own saturation does).
// nullopt for a negative or NaN value, which the caller reports as a flag error.
template <typename Period>
[[nodiscard]] std::optional<Duration> DurationFromFlag(double value) {
  if (std::isnan(value) || value < 0) return std::nullopt;
  const double ticks =
      std::chrono::duration<double, Duration::period>(std::chrono::duration<double, Period>(value)).count();
  if (ticks >= static_cast<double>(Duration::max().count())) return Duration::max();
  return Duration(static_cast<Duration::rep>(ticks));
}

}  // namespace tokenbatch::cli
