// The weight a replica asks its load balancer for, from its own queue, and the
// line it answers HAProxy's agent check with.
//
// A balancer that counts requests or connections (round-robin, least_conn)
// treats a 20-token query and a 2,000-token document alike, and keeps sending to
// a replica whose token queue is long. HAProxy's agent check lets the replica
// report a weight instead: HAProxy connects to the agent port, reads one line
// and applies it (HAProxy 2.6 configuration manual, "agent-check": a percentage
// of the server's configured weight, and the words "ready", "drain", "up",
// "down"). The weight here falls with how long new work would wait:
//
//   queued_batches = max(queued_tokens / max_batch_tokens,         (full batches waiting)
//                        queued_inputs / max_batch_size)
//   backlog_us     = (queued_batches × fixed_us + queued_tokens × us_per_cost) / workers
//   pressure       = max(queued_batches / workers, backlog_us / half_weight_backlog_us)
//   weight %       = clamp(round(100 / (1 + pressure)), 1, 100)
//
// The server feeds it the queue averaged over time (QueueAverage, below), so
// batches are fractional. The first term needs no learned latency (it holds
// from the first batch); the second converts the queue into estimated compute with the batch latency each
// worker learned (BatchLatencyModel, averaged over the workers that have one),
// so that replicas on slower hardware report less. queued_tokens counts real
// tokens while max_batch_tokens is in the cost model's unit, so under `padded`
// queued_batches is a lower bound. A busy replica keeps 1 %, not 0: every
// replica saturated must still share the traffic, and 0 would read as drain.
//
// Plain functions of plain values: no clock, no locks; the server calls them
// with its queue average and a metrics snapshot, tests with numbers.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tokenbatch/core/batch_latency_model.h"

namespace tokenbatch::server {

// What the weight is computed from: a replica's queue and its workers' speed.
struct ReplicaLoad {
  // Tokens and inputs waiting in the queue (not yet in a batch): a time
  // average (QueueAverage) or the queue now; >= 0.
  double queued_tokens = 0;
  double queued_inputs = 0;
  // The batch budget in the cost model's unit (the server passes the effective
  // one, which OOM can cut below --max-batch-tokens); >= 1.
  std::int64_t max_batch_tokens = 1;
  std::int64_t max_batch_size = 1;  // most inputs per batch; >= 1
  int workers = 1;                  // workers running batches concurrently; >= 1
  // Each worker's learned batch latency; all-zero entries (nothing learned yet)
  // are ignored, and without any the backlog is 0.
  std::vector<BatchLatencyModel> latency;
};

// The queue averaged over time, from samples the server takes at a short fixed
// period. An agent check reads the queue once per agent-inter (a second), and
// a queue that a batch empties and arrivals refill within tens of milliseconds
// would give each check an arbitrary point of that cycle: equal replicas would
// report very different weights. An exponentially weighted mean with time
// constant `time_constant` (each sample weighted by the time since the one
// before) reads the same for equal replicas and still follows a queue that
// grows within a second. Plain values; the caller passes `now`. Not
// thread-safe: one owner, or the owner's lock.
class QueueAverage {
 public:
  explicit QueueAverage(std::chrono::microseconds time_constant);
  // One sample of the queue at `now` (not before the previous sample's).
  void Observe(std::chrono::steady_clock::time_point now, std::int64_t queued_tokens, std::int64_t queued_inputs);
  [[nodiscard]] bool empty() const { return !last_.has_value(); }  // no sample yet
  [[nodiscard]] double tokens() const { return tokens_; }
  [[nodiscard]] double inputs() const { return inputs_; }

 private:
  double time_constant_us_;
  std::optional<std::chrono::steady_clock::time_point> last_;
  double tokens_ = 0, inputs_ = 0;
};

// The estimated compute ahead of a newly queued input, µs: the formula above.
// 0 for an empty queue or when no worker has learned its latency.
[[nodiscard]] double BacklogUs(const ReplicaLoad& load);

// The weight in percent, 1..100, from the formula above. `half_weight_backlog`
// is the backlog at which the weight halves (> 0; a smaller value is taken as 1 µs).
[[nodiscard]] int LoadWeightPercent(const ReplicaLoad& load, std::chrono::microseconds half_weight_backlog);

// Several models in one replica share its device, so their queues add up:
//   queued   = Σ_m queued_batches_m / workers_m
//              or, with a shared device memory (limit_bytes > 0), the queues'
//              bytes against it: Σ_m queued_bytes_m / limit_bytes
//   backlog  = Σ_m backlog_us_m
//   pressure = max(queued, backlog / half_weight_backlog_us)
// and the weight is 100 / (1 + pressure) as above. With one model and no
// shared memory this is LoadWeightPercent of that model.
struct ModelsLoad {
  std::vector<ReplicaLoad> models;  // >= 1
  // Each model's queue in bytes under its memory cost model (QueuedBytes), by
  // model; read only when limit_bytes > 0.
  std::vector<double> queued_bytes;
  std::int64_t limit_bytes = 0;  // the shared device memory's limit; 0: none
};
[[nodiscard]] int LoadWeightPercent(const ModelsLoad& load, std::chrono::microseconds half_weight_backlog);

// The bytes a queue of `queued_inputs` inputs holding `queued_tokens` tokens
// would take as one batch under the memory cost model c0 + c1·B·L + c2·B·L²,
// each input taken at the mean length L = tokens / inputs; 0 for an empty queue.
[[nodiscard]] double QueuedBytes(double queued_tokens, double queued_inputs, double c0, double c1, double c2);

// Where a server is in its life, as a balancer needs to know it.
enum class ServingState {
  kServing,   // taking work
  kDraining,  // still taking work, but asking balancers to send no more (/health 503)
  kStopping,  // no longer accepting connections; finishing the work it has
};

// The agent-check line for `state`, newline-terminated: "ready up N%" while
// serving (ready and up undo an earlier drain or down, so a restarted replica
// comes back), "drain" while draining (weight 0 for new traffic, requests in
// flight continue), "down" once stopping.
[[nodiscard]] std::string AgentCheckLine(ServingState state, int weight_percent);

}  // namespace tokenbatch::server
