#include "service/input_limit.h"

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::server {

absl::StatusOr<bool> ResolveInputLimit(SchedulerOptions& s, std::int64_t max_positions, ShortBudget when_short) {
  const bool asked = s.max_input_tokens > 0 && (max_positions == 0 || s.max_input_tokens <= max_positions);
  if (!asked && max_positions == 0) return false;  // derived from the budget, as documented
  const std::int64_t limit = asked ? s.max_input_tokens : max_positions;
  s.max_input_tokens = limit;
  const std::int64_t fits = s.cost_model.MaxTokensWithin(s.max_batch_tokens);
  if (limit <= fits) return false;
  const std::int64_t needed = s.cost_model.SingleCost(limit);
  if (when_short == ShortBudget::kRaise) {
    s.max_batch_tokens = needed;
    return true;
  }
  return InvalidArgumentError(absl::StrCat(
      "max_batch_tokens ", s.max_batch_tokens, " (cost model ", std::string(s.cost_model.name()), ") holds one input of at most ",
      fits, " tokens, below the input limit of ", limit, " tokens (",
      asked ? "max_input_tokens" : "the model's max_seq_length",
      "): inputs the model accepts would be cut or refused by the batching budget alone. Raise max_batch_tokens to ",
      needed, " ", std::string(s.cost_model.unit()),
      fits > 0 ? absl::StrCat(", or set max_input_tokens to ", fits, " to cut longer inputs on purpose") : ""));
}

}  // namespace tokenbatch::server
