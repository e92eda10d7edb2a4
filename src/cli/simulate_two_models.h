// `tokenbatch simulate --second-model SHAPE`: two models served by one process
// on one simulated device (sim/shared_device.h), each model's batches formed
// three ways, side by side:
//   infinity          a sorted window of 128 per model, cut into batches of 32
//                     (Infinity's design: one batch size per model)
//   ours-per-model    the length-aware core per model, each with a memory budget
//                     of all the activation memory the device has beside both
//                     models' weights, blind to the other model
//   ours-shared       the same, under one shared budget (serve --device-memory)
// and a Markdown table of the out-of-memory events, the requests lost, the
// tokens/s of both together and each model's p99 latency.
#pragma once

#include <vector>

#include "tokenbatch/sim/gpu_model.h"
#include "tokenbatch/sim/simulator.h"

namespace tokenbatch::cli {

// Prints the comparison for `first` serving `first_requests` and `second`
// serving `second_requests` (open loop), both on the same device. Fails
// (`simulate: ...`) when a simulation does.
void RunTwoModels(const sim::GpuModel& first, const std::vector<sim::SimRequest>& first_requests,
                  const sim::GpuModel& second, const std::vector<sim::SimRequest>& second_requests);

}  // namespace tokenbatch::cli
