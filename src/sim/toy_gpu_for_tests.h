// For the simulator's tests: a one-layer toy model on a toy device, so that
// every estimate of GpuModel can be computed by hand (gpu_model_test.cc shows
// the arithmetic).
#pragma once

#include "tokenbatch/sim/gpu_model.h"

namespace tokenbatch::sim {

// The device: 1e-6 TFLOP/s, 1e-3 GB/s, 1,000,000 bytes; 10 µs of launch
// overhead per layer, full efficiency, nothing reserved. Never fails (the
// values are valid).
inline GpuModel ToyGpu() {
  ModelShape m{.name = "toy", .layers = 1, .hidden = 4, .heads = 2, .kv_heads = 2, .head_dim = 2,
               .intermediate = 8, .vocab = 10, .mlp_matrices = 2, .dtype_bytes = 2};
  return *GpuModel::Create(m, {"toy", 1e-6, 1e-3, 1'000'000},
                           {.compute_efficiency = 1, .bandwidth_efficiency = 1, .launch_overhead_us_per_layer = 10,
                            .reserved_bytes = 0});
}

}  // namespace tokenbatch::sim
