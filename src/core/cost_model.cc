#include "tokenbatch/core/cost_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch {
namespace {

constexpr std::int64_t kMaxCost = std::numeric_limits<std::int64_t>::max();

std::int64_t SaturatingMul(std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  return __builtin_mul_overflow(a, b, &out) ? kMaxCost : out;
}

}  // namespace

absl::StatusOr<CostModel> CostModel::Memory(double c0, double c1, double c2) {
  for (double c : {c0, c1, c2}) {
    if (!std::isfinite(c) || c < 0) {
      return InvalidArgumentError(
          absl::StrCat("memory cost model coefficients must be finite and >= 0, got c0=", c0,
                       " c1=", c1, " c2=", c2));
    }
  }
  if (c1 == 0 && c2 == 0) {
    return InvalidArgumentError("memory cost model needs c1 > 0 or c2 > 0 (cost must grow with tokens)");
  }
  return CostModel(CostModelKind::kMemory, c0, c1, c2);
}

absl::StatusOr<CostModel> CostModel::Parse(std::string_view name) {
  if (name == "sum") return Sum();
  if (name == "padded") return Padded();
  if (name == "memory") {
    return InvalidArgumentError(
        "cost model 'memory' needs coefficients c0, c1, c2: load a calibration file");
  }
  return InvalidArgumentError(
      absl::StrCat("unknown cost model '", ToAbsl(name), "'; expected one of: sum, padded, memory"));
}

std::int64_t CostModel::Cost(const BatchShape& shape) const {
  if (shape.size <= 0) return 0;
  switch (kind_) {
    case CostModelKind::kSum:
      return shape.sum_tokens;
    case CostModelKind::kPadded:
      return SaturatingMul(shape.size, shape.max_tokens);
    case CostModelKind::kMemory: {
      const double b = static_cast<double>(shape.size);
      const double l = static_cast<double>(shape.max_tokens);
      const double bytes = c0_ + c1_ * b * l + c2_ * b * l * l;
      return bytes >= 9.0e18 ? kMaxCost : static_cast<std::int64_t>(std::ceil(bytes));
    }
  }
  return kMaxCost;
}

std::int64_t CostModel::MaxTokensWithin(std::int64_t budget) const {
  // SingleCost is monotone non-decreasing in L: binary search on [0, hi]. hi is
  // capped so that `hi - lo + 1` cannot overflow (budgets up to INT64_MAX).
  constexpr std::int64_t kMaxLength = std::int64_t{1} << 62;
  std::int64_t lo = 0;
  std::int64_t hi = kind_ == CostModelKind::kMemory ? (std::int64_t{1} << 40) : std::min(budget, kMaxLength);
  if (hi < 0) return 0;
  while (lo < hi) {
    const std::int64_t mid = lo + (hi - lo + 1) / 2;
    if (SingleCost(mid) <= budget) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

std::string_view CostModel::name() const {
  switch (kind_) {
    case CostModelKind::kSum: return "sum";
    case CostModelKind::kPadded: return "padded";
    case CostModelKind::kMemory: return "memory";
  }
  return "unknown";
}

std::string_view CostModel::unit() const {
  switch (kind_) {
    case CostModelKind::kSum: return "tokens";
    case CostModelKind::kPadded: return "padded tokens";
    case CostModelKind::kMemory: return "bytes";
  }
  return "unknown";
}

}  // namespace tokenbatch
