// Waiting in tests for something another thread does, with a bound that only a
// broken program reaches: tests wait for the condition itself, not for a sleep
// that a busy machine can outlast. Test-only.
#pragma once

#include <chrono>
#include <thread>

namespace tokenbatch::testing {

// Generous enough that a loaded or sanitized build never reaches it while the
// code works; short enough that a broken one fails well before CTest's timeout.
inline constexpr std::chrono::seconds kWaitLimit{30};

// Calls `condition` (a callable returning bool) every `poll` until it returns
// true or `limit` has passed; returns its last value. The condition is checked
// once more after the limit, so a condition that became true while this
// thread was descheduled still counts.
template <typename Condition>
bool WaitUntil(Condition&& condition, std::chrono::milliseconds limit = kWaitLimit,
               std::chrono::microseconds poll = std::chrono::milliseconds(1)) {
  const auto give_up = std::chrono::steady_clock::now() + limit;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= give_up) return condition();
    std::this_thread::sleep_for(poll);
  }
  return true;
}

}  // namespace tokenbatch::testing
