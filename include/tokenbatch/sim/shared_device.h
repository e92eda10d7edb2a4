// SimulateSharedDevice: several models served by one process on one GPU, each
// with its own requests, batching policy and workers, sharing the device's
// memory: a deterministic discrete-event simulation on a virtual clock.
//
// Memory: every model's weights stay resident; a batch's peak is its own
// activations (GpuModel::Estimate, its weights included) plus the other models'
// weights and the activations of every batch running beside it, and it runs out
// of memory, and is bisected as the runtime bisects it (RunIsolated), when that
// passes the device's usable bytes. How the models' batches are admitted:
//   kPerModel      each model batches within its own budget, blind to the
//                  others: Infinity's design (one batch size per model), and
//                  ours with one budget per model. Two models' large batches
//                  that coincide run out of memory.
//   kSharedBudget  one DeviceMemoryBudget over the activation memory (the
//                  usable bytes less every model's weights): a batch starts
//                  only with its bytes under its model's memory cost model
//                  (GpuModel::MatchingMemoryCostModel), as serve --device-memory
//                  admits batches. Every model's policy must be a core policy.
// Compute: batches running at once share the GPU (processor sharing: with k
// running, each advances at 1/k of its speed alone), so running two models'
// batches together is not free in either design.
//
// Thread-safety: a pure function of its arguments; blocks only for the
// computation. The same inputs give the same result, bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tokenbatch/core/enum_names.h"
#include "tokenbatch/sim/batch_former.h"
#include "tokenbatch/sim/gpu_model.h"
#include "tokenbatch/sim/simulator.h"

namespace tokenbatch::sim {

// One model on the shared device.
struct ModelLane {
  std::string name;
  GpuModel gpu;                      // its latency and memory on the device (its own weights)
  PolicySpec policy;                 // how it batches
  std::vector<SimRequest> requests;  // open loop: each request's arrival_us
  std::size_t workers = 1;           // batches of this model at once, >= 1
  double weight = 1;                 // kSharedBudget: its ModelMemoryShare
  std::int64_t guaranteed_bytes = 0;
};

enum class MemorySharing { kPerModel, kSharedBudget };
inline constexpr EnumNames<MemorySharing, 2> kMemorySharingNames{
    "memory sharing", {{{MemorySharing::kPerModel, "per-model"}, {MemorySharing::kSharedBudget, "shared"}}}};

struct SharedDeviceResult {
  // Per model, in lane order: requests, completed, lost, OOM events, batches,
  // latencies (short/long, and their sorted lists), tokens/s over the whole
  // run's makespan.
  std::vector<PolicyResult> models;
  std::size_t oom_events = 0;     // all models' backend calls that ran out of memory
  std::size_t requests_lost = 0;  // all models' requests that failed alone
  std::size_t requests_rejected = 0;  // refused at enqueue (Oversize: longer than a model's budget holds)
  double makespan_s = 0;          // first arrival to last completion, all models
  double tokens_per_s = 0;        // completed tokens of all models / makespan
  // Most activation bytes held at once by the batches that fit, all models.
  std::int64_t peak_activation_bytes = 0;
  std::int64_t activation_limit_bytes = 0;  // usable bytes less every model's weights
  std::uint64_t memory_waits = 0;           // kSharedBudget: times a model waited for memory
};

// Runs `lanes` (>= 1) on one device: the first lane's GpuModel gives the
// device's usable bytes. Errors: InvalidArgument for no lanes, an empty
// workload or a request with tokens < 1, workers < 1, lanes on devices of
// different sizes, weights that leave no activation memory, a policy MakeFormer
// refuses, or under kSharedBudget a lane whose policy is not a core policy or
// whose shares DeviceMemoryBudget::Create refuses; Internal if a policy stalls.
[[nodiscard]] absl::StatusOr<SharedDeviceResult> SimulateSharedDevice(std::span<const ModelLane> lanes,
                                                                      MemorySharing sharing);

}  // namespace tokenbatch::sim
