// Durations as floating-point microseconds, the unit of the adaptive window's
// latency model (BatchLatencyModel), and back. Internal to the core; pure.
#pragma once

#include <chrono>

#include "tokenbatch/core/request.h"

namespace tokenbatch::internal {

// `d` in µs, as a double.
inline double ToUs(Duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

// `us` microseconds as a Duration, rounded up (a wake-up computed from it is
// never a tick early). `us` must be finite and fit a Duration.
inline Duration CeilFromUs(double us) {
  return std::chrono::ceil<Duration>(std::chrono::duration<double, std::micro>(us));
}

}  // namespace tokenbatch::internal
