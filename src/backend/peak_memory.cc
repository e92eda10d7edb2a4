#include "backend/peak_memory.h"

#include <malloc.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "tokenbatch/core/errors.h"

// gperftools (tcmalloc), when the program links it: a weak reference, null when
// it does not. Keeps freed pages resident until asked to release them.
extern "C" void MallocExtension_ReleaseFreeMemory(void) __attribute__((weak));

namespace tokenbatch::backend {

absl::StatusOr<int64_t> ReadProcStatusBytes(const char* field) {
  std::ifstream in("/proc/self/status");
  if (!in) return BackendError("cannot open /proc/self/status");
  const std::string prefix = absl::StrCat(field, ":");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) != 0) continue;
    std::istringstream fields(line.substr(prefix.size()));
    int64_t kib = -1;
    std::string unit;
    fields >> kib >> unit;
    if (kib < 0 || unit != "kB") {
      return BackendError(absl::StrCat("cannot parse \"", line, "\" in /proc/self/status"));
    }
    return kib * 1024;
  }
  return BackendError(absl::StrCat("no ", field, " in /proc/self/status"));
}

absl::Status CpuPeakMemory::Reset() {
  malloc_trim(0);
  if (MallocExtension_ReleaseFreeMemory != nullptr) MallocExtension_ReleaseFreeMemory();
  {
    std::ofstream clear("/proc/self/clear_refs");
    clear << "5";
    clear.flush();
    if (!clear) return BackendError("cannot write 5 to /proc/self/clear_refs");
  }
  absl::StatusOr<int64_t> rss = ReadProcStatusBytes("VmRSS");
  if (!rss.ok()) return rss.status();
  baseline_bytes_ = *rss;
  return absl::OkStatus();
}

absl::StatusOr<int64_t> CpuPeakMemory::Peak() const {
  absl::StatusOr<int64_t> hwm = ReadProcStatusBytes("VmHWM");
  if (!hwm.ok()) return hwm.status();
  return std::max<int64_t>(0, *hwm - baseline_bytes_);
}

}  // namespace tokenbatch::backend
