// Simulate: a deterministic discrete-event simulation of one batching policy on
// a modelled GPU, on a virtual clock.
//
// Events are request arrivals, batch completions and the former's wake-ups, kept
// in time order with ties broken by insertion order; virtual time is integral
// nanoseconds. `workers` model instances each run one batch at a time. Whenever a
// worker is free, the former (the policy core for our policies) is asked for the
// next batch; the GpuModel gives the batch's latency and peak memory. A batch
// whose peak exceeds the device's usable memory runs out of memory, as a CUDA
// OOM would, and is handled as the runtime handles it (RunIsolated, AimdBudget):
// the failed call costs GpuModel::failed_forward_fraction() of its forward, its
// halves are retried recursively, a single request that still does not fit is
// lost, and a core policy's budget is cut once for the batch (AIMD) at its
// dispatch. With shared memory a bisected call is judged against the batches
// running when its batch was dispatched, and a request that does not fit beside
// them is lost, as RunIsolated loses it. A request a former refuses at enqueue
// (e.g. Oversize) is counted as rejected. No wall clock, no unseeded randomness, no unordered iteration: the
// same inputs give the same result, bit for bit.
//
// Threads per forward (SimOptions::intra_op): the runtime's IntraOpWidth gives
// each batch 1 thread or every core, from the load the simulator sees, exactly
// as the runtime's workers ask it; a batch's latency is the GpuModel's,
// scaled by how much faster a forward of that width runs than one of the
// width the model's latencies were measured at (IntraOpSpeedup).
//
// Arrivals: open loop uses each request's arrival_us; closed loop (clients > 0)
// starts `clients` requests at t = 0 and sends the next one (workload order)
// when one finishes, fails or is rejected.
//
// Thread-safety: a pure function of its arguments; Simulate blocks only for the
// computation (milliseconds per thousand requests).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tokenbatch/core/intra_op_width.h"
#include "tokenbatch/sim/batch_former.h"
#include "tokenbatch/sim/gpu_model.h"

namespace tokenbatch::sim {

// What the simulator needs to know about one request.
struct SimRequest {
  std::int64_t tokens = 0;       // >= 1
  bool is_long = false;          // latency is reported per class
  std::int64_t arrival_us = 0;   // open loop only
};

// How a CPU forward's time scales with its threads: on `cores` threads it runs
// `speedup` times as fast as on one (Amdahl's law, fitted to the two widths
// the runtime uses). The GpuModel's latencies are for forwards of
// `model_threads` threads (1 or cores: a calibration's `threads`).
struct IntraOpSpeedup {
  double speedup = 1.5;   // >= 1
  int model_threads = 1;  // 1 or IntraOpOptions::cores
};

struct SimOptions {
  std::size_t workers = 1;  // model instances (GPUs), >= 1
  std::size_t clients = 0;  // 0: open loop (arrival_us); else closed loop with this many clients
  // The workers share one memory (several forwards in one CPU process, or on
  // one GPU): a batch's peak is its own plus the activations of the batches
  // running beside it, and a batch runs out of memory when that sum passes the
  // usable memory. A batch holds its largest activations for its whole run
  // (an upper bound of what it holds at any instant). false: each worker is its
  // own device.
  bool shared_memory = false;
  // Reference budget for `batches_over_budget`: a batch is over it when its cost
  // under `over_budget_model` (the backend's matching model) exceeds this.
  std::int64_t over_budget_limit = 4096;
  CostModel over_budget_model = CostModel::Padded();
  // Unset: each batch runs at the GpuModel's latency. Set: workers must equal
  // intra_op->cores, and each batch's threads follow the load (see above).
  std::optional<IntraOpOptions> intra_op;
  IntraOpSpeedup intra_op_speedup;
};

// One dispatched batch.
struct BatchRecord {
  std::int64_t start_ns = 0;
  std::int64_t size = 0, max_tokens = 0, sum_tokens = 0;
  std::int64_t cost = 0;      // under over_budget_model
  double latency_us = 0;      // retries included
  int threads = 0;            // with SimOptions::intra_op: the threads it ran on
  std::int64_t peak_bytes = 0;  // largest peak any call of the batch asked for
  bool oom = false;             // any call ran out of memory
};

// Percentiles (nearest rank) of one class's latencies, ms; 0 when the class is empty.
struct LatencySummary {
  double p50 = 0, p95 = 0, p99 = 0;
  std::size_t count = 0;
};

struct PolicyResult {
  std::string policy;
  std::size_t requests = 0, completed = 0, requests_lost = 0, requests_rejected = 0;
  double makespan_s = 0;          // first arrival to last completion
  double requests_per_s = 0;      // completed / makespan
  double tokens_per_s = 0;        // real tokens of completed requests / makespan
  LatencySummary latency_short, latency_long;
  // The short requests' latency when the same short requests (same arrival
  // times) run alone under the same policy: the "all-short run" for the
  // short p99 target. Unset unless the caller ran that comparison (`tokenbatch
  // simulate --short-alone`).
  std::optional<LatencySummary> latency_short_alone;
  double padding_efficiency = 0;  // Σ real tokens / Σ B·Lmax over dispatched batches
  double mean_batch_size = 0;
  double mean_fill = 0;           // mean of the former's fill
  // oom_events: backend calls that ran out of memory (a bisected batch counts
  // each failed call).
  std::size_t batches = 0, batches_over_budget = 0, oom_events = 0;
  // Largest peak a batch asked for (weights included), also when it did not fit.
  std::int64_t peak_memory_bytes = 0;
  // Largest activation memory really held above the loaded model (forwards that
  // fit; with shared memory, the batches running beside them included). bench:
  // the process's RSS high-water mark above its level before the run.
  std::int64_t peak_forward_bytes = 0;
  std::vector<double> short_latencies_ms, long_latencies_ms;  // sorted ascending
  std::vector<BatchRecord> batch_records;                      // in dispatch order
};

// Called after each finished request with (finished, total).
using ProgressFn = std::function<void(std::size_t done, std::size_t total)>;

// Runs `policy` over `requests`. Errors: InvalidArgument for an empty workload,
// tokens < 1, workers == 0, a policy MakeFormer refuses, or intra_op options
// IntraOpWidth refuses, with workers != cores, speedup < 1 or model_threads
// neither 1 nor cores.
[[nodiscard]] absl::StatusOr<PolicyResult> Simulate(const PolicySpec& policy, const GpuModel& gpu,
                                                    std::span<const SimRequest> requests,
                                                    const SimOptions& options, const ProgressFn& progress = {});

}  // namespace tokenbatch::sim
