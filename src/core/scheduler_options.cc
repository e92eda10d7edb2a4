#include "tokenbatch/core/scheduler_options.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch {

absl::Status Validate(const SchedulerOptions& o) {
  if (o.max_batch_tokens < 1) {
    return InvalidArgumentError(absl::StrCat("max_batch_tokens must be >= 1, got ", o.max_batch_tokens));
  }
  if (o.cost_model.MaxTokensWithin(o.max_batch_tokens) < 1) {
    return InvalidArgumentError(absl::StrCat("max_batch_tokens ", o.max_batch_tokens, " ",
                                             ToAbsl(o.cost_model.unit()), " cannot hold even a 1-token request under the ",
                                             ToAbsl(o.cost_model.name()), " cost model"));
  }
  if (o.max_batch_size < 1) {
    return InvalidArgumentError(absl::StrCat("max_batch_size must be >= 1, got ", o.max_batch_size));
  }
  if (o.max_wait < Duration::zero()) {
    return InvalidArgumentError("max_wait must be >= 0");
  }
  if (o.arrival_rate_window <= Duration::zero()) {
    return InvalidArgumentError("arrival_rate_window must be > 0");
  }
  if (!(o.early_dispatch_fraction > 0 && o.early_dispatch_fraction <= 1)) {
    return InvalidArgumentError(
        absl::StrCat("early_dispatch_fraction must be in (0, 1], got ", o.early_dispatch_fraction));
  }
  for (size_t i = 0; i < o.bucket_bounds.size(); ++i) {
    if (o.bucket_bounds[i] < 1 || (i > 0 && o.bucket_bounds[i] <= o.bucket_bounds[i - 1])) {
      return InvalidArgumentError("bucket_bounds must be >= 1 and strictly ascending");
    }
  }
  if (o.length_aware_lookahead < 1) {
    return InvalidArgumentError(
        absl::StrCat("length_aware_lookahead must be >= 1, got ", o.length_aware_lookahead));
  }
  if (o.anchor_slack_per_token < Duration::zero()) {
    return InvalidArgumentError(absl::StrCat("anchor_slack_per_token must be >= 0, got ",
                                             o.anchor_slack_per_token.count(), " ns"));
  }
  if (!(o.length_aware_min_padding_efficiency >= 0 && o.length_aware_min_padding_efficiency < 1)) {
    return InvalidArgumentError(absl::StrCat("length_aware_min_padding_efficiency must be in [0, 1), got ",
                                             o.length_aware_min_padding_efficiency));
  }
  if (o.max_input_tokens < 0) {
    return InvalidArgumentError(absl::StrCat("max_input_tokens must be >= 0, got ", o.max_input_tokens));
  }
  const std::int64_t window = EffectiveMaxInputTokens(o);
  if (o.oversize == OversizePolicy::kSplit &&
      (o.split_overlap_tokens < 0 || o.split_overlap_tokens >= window)) {
    return InvalidArgumentError(absl::StrCat("split_overlap_tokens must be in [0, ", window,
                                             "), got ", o.split_overlap_tokens));
  }
  if (o.max_queued_tokens < 0) {
    return InvalidArgumentError(absl::StrCat("max_queued_tokens must be >= 0, got ", o.max_queued_tokens));
  }
  return absl::OkStatus();
}

std::int64_t EffectiveMaxInputTokens(const SchedulerOptions& o) {
  const std::int64_t fits = o.cost_model.MaxTokensWithin(o.max_batch_tokens);
  return o.max_input_tokens > 0 && o.max_input_tokens < fits ? o.max_input_tokens : fits;
}

}  // namespace tokenbatch
