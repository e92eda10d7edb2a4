// AimdBudget: the effective batch budget after out-of-memory events.
//
// Additive increase, multiplicative decrease (as TCP congestion control, Jacobson
// 1988): an OOM on a batch of cost C sets the budget to max(floor, min(budget, C)
// × decrease_factor), since a batch of cost C did not fit; each successful batch
// then adds additive_increase back, up to max_batch_tokens. The budget is in the
// cost model's unit (tokens or bytes).
//
// Not thread-safe: the Batcher guards it with its mutex. No method blocks.
#pragma once

#include <cstdint>

#include "absl/status/status.h"

namespace tokenbatch {

struct AimdOptions {
  // Multiplier applied on OOM, in (0, 1). Default halves the budget.
  double decrease_factor = 0.5;
  // Budget added back after each successful batch. 0 = max_batch_tokens / 32, so
  // a halved budget recovers in 16 successful batches.
  std::int64_t additive_increase = 0;
  // Lowest budget the decrease goes to. 0 = max_batch_tokens / 16 (at least 1).
  std::int64_t floor = 0;
};

class AimdBudget {
 public:
  // `max_budget` >= 1 is the configured max_batch_tokens.
  AimdBudget(std::int64_t max_budget, const AimdOptions& options);

  // Errors: InvalidArgument naming the field (factor outside (0, 1), negative
  // increase or floor, floor above max_budget).
  [[nodiscard]] static absl::Status Validate(std::int64_t max_budget, const AimdOptions& options);

  [[nodiscard]] std::int64_t current() const { return current_; }
  [[nodiscard]] std::int64_t max_budget() const { return max_; }
  // A batch of cost `failed_batch_cost` ran out of memory.
  void OnOutOfMemory(std::int64_t failed_batch_cost);
  // A batch completed without running out of memory.
  void OnSuccess();

 private:
  std::int64_t max_;
  std::int64_t floor_;
  std::int64_t increase_;
  double factor_;
  std::int64_t current_;
};

}  // namespace tokenbatch
