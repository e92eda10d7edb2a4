// Calibration: what batch budget fits this device for this model.
//
// `tokenbatch calibrate` runs the encoder over a grid of batch shapes (B requests
// of L tokens each), measures each shape's latency (µs) and peak memory (bytes
// above the level before the forward; see TorchEncoder::ResetPeakMemory), and fits
//
//   memory  bytes = c0 + c1·B·L + c2·B·L²   (the core's `memory` cost model)
//   latency µs    = a  + b·B·L  + c·B·L²
//
// by relative least squares with non-negative coefficients (the core's
// CostModel::Memory refuses negative ones). c1 covers per-token activations (hidden states, MLP
// intermediates), c2 eager attention's [B, heads, L, L] scores.
//
// From the memory fit and a memory budget it recommends max_batch_tokens under
// each cost model, as the largest budget T whose worst admissible batch still fits:
//   padded  B·Lmax <= T: the worst batch puts the budget into the longest rows,
//           since c2·B·L² = c2·(B·L)·L grows with L: Lmax = min(T, max_input_tokens),
//           B = min(max_batch_size, floor(T / Lmax)), scanning every Lmax <= that.
//   sum     Σ tokens <= T: one request of Lmax tokens plus B-1 one-token requests
//           pads to B·Lmax with B = min(max_batch_size, T - Lmax + 1); the worst Lmax
//           is found by scanning. This worst case is pessimistic by design: a `sum`
//           budget cannot stop one long request from padding many short ones.
//   memory  the budget itself, in bytes.
// Functions here are pure (except RunCalibrationGrid, which runs the model) and
// thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "tokenbatch/backend/encoder.h"

namespace tokenbatch::backend {

// One measured batch shape.
struct GridPoint {
  int64_t batch_size = 0;  // B
  int64_t seq_len = 0;     // L, tokens per request (no padding: all rows length L)
  double latency_us = 0;   // median wall time of Embed over the timed repeats
  int64_t peak_bytes = 0;  // peak memory above the pre-forward level
};

// y = c0 + c1·x1 + c2·x2 with x1 = B·L, x2 = B·L² (units: those of y).
struct QuadraticFit {
  double c0 = 0, c1 = 0, c2 = 0;
  double max_relative_error = 0;  // max over points of |fit - y| / max(y, 1)
  double rms_relative_error = 0;  // root mean square of the same ratio
  // max over points of (y - fit) / max(y, 1), or 0: how far the fit falls short on
  // the dangerous side.
  double max_underestimate = 0;

  // The fitted value at B, L.
  [[nodiscard]] double At(int64_t batch_size, int64_t seq_len) const;
};

// Fits y ≈ c0 + c1·B·L + c2·B·L² to (B, L, y) points by relative least squares
// (minimises Σ ((fit - y) / max(|y|, 1))², since grids span orders of magnitude)
// subject to c0, c1, c2 >= 0 (exact: solves every subset of free coefficients
// with LAPACK's least squares via libtorch and keeps the best feasible one). `y[i]` belongs to
// `shapes[i]`. Errors: InvalidArgumentError if sizes differ, fewer than 3 points,
// or a B or L < 1; BackendError if the solver fails.
[[nodiscard]] absl::StatusOr<QuadraticFit> FitQuadraticCost(std::span<const GridPoint> shapes,
                                                            std::span<const double> y);

// Bounds on admissible batches, for the recommendation.
struct BudgetLimits {
  int64_t memory_budget_bytes = 0;  // bytes a forward may add (limit - model - headroom)
  int64_t max_input_tokens = 512;   // longest request (tokens) the server admits
  int64_t max_batch_size = 0;       // most requests per batch; 0 = unbounded
};

// Recommended budgets; 0 means not even a single one-token request fits.
struct Recommendation {
  int64_t sum_tokens = 0;     // max_batch_tokens for the `sum` cost model
  int64_t padded_tokens = 0;  // max_batch_tokens for the `padded` cost model
  int64_t memory_bytes = 0;   // max_batch_tokens (bytes) for the `memory` cost model
};

// The worst predicted memory (bytes) of any batch admissible under a `padded`
// (padded = true) or `sum` budget of `budget_tokens`; see the header overview.
[[nodiscard]] double WorstCaseBytes(const QuadraticFit& memory, int64_t budget_tokens,
                                    bool padded, const BudgetLimits& limits);

// The largest budgets whose WorstCaseBytes stays within limits.memory_budget_bytes
// (binary search). Capped at max_batch_size · max_input_tokens when max_batch_size
// > 0 (no admissible batch is bigger), else at 2^30 tokens. Errors: InvalidArgumentError if
// max_input_tokens < 1, max_batch_size < 0 or memory_budget_bytes < 0.
[[nodiscard]] absl::StatusOr<Recommendation> RecommendBudgets(const QuadraticFit& memory,
                                                              const BudgetLimits& limits);

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
    const TorchEncoder& encoder, const GridOptions& options,
    const std::function<void(size_t, size_t, const GridPoint&)>& progress);

}  // namespace tokenbatch::backend
