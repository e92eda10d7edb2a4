// ArrivalWakeRule: whether requests that arrive while every worker sleeps can
// change what the sleeping worker's last Next() decided, so a driver that buffers
// arrivals (the threaded runtime's intake queue) knows when a wake-up is needed
// without touching the Scheduler.
//
// It is the rule of EnqueueOutcome::wake_worker, applied to a snapshot of the
// queue taken when the worker went to sleep (Scheduler::WakeRuleForArrivals) plus
// the arrivals fed to OnArrival since. An arrival needs a wake-up if it
//   * lands in an empty queue or at a higher priority level than the top (the
//     worker has no wake time for it, or it must be served first);
//   * is older than the top level's oldest request (it becomes the anchor, and
//     the max_wait wake time moves earlier);
//   * makes the top level as a whole reach max_batch_size or the early-dispatch
//     threshold (early_dispatch_fraction × the last budget): only then can a
//     batch become ready before the pending wake time, because every batch of the
//     level is a subset of it and costs are monotone in B, Lmax and Σ tokens;
//   * may end a hold of the adaptive window (AdaptiveHold::MayEnd: the arrivals
//     since the hold began counted as joining the held batch, at the arrival
//     rate measured then, or, for a hold awaiting answered clients' returns,
//     the awaited number arrived; a rising rate only makes the wake-up early,
//     and the hold's own end is the worker's wake time);
//   * or max_wait is 0 (every arrival is dispatched at once).
// With several workers the snapshot is the last sleeping worker's: a hold
// decided by one worker's latency model may be woken by another's rule, at
// worst at the hold's own end (its wake time).
// Arrivals with a deadline are not covered (the driver enqueues those directly).
//
// Plain value type, no synchronisation: the driver copies it under its own lock.
#pragma once

#include <cstdint>
#include <optional>

#include "tokenbatch/core/cost_model.h"
#include "tokenbatch/core/request.h"

namespace tokenbatch {

// A batch the adaptive window holds (SchedulerOptions::adaptive_wait,
// src/core/adaptive_wait.h). A hold by the arrival rate lasts while
//   rate_per_us × (fixed_us − us_per_cost × cost) > size
// for the held batch; a hold for answered clients' returns (awaited_arrivals >
// 0) lasts until that many requests arrived. Plain values.
struct AdaptiveHold {
  double rate_per_us = 0;                       // arrivals per µs when the hold began
  double fixed_us = 0, us_per_cost = 0;         // the latency model it was decided with
  std::int64_t batch_size = 0, batch_cost = 0;  // the held batch (cost in the cost model's unit)
  std::int64_t level_size = 0, level_cost = 0;  // its priority level as a whole then
  std::int64_t awaited_arrivals = 0;            // > 0: a returns hold, ended by this many arrivals

  // Whether the level, now of `size` requests costing `cost`, may end the hold.
  // A returns hold: once the level grew by awaited_arrivals. A rate hold: every
  // request added since is counted as joining the held batch, with the
  // level's growth in cost. That growth is what the batch gains under the sum
  // cost, and under padded cost while the batch holds the level's longest
  // request; when it does not (length_aware left a longer one out), a joiner can
  // add more to the batch than to the level, this may answer false where the
  // hold should end, and the worker then wakes at the hold's end (never after
  // max_wait). O(1).
  [[nodiscard]] bool MayEnd(std::int64_t size, std::int64_t cost) const {
    if (awaited_arrivals > 0) return size - level_size >= awaited_arrivals;
    const double n = static_cast<double>(batch_size + (size - level_size));
    const double c = static_cast<double>(batch_cost + (cost - level_cost));
    return rate_per_us * (fixed_us - us_per_cost * c) <= n;
  }
};

class ArrivalWakeRule {
 public:
  // A rule that wakes on every arrival (what a driver uses before any snapshot).
  ArrivalWakeRule() = default;

  struct TopLevel {
    int priority = 0;
    BatchShape shape;  // of the whole level: requests, longest, Σ tokens
    TimePoint oldest_arrival{};
  };
  // A snapshot of a non-empty queue's top level. `cost_model` must outlive the
  // rule (the Scheduler's options do); `fill_threshold` is in its unit; `hold`:
  // the adaptive window's hold of the top level's batch, if any.
  ArrivalWakeRule(const CostModel* cost_model, TopLevel top, std::int64_t max_batch_size, double fill_threshold,
                  std::optional<AdaptiveHold> hold = std::nullopt)
      : cost_model_(cost_model),
        top_(top),
        max_batch_size_(max_batch_size),
        fill_threshold_(fill_threshold),
        hold_(hold),
        always_(false) {}
  // The snapshot of an empty queue: the first arrival wakes.
  static ArrivalWakeRule EmptyQueue() { return ArrivalWakeRule(); }

  // Accounts one arrival of `tokens` tokens (>= 1) at `priority` and `arrival`;
  // true if an idle worker should call Next now. O(1).
  [[nodiscard]] bool OnArrival(std::int64_t tokens, int priority, TimePoint arrival);

 private:
  const CostModel* cost_model_ = nullptr;
  TopLevel top_;
  std::int64_t max_batch_size_ = 0;
  double fill_threshold_ = 0;
  std::optional<AdaptiveHold> hold_;
  bool always_ = true;
};

}  // namespace tokenbatch
