// BatchFormer: one batching policy as the simulator (and `tokenbatch bench`)
// drive it. Requests go in (Enqueue), and at each decision point the former says
// which requests run now, or when to ask again (Next).
//
// Our policies and the token-budget baselines are the policy core itself
// (CoreFormer wraps a Scheduler: the same code the threaded runtime runs). Two
// baselines that are not core policies are modelled here:
//   fixed count    (Triton / Ray Serve / TorchServe style): a batch is the oldest
//                  `batch_size` requests in arrival order; dispatched when full
//                  or when its oldest request has waited max_wait.
//   sorted window  (Infinity style): once `window` requests are queued, or the
//                  oldest has waited max_wait, the oldest `window` requests are
//                  sorted by length and cut into batches of `batch_size`, which
//                  are dispatched one per free worker before anything newer.
//
// Formers are plain objects without clocks, threads or locks (not thread-safe;
// the driver serialises calls). Nothing blocks.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tokenbatch/core/scheduler.h"

namespace tokenbatch::sim {

struct FormerDecision {
  std::vector<RequestId> batch;       // empty: nothing to run now
  double fill = 0;                    // cost / budget (core) or size / batch_size
  std::int64_t cost = 0;              // core: the batch's cost in its cost model's unit; else 0
  std::optional<TimePoint> wake_at;   // when batch is empty: ask again then (unset: queue empty)
  // NextWithin only (a core former): the batch's bytes under the memory model,
  // or, with no batch, the bytes its anchor alone needs beyond the allowance.
  std::int64_t memory_bytes = 0;
  std::int64_t memory_needed = 0;
};

class BatchFormer {
 public:
  virtual ~BatchFormer() = default;
  // Errors: those of Scheduler::Enqueue (core formers); InvalidArgument for
  // tokens < 1.
  [[nodiscard]] virtual absl::Status Enqueue(RequestId id, std::int64_t tokens, TimePoint arrival) = 0;
  [[nodiscard]] virtual FormerDecision Next(TimePoint now) = 0;
  // Next with a device memory shared with other models' batches
  // (DecisionContext::memory_model): the batch fits `allowance` bytes under
  // `memory_model`. Only the core formers can; the others refuse (false), and
  // a driver must not share a memory budget with them.
  [[nodiscard]] virtual bool SupportsMemoryLimit() const { return false; }
  [[nodiscard]] virtual FormerDecision NextWithin(TimePoint now, const CostModel& /*memory_model*/,
                                                  std::int64_t /*allowance*/) {
    return Next(now);
  }
  [[nodiscard]] virtual std::size_t queued() const = 0;
  // The core formers keep the runtime's AIMD budget (AimdBudget, default
  // AimdOptions) and its adaptive batching window (OnlineLatencyFit); other
  // formers ignore both calls. `cost` is the batch's FormerDecision::cost.
  // A batch it formed ran out of memory (the first failed call: one decrease
  // from `cost`, as the runtime's worker makes it at that call).
  virtual void OnOutOfMemory(std::int64_t /*cost*/) {}
  // A batch it formed ran without running out of memory, in `latency_us`: one
  // AIMD increase, and the time is learned.
  virtual void OnBatchRun(std::int64_t /*cost*/, double /*latency_us*/) {}
  // `count` requests of a batch it formed were answered at `now`
  // (Scheduler::OnAnswered: the adaptive window learns when closed-loop clients
  // return); other formers ignore it.
  virtual void OnAnswered(TimePoint /*now*/, std::int64_t /*count*/) {}
};

// How a policy forms batches.
enum class FormerKind { kCore, kFixedCount, kSortedWindow };

// One policy of a comparison, by name.
struct PolicySpec {
  std::string name;                 // e.g. "fixed-32", "ours: length_aware"
  FormerKind kind = FormerKind::kCore;
  SchedulerOptions core;            // kCore: the scheduler's options (budget = max_batch_tokens)
  std::int64_t batch_size = 32;     // kFixedCount, kSortedWindow
  std::int64_t window = 128;        // kSortedWindow: requests sorted together
  Duration max_wait = std::chrono::milliseconds(4);  // kFixedCount, kSortedWindow
};

// Errors: InvalidArgument for batch_size or window < 1, a negative max_wait, or
// invalid core options.
[[nodiscard]] absl::StatusOr<std::unique_ptr<BatchFormer>> MakeFormer(const PolicySpec& spec);

// The comparison, every budget `budget` in its cost model's unit:
//   fixed-32        fixed count 32, max_wait 4 ms
//   seed-greedy     core fifo, sum cost, early dispatch 0.9, fixed max_wait 4 ms (the seed)
//   tei             core fifo, padded cost, max_wait 0 (TEI style)
//   infinity        sorted window of 128, batches of 32, max_wait 4 ms
//   ours-bucketed   core bucketed, `matching` cost, adaptive window of at most 4 ms
//   ours-length-aware  core length_aware (the default), `matching` cost, adaptive
//                   window of at most 4 ms
// (the adaptive window: SchedulerOptions::adaptive_wait, learned from the batch
// run times the driver reports)
// `matching` is the cost model of the backend (GpuModel::MatchingTokenCostModel).
// max_batch_size is 64 (the seed's) for the core policies.
[[nodiscard]] std::vector<PolicySpec> SeedExperimentPolicies(std::int64_t budget, const CostModel& matching);

}  // namespace tokenbatch::sim
