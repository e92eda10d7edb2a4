#include "tokenbatch/core/admission.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch {

absl::Status CheckQueueCapacity(const SchedulerOptions& options, std::size_t queued_requests,
                                std::int64_t queued_tokens, std::size_t requests, std::int64_t tokens) {
  if (options.max_queue_size > 0 && queued_requests + requests > options.max_queue_size) {
    return QueueFullError(
        absl::StrCat("queue full: ", queued_requests, " requests queued, max_queue_size ", options.max_queue_size));
  }
  if (options.max_queued_tokens > 0 && tokens > options.max_queued_tokens - queued_tokens) {
    return QueueFullError(absl::StrCat("queue full: ", queued_tokens, " tokens queued + ", tokens,
                                       " > max_queued_tokens ", options.max_queued_tokens));
  }
  return absl::OkStatus();
}

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
    case OversizePolicy::kSplit: {
      // Refuse before building the windows when they could never be queued.
      const std::int64_t stride = limit - options.split_overlap_tokens;
      const std::int64_t count = 1 + (tokens - limit + stride - 1) / stride;
      if (options.max_queue_size > 0 && static_cast<std::uint64_t>(count) > options.max_queue_size) {
        return QueueFullError(absl::StrCat("request of ", tokens, " tokens splits into ", count,
                                           " windows, more than max_queue_size ", options.max_queue_size));
      }
      plan.action = AdmissionPlan::Action::kSplit;
      plan.windows = SlidingWindows(tokens, limit, options.split_overlap_tokens);
      return plan;
    }
  }
  return InvalidArgumentError("unknown oversize policy");
}

std::vector<TokenWindow> SlidingWindows(std::int64_t tokens, std::int64_t window, std::int64_t overlap) {
  std::vector<TokenWindow> windows;
  if (tokens < 1 || window < 1 || overlap < 0 || overlap >= window) return windows;
  const std::int64_t stride = window - overlap;
  for (std::int64_t begin = 0;; begin += stride) {
    const std::int64_t end = window >= tokens - begin ? tokens : begin + window;  // no overflow
    windows.push_back({begin, end});
    if (end == tokens) break;
  }
  return windows;
}

}  // namespace tokenbatch
