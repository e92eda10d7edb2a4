// Calibration: measuring a model over a grid of batch shapes and fitting its cost.
//
// `tokenbatch calibrate` runs the encoder over a grid of batch shapes (B requests
// of L tokens each), measures each shape's latency (µs) and peak memory (bytes
// above the level before the forward; see Encoder::ResetPeakMemory), and fits
//
//   memory  bytes = c0 + c1·B·L + c2·B·L²   (the core's `memory` cost model)
//   latency µs    = a  + b·B·L  + c·B·L²
//
// by relative least squares with non-negative coefficients (the core's
// CostModel::Memory refuses negative ones). c1 covers per-token activations (hidden states, MLP
// intermediates), c2 eager attention's [B, heads, L, L] scores. What a fit may be
// trusted for, and the budgets it recommends, are in calibration_model.h (pure,
// libtorch-free, shared with `serve`).
// Functions here are pure (except RunCalibrationGrid, which runs the model) and
// thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tokenbatch/backend/calibration_check.h"
#include "tokenbatch/backend/calibration_model.h"
#include "tokenbatch/backend/encoder.h"

namespace tokenbatch::backend {

// Fits y ≈ c0 + c1·B·L + c2·B·L² to (B, L, y) points by relative least squares
// (minimises Σ ((fit - y) / max(|y|, 1))², since grids span orders of magnitude)
// subject to c0, c1, c2 >= 0 (exact: solves every subset of free coefficients
// with LAPACK's least squares via libtorch and keeps the best feasible one). `y[i]` belongs to
// `shapes[i]`. Errors: InvalidArgumentError if sizes differ, fewer than 3 points,
// or a B or L < 1; BackendError if the solver fails.
[[nodiscard]] absl::StatusOr<QuadraticFit> FitQuadraticCost(std::span<const GridPoint> shapes,
                                                            std::span<const double> y);

// What the recommendation may use, and how strictly it judges the fits.
struct RecommendOptions {
  int64_t memory_limit_bytes = 0;    // memory the serving process may use
  double headroom = 0.10;            // fraction of the limit kept free
  int64_t loaded_process_bytes = 0;  // the process with the model loaded, between forwards
  int64_t max_input_tokens = 512;    // longest request the server admits
  int64_t max_batch_size = 0;        // most requests per batch; 0 = unbounded
  int64_t peak_resolution_bytes = kCpuPeakResolutionBytes;  // PeakResolutionBytes(device)
  bool allow_extrapolation = false;  // budgets beyond the measured shapes (calibration_check.h)
  FitBounds bounds;
};

// A calibration's fits and recommendation, or why it recommends nothing.
struct CalibrationResult {
  std::vector<GridPoint> measured;  // the points whose peak is at or above the resolution
  QuadraticFit memory;              // fitted on `measured`
  QuadraticFit latency;             // fitted on every point
  FitJudgement memory_judgement, latency_judgement;
  double forward_bytes = 0;  // limit × (1 - headroom) - loaded process
  double shortfall = 0;      // the memory fit's worst relative shortfall on large shapes
  // memory_budget_bytes = forward_bytes × (1 - shortfall), lowered further below
  // any measured shape that used more than forward_bytes (see notes).
  BudgetLimits limits;
  Recommendation fitted;     // what the fit alone allows (RecommendBudgets)
  Recommendation recommendation;  // lowered to the measurements (LimitToMeasurements)
  std::vector<std::string> notes;  // one line per budget lowered, and why
  // Non-empty when the calibration must not recommend: why, and what to try. The
  // recommendation is then all zeros; the fits are kept for the report.
  std::string refusal;
};

// The whole recommendation from a measured grid: drops peaks below the
// resolution, fits memory (on the measured peaks) and latency (on all points),
// judges both on the large shapes (JudgeFit), then recommends (RecommendBudgets),
// lowers to the measurements (LimitToMeasurements) and checks the result
// (CheckRecommendation). A fit that fails its bound, or an extrapolation not
// allowed, sets `refusal` rather than an error. Errors: InvalidArgumentError when
// the limit leaves no memory for forwards or the options are out of range;
// FitQuadraticCost's errors other than too few points.
[[nodiscard]] absl::StatusOr<CalibrationResult> RecommendFromGrid(std::span<const GridPoint> points,
                                                                  const RecommendOptions& options);

// How to run the grid.
struct GridOptions {
  std::vector<int64_t> batch_sizes = {1, 2, 4, 8, 16, 32};
  std::vector<int64_t> seq_lens = {16, 32, 64, 128, 256, 512};
  int64_t max_tokens_per_shape = 16384;  // skip shapes with B·L above this
  int warmup = 1;                        // untimed runs per shape (TorchScript profiles)
  int repeats = 3;                       // timed runs per shape; the median is kept
  uint64_t seed = 1;                     // for the random token ids
  int64_t vocab_size = 1000;             // ids are drawn from [0, vocab_size)
};

// The shapes RunCalibrationGrid will measure, in order (B·L ascending).
[[nodiscard]] std::vector<GridPoint> PlanGrid(const GridOptions& options);

// Measures every planned shape with `encoder`: warmup runs, then for each timed
// run ResetPeakMemory / Embed / PeakMemoryBytes; keeps the median latency and the
// largest peak. `progress(done, total, point)` is called after each shape (may be
// empty). Blocks for the whole grid (minutes for a MiniLM-sized model on 2 cores).
// Not thread-safe (peak memory is process-wide). Errors: those of Embed and of
// the peak-memory probe; an OutOfMemoryError names the shape.
[[nodiscard]] absl::StatusOr<std::vector<GridPoint>> RunCalibrationGrid(
    const Encoder& encoder, const GridOptions& options,
    const std::function<void(size_t, size_t, const GridPoint&)>& progress);

}  // namespace tokenbatch::backend
