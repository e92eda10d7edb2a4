#include "tokenbatch/backend/calibration_model.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::backend {
namespace {

// Largest max_input_tokens RecommendBudgets scans (each budget probe is O(Lmax)).
constexpr int64_t kMaxScanTokens = int64_t{1} << 20;
constexpr int64_t kMaxBudgetTokens = int64_t{1} << 30;
// MostRows for a memory budget over a fit whose rows cost nothing.
constexpr double kUnboundedRows = 4611686018427387904.0;  // 2^62

}  // namespace

double QuadraticFit::At(int64_t batch_size, int64_t seq_len) const {
  const double bl = static_cast<double>(batch_size) * static_cast<double>(seq_len);
  return c0 + c1 * bl + c2 * bl * static_cast<double>(seq_len);
}

bool Formable(const GridPoint& shape, const BudgetLimits& limits) {
  return shape.seq_len <= limits.max_input_tokens &&
         (limits.max_batch_size == 0 || shape.batch_size <= limits.max_batch_size);
}

double MostRows(BudgetKind kind, int64_t budget, int64_t seq_len, const QuadraticFit& memory,
                const BudgetLimits& limits) {
  const double b = static_cast<double>(budget), l = static_cast<double>(seq_len);
  double rows = 0;
  switch (kind) {
    case BudgetKind::kPadded:
      rows = std::floor(b / l);
      break;
    case BudgetKind::kSum:
      rows = b - l + 1;
      break;
    case BudgetKind::kMemory: {
      const double per_row = memory.c1 * l + memory.c2 * l * l;
      if (b >= memory.c0 + per_row) rows = per_row > 0 ? std::floor((b - memory.c0) / per_row) : kUnboundedRows;
      break;
    }
  }
  return limits.max_batch_size > 0 ? std::min(rows, static_cast<double>(limits.max_batch_size)) : rows;
}

double WorstCaseBytes(const QuadraticFit& memory, int64_t budget_tokens, bool padded,
                      const BudgetLimits& limits) {
  const BudgetKind kind = padded ? BudgetKind::kPadded : BudgetKind::kSum;
  double worst = 0;
  const int64_t longest = std::min(budget_tokens, limits.max_input_tokens);
  for (int64_t l = 1; l <= longest; ++l) {
    const double b = MostRows(kind, budget_tokens, l, memory, limits);
    if (b < 1) continue;
    worst = std::max(worst, memory.At(static_cast<int64_t>(b), l));
  }
  return worst;
}

absl::StatusOr<Recommendation> RecommendBudgets(const QuadraticFit& memory,
                                                const BudgetLimits& limits) {
  if (limits.max_input_tokens < 1 || limits.max_input_tokens > kMaxScanTokens ||
      limits.max_batch_size < 0 || limits.memory_budget_bytes < 0) {
    return InvalidArgumentError(absl::StrCat(
        "bad budget limits: max_input_tokens ", limits.max_input_tokens, " (1..", kMaxScanTokens,
        "), max_batch_size ", limits.max_batch_size, " (>= 0), memory_budget_bytes ",
        limits.memory_budget_bytes, " (>= 0)"));
  }
  const double budget = static_cast<double>(limits.memory_budget_bytes);
  auto largest = [&](bool padded) -> int64_t {
    // WorstCaseBytes is non-decreasing in the budget (coefficients are >= 0 and a
    // larger budget admits every batch a smaller one does), so binary search.
    int64_t lo = 0;
    const bool bounded = limits.max_batch_size > 0 &&
                         limits.max_batch_size <= kMaxBudgetTokens / limits.max_input_tokens;  // no overflow
    int64_t hi = bounded ? limits.max_batch_size * limits.max_input_tokens : kMaxBudgetTokens;
    if (WorstCaseBytes(memory, 1, padded, limits) > budget) return 0;
    if (WorstCaseBytes(memory, hi, padded, limits) <= budget) return hi;
    lo = 1;
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      (WorstCaseBytes(memory, mid, padded, limits) <= budget ? lo : hi) = mid;
    }
    return lo;
  };
  return Recommendation{largest(false), largest(true), limits.memory_budget_bytes};
}

}  // namespace tokenbatch::backend
