// The load-balancer weight and agent-check line (see load_weight.h).
#include "api/load_weight.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace tokenbatch::server {
namespace {

// How many full batches the queue holds: its tokens against the budget, or its
// inputs against the batch size, whichever fills batches first.
double QueuedBatches(const ReplicaLoad& load) {
  const double by_tokens =
      std::max(load.queued_tokens, 0.0) / static_cast<double>(std::max<std::int64_t>(load.max_batch_tokens, 1));
  const double by_inputs =
      std::max(load.queued_inputs, 0.0) / static_cast<double>(std::max<std::int64_t>(load.max_batch_size, 1));
  return std::max(by_tokens, by_inputs);
}

}  // namespace

QueueAverage::QueueAverage(std::chrono::microseconds time_constant)
    : time_constant_us_(std::max(1.0, static_cast<double>(time_constant.count()))) {}

void QueueAverage::Observe(std::chrono::steady_clock::time_point now, std::int64_t queued_tokens,
                           std::int64_t queued_inputs) {
  const double tokens = static_cast<double>(std::max<std::int64_t>(queued_tokens, 0));
  const double inputs = static_cast<double>(std::max<std::int64_t>(queued_inputs, 0));
  if (!last_) {
    tokens_ = tokens;
    inputs_ = inputs;
    last_ = now;
    return;
  }
  const double dt_us = std::max(0.0, std::chrono::duration<double, std::micro>(now - *last_).count());
  const double keep = std::exp(-dt_us / time_constant_us_);
  tokens_ = keep * tokens_ + (1 - keep) * tokens;
  inputs_ = keep * inputs_ + (1 - keep) * inputs;
  last_ = std::max(*last_, now);
}

double BacklogUs(const ReplicaLoad& load) {
  if (QueuedBatches(load) <= 0) return 0;
  double fixed_us = 0, us_per_cost = 0;
  int learned = 0;
  for (const BatchLatencyModel& m : load.latency) {
    if (m.fixed_us <= 0 && m.us_per_cost <= 0) continue;
    fixed_us += m.fixed_us;
    us_per_cost += m.us_per_cost;
    ++learned;
  }
  if (learned == 0) return 0;
  // The mean worker's model: batches go to whichever worker is free.
  const BatchLatencyModel mean{fixed_us / learned, us_per_cost / learned};
  // Fractional batches: the queue is a time average, in which a partial batch
  // counts by how full and how often it was there.
  const double compute_us = QueuedBatches(load) * mean.fixed_us + load.queued_tokens * mean.us_per_cost;
  return compute_us / std::max(load.workers, 1);
}

int LoadWeightPercent(const ReplicaLoad& load, std::chrono::microseconds half_weight_backlog) {
  const double half_us = static_cast<double>(std::max<std::int64_t>(half_weight_backlog.count(), 1));
  const double pressure = std::max(QueuedBatches(load) / std::max(load.workers, 1), BacklogUs(load) / half_us);
  const double weight = std::round(100.0 / (1.0 + pressure));
  return static_cast<int>(std::clamp(weight, 1.0, 100.0));
}

int LoadWeightPercent(const ModelsLoad& load, std::chrono::microseconds half_weight_backlog) {
  const double half_us = static_cast<double>(std::max<std::int64_t>(half_weight_backlog.count(), 1));
  double queued = 0, backlog_us = 0, bytes = 0;
  for (std::size_t m = 0; m < load.models.size(); ++m) {
    const ReplicaLoad& model = load.models[m];
    queued += QueuedBatches(model) / std::max(model.workers, 1);
    backlog_us += BacklogUs(model);
    if (m < load.queued_bytes.size()) bytes += std::max(load.queued_bytes[m], 0.0);
  }
  if (load.limit_bytes > 0) queued = bytes / static_cast<double>(load.limit_bytes);
  const double pressure = std::max(queued, backlog_us / half_us);
  const double weight = std::round(100.0 / (1.0 + pressure));
  return static_cast<int>(std::clamp(weight, 1.0, 100.0));
}

double QueuedBytes(double queued_tokens, double queued_inputs, double c0, double c1, double c2) {
  if (queued_tokens <= 0 || queued_inputs <= 0) return 0;
  const double mean_length = queued_tokens / queued_inputs;
  return c0 + c1 * queued_tokens + c2 * queued_tokens * mean_length;
}

std::string AgentCheckLine(ServingState state, int weight_percent) {
  switch (state) {
    case ServingState::kServing:
      return absl::StrCat("ready up ", std::clamp(weight_percent, 1, 100), "%\n");
    case ServingState::kDraining:
      return "drain\n";
    case ServingState::kStopping:
      break;
  }
  return "down\n";
}

}  // namespace tokenbatch::server
