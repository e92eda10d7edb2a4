// BatchLatencyModel and OnlineLatencyFit: how long a batch takes to run, learned
// from the batches a worker has run.
//
// The model is the first two terms of the fit `tokenbatch calibrate` makes
// (calibration_model.h: c0 + c1·B·L + c2·B·L²), in the scheduler's cost unit:
//   latency_us(batch) = fixed_us + us_per_cost × cost(batch)
// where cost is the batch's cost under the scheduler's cost model (padded B·Lmax
// tokens by default). A linear fit over the recent batches is what the adaptive
// batching window needs (scheduler_options.h, adaptive_wait): how much of a
// batch's time is the per-batch part that a larger batch shares, and how much
// grows with its size. Near the shapes the worker really runs, the quadratic
// term is absorbed into the slope.
//
// OnlineLatencyFit is an exponentially weighted least-squares line through
// (cost, measured µs) pairs: recent batches weigh most, so the model follows a
// backend whose speed changes (warm-up, another tenant on the machine). Plain
// values, no clock, no locks: the runtime keeps one per worker and feeds it each
// measured batch; the simulator feeds it the batches it simulates; tests feed it
// numbers. Not thread-safe: one owner, or the owner's lock.
#pragma once

#include <cstdint>

namespace tokenbatch {

struct BatchLatencyModel {
  // The part of every batch's run time that does not grow with its cost, µs.
  // >= 0.
  double fixed_us = 0;
  // Run time added per unit of the cost model (a token of B·Lmax for `padded`,
  // of Σ tokens for `sum`, a byte for `memory`), µs. >= 0.
  double us_per_cost = 0;

  // Predicted run time of a batch of `cost`, µs.
  [[nodiscard]] double PredictUs(std::int64_t cost) const { return fixed_us + us_per_cost * static_cast<double>(cost); }
};

class OnlineLatencyFit {
 public:
  // `memory_batches`: the weight of a batch falls by 1/e after this many later
  // batches (the fit's memory); a smaller value is taken as 1. `min_batches`:
  // batches needed before the fit gives a model; a smaller value is taken as 2.
  explicit OnlineLatencyFit(double memory_batches = 64, std::int64_t min_batches = 4);

  // Accounts one batch of `cost` (>= 1) that ran in `latency_us` (>= 0; a
  // negative or non-finite value is ignored). O(1).
  void Add(std::int64_t cost, double latency_us);

  // Whether enough batches were seen for model() to mean something.
  [[nodiscard]] bool ready() const { return batches_ >= min_batches_; }
  // Batches accounted so far.
  [[nodiscard]] std::int64_t batches() const { return batches_; }

  // The weighted least-squares line, constrained to fixed_us >= 0 and
  // us_per_cost >= 0. When the recent batches all had about the same cost the
  // two terms cannot be told apart, and the whole time is put on the per-cost
  // term (fixed_us = 0): the reading under which waiting for company gains
  // nothing, so an unidentified model never makes requests wait. A slope <= 0
  // is read as time flat in cost (all fixed) only over a clear spread of costs,
  // else as the same unidentified case. All zeros before the first batch. O(1).
  [[nodiscard]] BatchLatencyModel model() const;

 private:
  double decay_;
  std::int64_t min_batches_;
  std::int64_t batches_ = 0;
  // Exponentially weighted sums: Σw, Σw·x, Σw·x², Σw·y, Σw·x·y (x = cost, y = µs).
  double w_ = 0, wx_ = 0, wxx_ = 0, wy_ = 0, wxy_ = 0;
};

}  // namespace tokenbatch
