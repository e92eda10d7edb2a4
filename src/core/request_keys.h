// The keys and values of the Scheduler's request indexes (internal).
#pragma once

#include <compare>
#include <cstdint>

#include "tokenbatch/core/request.h"

namespace tokenbatch::internal {

// Arrival order: arrival time, then enqueue order (seq is unique per queue).
struct ArrivalKey {
  TimePoint arrival;
  std::uint64_t seq;
  auto operator<=>(const ArrivalKey&) const = default;
};

// Length order: tokens, then arrival order.
struct LengthKey {
  std::int64_t tokens;
  TimePoint arrival;
  std::uint64_t seq;
  auto operator<=>(const LengthKey&) const = default;
};

// What packing needs besides the key. Index values are kept this small because a
// btree insert or erase shifts values within a node: small values keep the hot
// path (one add and one remove per request and index) cheap.
struct Slot {
  RequestId id;
  std::int64_t tokens;
  bool operator==(const Slot&) const = default;
};

}  // namespace tokenbatch::internal
