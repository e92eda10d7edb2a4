#include "tokenbatch/runtime/aimd_budget.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch {

AimdBudget::AimdBudget(std::int64_t max_budget, const AimdOptions& o)
    : max_(std::max<std::int64_t>(1, max_budget)),
      floor_(o.floor > 0 ? std::min(o.floor, max_) : std::max<std::int64_t>(1, max_ / 16)),
      increase_(o.additive_increase > 0 ? o.additive_increase : std::max<std::int64_t>(1, max_ / 32)),
      factor_(o.decrease_factor),
      current_(max_) {}

absl::Status AimdBudget::Validate(std::int64_t max_budget, const AimdOptions& o) {
  if (!(o.decrease_factor > 0 && o.decrease_factor < 1)) {
    return InvalidArgumentError(absl::StrCat("aimd decrease_factor must be in (0, 1), got ", o.decrease_factor));
  }
  if (o.additive_increase < 0) {
    return InvalidArgumentError(absl::StrCat("aimd additive_increase must be >= 0, got ", o.additive_increase));
  }
  if (o.floor < 0 || o.floor > max_budget) {
    return InvalidArgumentError(
        absl::StrCat("aimd floor must be in [0, max_batch_tokens ", max_budget, "], got ", o.floor));
  }
  return absl::OkStatus();
}

void AimdBudget::OnOutOfMemory(std::int64_t failed_batch_cost) {
  const std::int64_t base = std::min(current_, std::max<std::int64_t>(1, failed_batch_cost));
  const auto shrunk = static_cast<std::int64_t>(std::floor(static_cast<double>(base) * factor_));
  current_ = std::max(floor_, shrunk);
}

void AimdBudget::OnSuccess() { current_ = increase_ >= max_ - current_ ? max_ : current_ + increase_; }

}  // namespace tokenbatch
