// The calibrated cost models and the budgets they recommend (pure, libtorch-free).
//
// A calibration (calibration.h) measures a grid of batch shapes and fits
//   y = c0 + c1·B·L + c2·B·L²
// to their peak memory (bytes) and latency (µs). From the memory fit and a memory
// budget, RecommendBudgets gives max_batch_tokens under each cost model, as the
// largest budget T whose worst admissible batch is still predicted to fit:
//   padded  B·Lmax <= T: the worst batch puts the budget into the longest rows,
//           since c2·B·L² = c2·(B·L)·L grows with L: Lmax = min(T, max_input_tokens),
//           B = min(max_batch_size, floor(T / Lmax)), scanning every Lmax <= that.
//   sum     Σ tokens <= T: one request of Lmax tokens plus B-1 one-token requests
//           pads to B·Lmax with B = min(max_batch_size, T - Lmax + 1); the worst Lmax
//           is found by scanning. This worst case is pessimistic by design: a `sum`
//           budget cannot stop one long request from padding many short ones.
//   memory  the budget itself, in bytes.
// Those are what the fit predicts; calibration_check.h decides whether the fit may
// be trusted and lowers the budgets to what was measured.
// Everything here is pure and thread-safe.
#pragma once

#include <cstdint>
#include <span>

#include "absl/status/statusor.h"

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

// Bounds on admissible batches, for the recommendation.
struct BudgetLimits {
  // Bytes the fitted model may predict for a forward: the limit less the loaded
  // process and headroom, shrunk by the fit's shortfall on large shapes.
  int64_t memory_budget_bytes = 0;
  int64_t max_input_tokens = 512;  // longest request (tokens) the server admits
  int64_t max_batch_size = 0;      // most requests per batch; 0 = unbounded
  // Bytes a forward may really add (limit - loaded process - headroom): what a
  // measured peak is checked against (calibration_check.h). 0: memory_budget_bytes.
  int64_t forward_limit_bytes = 0;
};

// Recommended budgets; 0 means not even a single one-token request fits.
struct Recommendation {
  int64_t sum_tokens = 0;     // max_batch_tokens for the `sum` cost model
  int64_t padded_tokens = 0;  // max_batch_tokens for the `padded` cost model
  int64_t memory_bytes = 0;   // max_batch_tokens (bytes) for the `memory` cost model
};

// The budget of one cost model (a Recommendation holds one of each).
enum class BudgetKind { kSum, kPadded, kMemory };

// Whether max_input_tokens and max_batch_size (0 = unbounded) let a batch of
// `shape` (B rows of L tokens) form at all, whatever the budget.
[[nodiscard]] bool Formable(const GridPoint& shape, const BudgetLimits& limits);

// The most rows of `seq_len` tokens a `kind` budget lets one batch pad to, capped
// at limits.max_batch_size: padded floor(T / L); sum T - L + 1 (one L-token request
// and one-token ones); memory the most B with memory.At(B, L) <= M. A double, since
// a memory budget over a fit without per-token cost admits unboundedly many (2^62).
// 0 or less: none. The one rule WorstCaseBytes and calibration_check.h share.
[[nodiscard]] double MostRows(BudgetKind kind, int64_t budget, int64_t seq_len, const QuadraticFit& memory,
                              const BudgetLimits& limits);

// The worst predicted memory (bytes) of any batch admissible under a `padded`
// (padded = true) or `sum` budget of `budget_tokens`; see the overview.
[[nodiscard]] double WorstCaseBytes(const QuadraticFit& memory, int64_t budget_tokens,
                                    bool padded, const BudgetLimits& limits);

// The largest budgets whose WorstCaseBytes stays within limits.memory_budget_bytes
// (binary search). Capped at max_batch_size · max_input_tokens when max_batch_size
// > 0 (no admissible batch is bigger) and that product is at most 2^30, else at
// 2^30 tokens. Errors: InvalidArgumentError if max_input_tokens is not in
// [1, 2^20], max_batch_size < 0 or memory_budget_bytes < 0.
[[nodiscard]] absl::StatusOr<Recommendation> RecommendBudgets(const QuadraticFit& memory,
                                                              const BudgetLimits& limits);

}  // namespace tokenbatch::backend
