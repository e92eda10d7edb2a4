// Admission: what happens to a request before it is queued.
//
// PlanAdmission applies the oversize policy to a request's token count: admit it
// as is, truncate it, split it into sliding windows, or reject it with a typed
// Oversize error. It is a pure function: thread-safe, never blocks. The runtime
// calls it at submit and queues what it returns; a rejected request is never
// queued and stays with its caller.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "tokenbatch/core/request.h"
#include "tokenbatch/core/scheduler_options.h"

namespace tokenbatch {

struct AdmissionPlan {
  enum class Action { kAdmit, kTruncate, kSplit };
  Action action = Action::kAdmit;
  // The token ranges of the original request to queue, each as one request:
  //   kAdmit    one window [0, tokens)
  //   kTruncate one window [0, max_input_tokens)
  //   kSplit    sliding windows covering [0, tokens), see SlidingWindows()
  std::vector<TokenWindow> windows;
};

// Errors: InvalidArgument if tokens < 1; QueueFull (under kSplit) if the windows
// outnumber max_queue_size, so they could never be queued; Oversize (under kReject) naming the
// token count, the limit and the budget, e.g. "request of 5000 tokens exceeds
// max_input_tokens 4096 (max_batch_tokens 4096, cost model padded)".
[[nodiscard]] absl::StatusOr<AdmissionPlan> PlanAdmission(std::int64_t tokens,
                                                          const SchedulerOptions& options);

// The queue limits, as one rule for every queue that enforces them (the
// Scheduler's, and the Batcher's intake plus Scheduler): QueueFull if adding
// `requests` requests of `tokens` tokens in all to a queue holding
// `queued_requests` requests and `queued_tokens` tokens would pass
// options.max_queue_size or options.max_queued_tokens (0 = no limit), naming
// the limit; OK otherwise.
[[nodiscard]] absl::Status CheckQueueCapacity(const SchedulerOptions& options, std::size_t queued_requests,
                                              std::int64_t queued_tokens, std::size_t requests, std::int64_t tokens);

// Windows of `window` tokens whose starts are `window - overlap` apart, covering
// [0, tokens); the last one may be shorter. Requires 0 <= overlap < window and
// tokens >= 1. Example: tokens 10, window 4, overlap 1 -> [0,4) [3,7) [6,10).
[[nodiscard]] std::vector<TokenWindow> SlidingWindows(std::int64_t tokens, std::int64_t window,
                                                      std::int64_t overlap);

}  // namespace tokenbatch
