// The simulator's parts shared by Simulate (simulator.h) and
// SimulateSharedDevice (shared_device.h): one dispatched batch run as the
// runtime's failure isolation runs it, and latency percentiles. Internal to
// src/sim; pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "tokenbatch/sim/gpu_model.h"
#include "tokenbatch/sim/simulator.h"

namespace tokenbatch::sim {

// One dispatched batch run as the runtime's RunIsolated runs it: a call that
// runs out of memory costs GpuModel::failed_forward_fraction() of its forward,
// then each half is retried on its own; a single request that still does not
// fit is lost.
struct IsolatedRun {
  double latency_us = 0;
  std::size_t oom_calls = 0;
  std::int64_t peak_bytes = 0;        // largest peak any call asked for, others' included
  std::int64_t activation_bytes = 0;  // its own largest activations of a call that fit
  std::int64_t held_bytes = 0;        // largest activations held by a call that fit, others' included
  std::vector<bool> lost;             // per request (sized by the caller): failed alone
};

// Runs the requests of `lengths` (at `offset` in run.lost) on `gpu`;
// `others_bytes` is what the device holds beside this batch (other batches'
// activations, other models' weights), 0 when nothing shares its memory.
void RunIsolatedModel(const GpuModel& gpu, std::span<const std::int64_t> lengths, std::size_t offset,
                      std::int64_t others_bytes, IsolatedRun& run);

// Nearest-rank p50, p95 and p99 of `ms`, which it sorts.
[[nodiscard]] LatencySummary Summarise(std::vector<double>& ms);

}  // namespace tokenbatch::sim
