#include "tokenbatch/core/batch_latency_model.h"

#include <algorithm>
#include <cmath>

namespace tokenbatch {
namespace {

// Below this relative spread of the costs (weighted variance / mean²) the slope
// and the intercept are not identifiable: a line through one point.
constexpr double kMinRelativeCostVariance = 1e-3;
// Below this spread a slope that comes out <= 0 is read as noise (timing jitter
// over nearly equal costs), not as run time that does not grow with cost.
constexpr double kMinSpreadForFlatTime = 0.05;

}  // namespace

OnlineLatencyFit::OnlineLatencyFit(double memory_batches, std::int64_t min_batches)
    : decay_(std::exp(-1.0 / std::max(1.0, memory_batches))), min_batches_(std::max<std::int64_t>(2, min_batches)) {}

void OnlineLatencyFit::Add(std::int64_t cost, double latency_us) {
  if (cost < 1 || !std::isfinite(latency_us) || latency_us < 0) return;
  const double x = static_cast<double>(cost);
  w_ = w_ * decay_ + 1;
  wx_ = wx_ * decay_ + x;
  wxx_ = wxx_ * decay_ + x * x;
  wy_ = wy_ * decay_ + latency_us;
  wxy_ = wxy_ * decay_ + x * latency_us;
  ++batches_;
}

BatchLatencyModel OnlineLatencyFit::model() const {
  BatchLatencyModel m;
  if (w_ <= 0 || wx_ <= 0) return m;
  const double mean_x = wx_ / w_;
  const double mean_y = wy_ / w_;
  const double var_x = wxx_ / w_ - mean_x * mean_x;
  const double cov_xy = wxy_ / w_ - mean_x * mean_y;
  // Proportional reading (all time per cost): the fallback when the line is not
  // identifiable or its intercept would be negative. Least squares through the
  // origin: Σw·x·y / Σw·x².
  const auto proportional = [&] { return BatchLatencyModel{0, std::max(0.0, wxy_ / wxx_)}; };
  if (var_x <= kMinRelativeCostVariance * mean_x * mean_x) return proportional();
  const double slope = cov_xy / var_x;
  if (slope <= 0) {
    if (var_x < kMinSpreadForFlatTime * mean_x * mean_x) return proportional();
    return BatchLatencyModel{std::max(0.0, mean_y), 0};  // time does not grow with cost
  }
  const double intercept = mean_y - slope * mean_x;
  if (intercept < 0) return proportional();
  return BatchLatencyModel{intercept, slope};
}

}  // namespace tokenbatch
