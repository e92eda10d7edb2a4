#include "tokenbatch/core/arrival_wake_rule.h"

namespace tokenbatch {

bool ArrivalWakeRule::OnArrival(std::int64_t tokens, int priority, TimePoint arrival) {
  if (always_ || priority > top_.priority) return true;
  if (priority < top_.priority) return false;
  if (arrival < top_.oldest_arrival) return true;
  top_.shape = top_.shape.With(tokens);
  const std::int64_t cost = cost_model_->Cost(top_.shape);
  return top_.shape.size >= max_batch_size_ || static_cast<double>(cost) >= fill_threshold_ ||
         (hold_ && hold_->MayEnd(top_.shape.size, cost));
}

}  // namespace tokenbatch
