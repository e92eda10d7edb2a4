// The adaptive batching window (SchedulerOptions::adaptive_wait): whether a batch
// that is not full should wait for company, judged from the worker's learned
// latency model and the recent arrival rate, instead of always waiting max_wait.
//
// The rule compares, for a short wait dt, what the requests arriving meanwhile
// gain against what the n requests of the formed batch lose. With the latency
// model T(batch) = a + b·cost:
//   * dispatching now, a request arriving within dt waits for this batch to
//     finish and then pays its own batch's fixed part a; joining instead, it
//     shares this batch's a, but adds its compute (about the batch's mean
//     per-request compute, b·cost / n) to the run time of all n requests:
//     gain per arrival g = a - b·cost;
//   * the n requests each wait dt longer: loss n·dt.
// Summed over the λ·dt expected arrivals (first order in dt), waiting pays iff
//   λ·g > n.
// The arrival rate λ is the rate over the recent window (ArrivalRate), but never
// more than 1 / (time since the last arrival): when the arrivals have stopped
// (a closed-loop client population that is all queued) the wait ends within
// g / n of the last arrival. max_wait stays the upper bound.
//
// With the noop backend (a ≈ 0) this never waits, like max_wait 0; with a
// backend whose run time is mostly per batch (a GPU at small batches) it waits
// while company is arriving fast enough to share that time.
//
// Clients that come back as soon as they are answered (closed-loop: a
// connection that sends its next request on each reply) arrive in a burst a
// round trip after each batch finishes, and the rate sees that burst only once
// it began. AnsweredReturns (src/core/answered_returns.h) learns what fraction of
// an answer's requests return and how long after; with m returns still expected
// by `by`, waiting dt = by - now pays iff
//   m·(a - dt) > n·dt.
// The joiners' compute drops out here: a closed-loop client sends its next
// request only after its answer, so the worker, busy with this batch or with
// the returns' own batch next, spends that compute either way. Joining saves
// the second batch's fixed part a, which each of the m returns would wait
// through (and all later work with them), less the dt a return may wait for
// the last of them; the n queued requests wait dt. This
// rule is asked when the rate rule does not hold, and also once the anchor has
// waited max_wait: the returns of a batch answered after the anchor arrived may
// be waited for until that answer's max_wait, so a hold can end after the
// anchor's own max_wait, never more than max_wait after the latest answer. The
// hold ends early once the awaited arrivals came
// (HoldDecision::awaited_arrivals).
//
// Limits of the rules: they assume a request arriving after the dispatch queues
// behind this batch; with several workers and one idle, it would not, and the
// hold is worth less than they say. The rate rule weighs only the held batch
// and its joiners, not the requests that will queue behind a separate batch
// while the worker is saturated; the returns rule counts that fixed part once
// per return, whatever the queue behind.
//
// Internal to the core; plain values, no clock, not thread-safe.
#pragma once

#include <cstdint>

#include "core/micros.h"
#include "tokenbatch/core/batch_latency_model.h"
#include "tokenbatch/core/request.h"

namespace tokenbatch::internal {

// Arrivals per µs over a sliding exponential window: each arrival counts
// exp(-age / window), and the sum is divided by the window (less the part of it
// before the first arrival). O(1) per arrival and per query.
class ArrivalRate {
 public:
  // `window` > 0 (SchedulerOptions::arrival_rate_window, checked by Validate).
  explicit ArrivalRate(Duration window) : window_us_(ToUs(window)) {}

  // Accounts one arrival at `arrival` (arrivals may come slightly out of order).
  void OnArrival(TimePoint arrival);
  // The rate at `now`, arrivals per µs; 0 before the first arrival.
  [[nodiscard]] double PerUs(TimePoint now) const;
  // The latest arrival time seen (meaningless before the first).
  [[nodiscard]] TimePoint last_arrival() const { return last_; }
  [[nodiscard]] bool empty() const { return !seen_; }

 private:
  double window_us_;
  bool seen_ = false;
  TimePoint first_{};
  TimePoint last_{};
  double weight_at_last_ = 0;  // Σ exp(-(last_ - t_i) / window)
};

// What the adaptive window decides for one formed batch that is not full.
struct HoldDecision {
  bool hold = false;
  // When hold: re-decide at this time at the latest: the end of the window the
  // rule allows after the last arrival, and never after `latest`.
  TimePoint until{};
  // When hold by the rate rule: the window's arrival rate it was decided with,
  // per µs (for the arrivals' wake rule, AdaptiveHold); 0 for a returns hold.
  double rate_per_us = 0;
  // When hold by the returns rule: the arrivals that end it early (the expected
  // returns, rounded, >= 1); 0 for a rate hold.
  std::int64_t awaited_arrivals = 0;
};

// Whether `model` can be used: both terms finite and >= 0. The Scheduler treats
// any other model as no model (the fixed window).
[[nodiscard]] bool UsableModel(const BatchLatencyModel& model);

// The rule of the overview for a batch of `size` requests and `cost` (the cost
// model's unit), at `now`, with `model` usable; `latest` bounds the hold (the
// anchor's arrival + max_wait, > now).
[[nodiscard]] HoldDecision DecideHold(const BatchLatencyModel& model, const ArrivalRate& rate, std::int64_t size,
                                      std::int64_t cost, TimePoint now, TimePoint latest);

// The returns rule of the overview: `expected_returns` (> 0) returns of
// answered clients expected by `expected_by`, for a batch of `size` requests at
// `now`, with `model` usable; `latest` bounds the hold. No hold when the returns
// are overdue (expected_by <= now) or latest <= now.
[[nodiscard]] HoldDecision DecideReturnHold(const BatchLatencyModel& model, double expected_returns,
                                            TimePoint expected_by, std::int64_t size, TimePoint now,
                                            TimePoint latest);

}  // namespace tokenbatch::internal
