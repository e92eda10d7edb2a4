// One policy of `tokenbatch bench` on the real backend: the burst of requests
// submitted at once, run to the last answer, summarised as a sim::PolicyResult
// so that bench and simulate print the same reports.
//
// Core policies run through the real runtime: a Batcher with `workers` workers
// (the policy core inside), its start deferred until the whole burst is queued
// (BatcherOptions::defer_start, as the simulator's arrivals at one instant),
// shut down only once every request is answered (a drain would dispatch
// without the policy's waits). The fixed-count and sorted-window baselines are
// not core policies: `workers` threads drive their BatchFormer on the steady
// clock, each sleeping until the former's wake time as the Batcher's workers
// do for the core, and run each batch as the runtime does (RunIsolated:
// bisection after a failure). Latency is completion time minus the instant the
// burst started.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "cli/fail.h"
#include "tokenbatch/backend/encoder.h"
#include "tokenbatch/core/cost_model.h"
#include "tokenbatch/core/intra_op_width.h"
#include "tokenbatch/sim/batch_former.h"
#include "tokenbatch/sim/simulator.h"

namespace tokenbatch::cli {

inline constexpr Command kBenchCommand{"bench"};

// One request of the workload, encoded (after admission).
struct BenchRequest {
  backend::EmbeddingInput input;
  bool is_long = false;  // latency is reported per class
};

struct BenchRunOptions {
  int workers = 1;                               // >= 1
  // Set: the CPU's cores shared out per batch (BatcherOptions::intra_op, serve
  // --intra-op adaptive); `workers` must equal intra_op->cores and the encoder
  // must leave its thread count to the runtime (num_threads 0).
  std::optional<IntraOpOptions> intra_op;
  CostModel budget_model = CostModel::Padded();  // gives each BatchRecord::cost
  std::int64_t budget = 4096;                    // "over budget": a batch whose cost exceeds it
  std::size_t rejected_at_admission = 0;         // added to requests and requests_rejected
  bool progress = true;                          // a progress bar on stderr
};

// Runs `policy` over `requests` on `encoder` and summarises it. peak_memory_bytes
// and peak_forward_bytes are the encoder's PeakMemoryBytes over the run (on CPU:
// the process's RSS high-water mark above its level before). A request the
// Batcher refuses as Oversize is counted as rejected; one whose batch fails, as
// lost. Blocks until every request is answered. Exits the program (Fail) if the
// Batcher cannot be created or refuses a request for any other reason, or the
// peak-memory probe fails.
[[nodiscard]] sim::PolicyResult RunBenchPolicy(const sim::PolicySpec& policy, const backend::Encoder& encoder,
                                               const std::vector<BenchRequest>& requests,
                                               const BenchRunOptions& options);

}  // namespace tokenbatch::cli
