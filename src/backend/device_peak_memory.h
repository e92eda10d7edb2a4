// Peak memory of the device a model runs on, for calibration: on the CPU the
// process's resident memory (CpuPeakMemory, peak_memory.h); on a CUDA device the
// caching allocator's peak allocated bytes minus those allocated at Reset
// (compiled only against a CUDA libtorch: TOKENBATCH_TORCH_CUDA).
// Not thread-safe (one measurement at a time). Includes c10 headers: torch
// translation units only.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "backend/peak_memory.h"

namespace tokenbatch::backend {

class DevicePeakMemory {
 public:
  explicit DevicePeakMemory(c10::Device device) : device_(device) {}
  // Marks the start of a measurement. BackendError if /proc (CPU) or the CUDA
  // allocator's statistics cannot be read.
  [[nodiscard]] absl::Status Reset();
  // Bytes above the level at Reset, at the highest point since (>= 0 on the CPU).
  [[nodiscard]] absl::StatusOr<int64_t> Peak() const;

 private:
  c10::Device device_;
  CpuPeakMemory cpu_;
  int64_t cuda_baseline_bytes_ = 0;
};

// Caps what the CUDA caching allocator may hold on `device` at `bytes` (c10's
// setMemoryFraction with bytes / the device's total memory), so that a larger
// allocation fails with a real CUDA out-of-memory error, as on a smaller GPU.
// InvalidArgumentError for a CPU device, bytes <= 0 or above the device's
// memory, or a libtorch built without CUDA.
[[nodiscard]] absl::Status LimitCudaMemory(c10::Device device, int64_t bytes);

}  // namespace tokenbatch::backend
