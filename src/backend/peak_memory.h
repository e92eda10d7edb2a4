// Peak resident memory of this process on Linux, for CPU calibration.
//
// Method: Reset() returns freed heap pages to the kernel (glibc malloc_trim(0),
// and gperftools' MallocExtension_ReleaseFreeMemory when the program runs on
// tcmalloc, as `tokenbatch` does: malloc_trim does nothing for it), so memory
// freed by an earlier shape or a warm-up does not hide this one's growth,
// reads VmRSS from /proc/self/status as the baseline, and resets the kernel's
// resident high-water mark by writing "5" to /proc/self/clear_refs (Linux >= 4.0,
// Documentation/filesystems/proc.rst). Peak() reads VmHWM and returns
// VmHWM - baseline. Both count the whole process, so measure with nothing else
// running. Resolution: one page (4 KiB); /proc reports kB.
// Not thread-safe (one measurement at a time); each call blocks for a /proc read.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tokenbatch::backend {

class CpuPeakMemory {
 public:
  // BackendError if /proc/self/clear_refs or /proc/self/status is unusable.
  [[nodiscard]] absl::Status Reset();
  // Bytes of resident-memory growth since Reset (>= 0).
  [[nodiscard]] absl::StatusOr<int64_t> Peak() const;

 private:
  int64_t baseline_bytes_ = 0;
};

// A field of /proc/self/status in bytes ("VmRSS", "VmHWM", ...).
[[nodiscard]] absl::StatusOr<int64_t> ReadProcStatusBytes(const char* field);

}  // namespace tokenbatch::backend
