// The number of threads the calling process has now (Linux: the entries of
// /proc/self/task). For tests of which threads a library leaves running, such
// as OpenMP's helper threads (src/backend/torch_guard.h). Test-only.
#pragma once

#include <filesystem>
#include <iterator>

namespace tokenbatch::testing {

inline int ThreadsOfThisProcess() {
  namespace fs = std::filesystem;
  return static_cast<int>(std::distance(fs::directory_iterator("/proc/self/task"), fs::directory_iterator()));
}

}  // namespace tokenbatch::testing
