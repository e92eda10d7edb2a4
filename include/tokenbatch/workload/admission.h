// The admission a workload goes through before any batching policy sees it, the
// same for `tokenbatch bench` and `tokenbatch simulate` so that both run the same
// requests: every request longer than the input limit is truncated to it or
// rejected, as the server's front door does (PlanAdmission, the core's rule).
//
// Pure functions of their arguments: thread-safe, nothing blocks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "tokenbatch/core/scheduler_options.h"
#include "tokenbatch/workload/workload.h"

namespace tokenbatch::workload {

// How long inputs are admitted.
struct InputLimit {
  // Longest request in tokens (special tokens included): the model's
  // max_positions or the user's --max-input-tokens. >= 1.
  std::int64_t max_input_tokens = 512;
  // kTruncate keeps the first max_input_tokens tokens; kReject refuses the
  // request. kSplit is not modelled by bench and simulate (InvalidArgument).
  OversizePolicy oversize = OversizePolicy::kTruncate;
};

// The admitted workload, index-aligned with the input.
struct AdmittedWorkload {
  // Tokens each request is queued with; 0 for a rejected one.
  std::vector<std::int64_t> tokens;
  std::size_t truncated = 0;
  std::size_t rejected = 0;
};

// Applies `limit` to every request (PlanAdmission with max_input_tokens =
// limit.max_input_tokens). Errors: InvalidArgument for max_input_tokens < 1,
// kSplit, or a request with tokens < 1 (naming its id).
[[nodiscard]] absl::StatusOr<AdmittedWorkload> Admit(const std::vector<WorkloadRequest>& requests,
                                                     const InputLimit& limit);

// The requests Admit accepted, with their admitted token counts, in order.
[[nodiscard]] std::vector<WorkloadRequest> AdmittedRequests(const std::vector<WorkloadRequest>& requests,
                                                            const AdmittedWorkload& admitted);

}  // namespace tokenbatch::workload
