#include "tokenbatch/core/admission.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch {

absl::StatusOr<AdmissionPlan> PlanAdmission(std::int64_t tokens, const SchedulerOptions& options) {
  if (tokens < 1) {
    return InvalidArgumentError(absl::StrCat("request must have >= 1 token, got ", tokens));
  }
  const std::int64_t limit = EffectiveMaxInputTokens(options);
  AdmissionPlan plan;
  if (tokens <= limit) {
    plan.windows.push_back({0, tokens});
    return plan;
  }
  switch (options.oversize) {
    case OversizePolicy::kReject:
      return OversizeError(absl::StrCat(
          "request of ", tokens, " tokens exceeds max_input_tokens ", limit, " (max_batch_tokens ",
          options.max_batch_tokens, " ", ToAbsl(options.cost_model.unit()), ", cost model ",
          ToAbsl(options.cost_model.name()), ")"));
    case OversizePolicy::kTruncate:
      plan.action = AdmissionPlan::Action::kTruncate;
      plan.windows.push_back({0, limit});
      return plan;
    case OversizePolicy::kSplit:
      plan.action = AdmissionPlan::Action::kSplit;
      plan.windows = SlidingWindows(tokens, limit, options.split_overlap_tokens);
      return plan;
  }
  return InvalidArgumentError("unknown oversize policy");
}

std::vector<TokenWindow> SlidingWindows(std::int64_t tokens, std::int64_t window, std::int64_t overlap) {
  std::vector<TokenWindow> windows;
  if (tokens < 1 || window < 1 || overlap < 0 || overlap >= window) return windows;
  const std::int64_t stride = window - overlap;
  for (std::int64_t begin = 0;; begin += stride) {
    const std::int64_t end = std::min(begin + window, tokens);
    windows.push_back({begin, end});
    if (end == tokens) break;
  }
  return windows;
}

}  // namespace tokenbatch
