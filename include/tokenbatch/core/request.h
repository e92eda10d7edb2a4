// Plain data the policy core works on: request identity, size and timing.
//
// The core never reads a clock. Every time value it sees (arrival, deadline, the
// `now` of a decision) is passed in by its driver: the threaded runtime passes
// std::chrono::steady_clock readings, the simulator a virtual clock, tests a
// manual clock. All types here are plain values, safe to copy between threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

namespace tokenbatch {

// Monotonic time as seen by the core. Only the type is used; the core never calls
// SteadyClock::now().
using SteadyClock = std::chrono::steady_clock;
using TimePoint = SteadyClock::time_point;
using Duration = SteadyClock::duration;

// Identifies a request for its whole life. Chosen by the driver; unique among the
// requests queued in one Scheduler at a time.
using RequestId = std::uint64_t;

// What the core needs to know about one request. The payload (text, ids, ...)
// stays with the driver; the core only sees its cost-relevant size.
struct RequestSpec {
  RequestId id = 0;
  // Length in tokens (exact, from the tokenizer). Must be >= 1.
  std::int64_t tokens = 0;
  // When the request entered the system; the max_wait clock starts here.
  TimePoint arrival{};
  // Priority level: a higher level is always served first; within a level the
  // packing policy applies. Any int; 0 is the default level.
  int priority = 0;
  // Unset: no deadline. Set: the request is resolved with DeadlineExceeded instead
  // of being dispatched once `now` passes it.
  std::optional<TimePoint> deadline;
};

// A half-open range [begin, end) of token positions in a request, used by the
// `truncate` ([0, max_input_tokens)) and `split` (sliding windows) policies.
struct TokenWindow {
  std::int64_t begin = 0;
  std::int64_t end = 0;
  [[nodiscard]] std::int64_t size() const { return end - begin; }
  friend bool operator==(const TokenWindow&, const TokenWindow&) = default;
};

}  // namespace tokenbatch
