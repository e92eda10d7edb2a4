// The longest input a service accepts whole, and the rule that the batching
// budget never sets it: max_batch_tokens must hold one input of that length,
// so that an input the model accepts is never cut or refused by the budget
// alone, unless the caller set max_input_tokens to ask for it.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tokenbatch/core/scheduler_options.h"
#include "tokenbatch/service/embedding_service.h"

namespace tokenbatch::server {

// Sets `scheduler.max_input_tokens` to the input limit: the option when it is
// set and no more than `max_positions`, else `max_positions` (the model's
// longest input, tokens; 0 = unbounded, and then an unset option stays
// derived from the budget, SchedulerOptions::max_input_tokens). Then, when
// one request of that many tokens costs more than max_batch_tokens under the
// cost model, refuses or raises the budget as `when_short` says
// (ShortBudget, embedding_service.h). Pure.
// Returns whether the budget was raised. Errors: InvalidArgumentError, e.g.
// "max_batch_tokens 89 (cost model sum) holds one input of at most 89 tokens,
// below the input limit of 128 tokens (the model's max_seq_length): ...".
absl::StatusOr<bool> ResolveInputLimit(SchedulerOptions& scheduler, std::int64_t max_positions,
                                       ShortBudget when_short);

}  // namespace tokenbatch::server
