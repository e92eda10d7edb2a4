#include "backend/device_peak_memory.h"

#ifdef TOKENBATCH_TORCH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <cuda_runtime_api.h>
#endif

#include "absl/strings/str_cat.h"

#include "backend/torch_guard.h"

namespace tokenbatch::backend {

#ifdef TOKENBATCH_TORCH_CUDA
namespace {
// The allocator's aggregate allocated-bytes statistic for the device. Index 0 is
// StatType::AGGREGATE in every libtorch; the enum itself moved from
// c10::cuda::CUDACachingAllocator to c10::CachingAllocator in 2.x.
auto AllocatedBytes(const c10::Device& device) {
  const int index = device.has_index() ? device.index() : 0;
  return c10::cuda::CUDACachingAllocator::getDeviceStats(index).allocated_bytes[0];
}
}  // namespace
#endif

absl::Status DevicePeakMemory::Reset() {
#ifdef TOKENBATCH_TORCH_CUDA
  if (device_.is_cuda()) {
    return Guard("cuda peak reset", [&] {
      c10::cuda::CUDACachingAllocator::resetPeakStats(device_.has_index() ? device_.index() : 0);
      cuda_baseline_bytes_ = AllocatedBytes(device_).current;
    });
  }
#endif
  return cpu_.Reset();
}

absl::StatusOr<int64_t> DevicePeakMemory::Peak() const {
#ifdef TOKENBATCH_TORCH_CUDA
  if (device_.is_cuda()) {
    int64_t peak = 0;
    absl::Status s = Guard("cuda peak read", [&] { peak = AllocatedBytes(device_).peak - cuda_baseline_bytes_; });
    if (!s.ok()) return s;
    return peak;
  }
#endif
  return cpu_.Peak();
}

absl::Status LimitCudaMemory(c10::Device device, int64_t bytes) {
  if (!device.is_cuda()) return InvalidArgumentError("a CUDA memory limit needs a CUDA device");
  if (bytes <= 0) return InvalidArgumentError(absl::StrCat("CUDA memory limit must be > 0 bytes, got ", bytes));
#ifdef TOKENBATCH_TORCH_CUDA
  const int index = device.has_index() ? device.index() : 0;
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaSetDevice(index) != cudaSuccess || cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    return BackendError(absl::StrCat("cannot read the memory of cuda:", index));
  }
  if (static_cast<uint64_t>(bytes) > total_bytes) {
    return InvalidArgumentError(absl::StrCat("CUDA memory limit ", bytes, " bytes is above cuda:", index, "'s ",
                                             total_bytes));
  }
  return Guard("cuda memory limit", [&] {
    c10::cuda::CUDACachingAllocator::setMemoryFraction(static_cast<double>(bytes) / double(total_bytes), index);
  });
#else
  return InvalidArgumentError("this libtorch has no CUDA: build against a CUDA libtorch (scripts/gpu_bundle.sh, docs/gpu.md)");
#endif
}

}  // namespace tokenbatch::backend
