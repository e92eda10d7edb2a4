// Packing policies (internal): form one batch from one priority level.
//
// Each function starts from an anchor request (always included), adds candidates
// while the batch cost stays within the budget and max_batch_size, and reports why
// it stopped. They only read the queue; the Scheduler removes what it dispatches.
// Pure functions of their arguments: no clock, no state, not thread-safe only in
// the sense that the queue must not change during the call.
#pragma once

#include <cstdint>
#include <vector>

#include "core/request_queue.h"
#include "tokenbatch/core/cost_model.h"

namespace tokenbatch::internal {

struct BatchLimits {
  const CostModel* cost_model = nullptr;
  std::int64_t budget = 0;          // cost units, >= 1
  std::int64_t max_batch_size = 0;  // requests, >= 1
  // PackLengthAware only: a candidate that would bring the batch's padding
  // efficiency (Σ tokens / B·Lmax) below this is not added. 0 = no floor.
  double min_padding_efficiency = 0;
  // Set: a second limit, in bytes under this model (DecisionContext::memory_model):
  // no candidate is added that would bring the batch's bytes above
  // memory_allowance. The anchor is added regardless; PackResult says its bytes.
  const CostModel* memory_model = nullptr;
  std::int64_t memory_allowance = 0;
};

struct PackResult {
  std::vector<RequestId> ids;  // anchor first
  BatchShape shape;
  std::int64_t cost = 0;
  bool budget_full = false;  // a candidate was left out because it would exceed the budget (or the memory)
  bool size_full = false;    // max_batch_size reached
  // With BatchLimits::memory_model: the batch's bytes, and the anchor's alone.
  std::int64_t memory_bytes = 0;
  std::int64_t anchor_memory_bytes = 0;
};

// Arrival order from the level's oldest; stops at the first request that does not
// fit (the seed's greedy rule: no skipping).
[[nodiscard]] PackResult PackFifo(const PriorityLevel& level, const BatchLimits& limits);

// Arrival order within one bucket, from its oldest; stops at the first request
// that does not fit.
[[nodiscard]] PackResult PackBucket(const ArrivalIndex& bucket, const BatchLimits& limits);

// The level's anchor (PriorityLevel::anchor(): the oldest request, or the
// earliest virtual deadline) plus the requests nearest to its length (ties: the
// older first), skipping candidates that do not fit, examining at most
// `lookahead` candidates.
[[nodiscard]] PackResult PackLengthAware(const PriorityLevel& level, const BatchLimits& limits,
                                         std::int64_t lookahead);

}  // namespace tokenbatch::internal
