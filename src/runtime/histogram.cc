#include "tokenbatch/runtime/histogram.h"

#include <algorithm>
#include <cassert>
#include <utility>

namespace tokenbatch {

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {
  assert(std::is_sorted(bounds_.begin(), bounds_.end()));
}

Histogram Histogram::PowersOfTwo(double max) {
  std::vector<double> bounds;
  for (double b = 1; b <= max; b *= 2) bounds.push_back(b);
  return Histogram(std::move(bounds));
}

Histogram Histogram::Exponential(double start, double factor, int count) {
  std::vector<double> bounds;
  double b = start;
  for (int i = 0; i < count; ++i, b *= factor) bounds.push_back(b);
  return Histogram(std::move(bounds));
}

Histogram Histogram::Ratio() {
  std::vector<double> bounds;
  for (int i = 1; i <= 10; ++i) bounds.push_back(i / 10.0);
  return Histogram(std::move(bounds));
}

void Histogram::Observe(double value) {
  const auto it = std::lower_bound(bounds_.begin(), bounds_.end(), value);
  ++counts_[static_cast<size_t>(it - bounds_.begin())];
  ++count_;
  sum_ += value;
}

double Histogram::QuantileUpperBound(double q) const {
  if (count_ == 0 || bounds_.empty()) return 0;
  const double target = q * static_cast<double>(count_);
  std::uint64_t seen = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    seen += counts_[i];
    if (static_cast<double>(seen) >= target) return bounds_[i];
  }
  return bounds_.back();
}

}  // namespace tokenbatch
