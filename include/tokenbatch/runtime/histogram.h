// Histogram: counts of observations in fixed buckets, Prometheus style.
//
// Bucket i counts observations <= bounds[i] (and > bounds[i-1]); one more bucket
// counts those above the last bound (+Inf). Also keeps count and sum, so
// exporters can write `_bucket`, `_sum` and `_count` series. Value type; not
// thread-safe (the owner guards it). No method blocks.
#pragma once

#include <cstdint>
#include <vector>

namespace tokenbatch {

class Histogram {
 public:
  // `bounds` must be strictly ascending (not checked beyond a debug assert).
  explicit Histogram(std::vector<double> bounds = {});

  // Bounds 1, 2, 4, ... up to <= max (for sizes and token counts).
  [[nodiscard]] static Histogram PowersOfTwo(double max);
  // `count` bounds from `start`, each `factor` times the previous (for latencies).
  [[nodiscard]] static Histogram Exponential(double start, double factor, int count);
  // Bounds 0.1, 0.2, ..., 1.0 (for ratios such as fill and padding efficiency).
  [[nodiscard]] static Histogram Ratio();

  void Observe(double value);

  [[nodiscard]] const std::vector<double>& bounds() const { return bounds_; }
  // Non-cumulative counts, bounds().size() + 1 entries (the last is +Inf).
  [[nodiscard]] const std::vector<std::uint64_t>& counts() const { return counts_; }
  [[nodiscard]] std::uint64_t count() const { return count_; }
  [[nodiscard]] double sum() const { return sum_; }
  [[nodiscard]] double mean() const { return count_ ? sum_ / static_cast<double>(count_) : 0.0; }
  // The smallest bucket bound at or below which at least fraction q of the
  // observations lie (an upper estimate of the q-quantile); +Inf bucket -> last bound.
  [[nodiscard]] double QuantileUpperBound(double q) const;

 private:
  std::vector<double> bounds_;
  std::vector<std::uint64_t> counts_;
  std::uint64_t count_ = 0;
  double sum_ = 0;
};

}  // namespace tokenbatch
