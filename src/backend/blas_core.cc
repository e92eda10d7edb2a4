#include "backend/blas_core.h"

#include <strings.h>

#include <cstdlib>

#include "backend/openblas_runtime.h"

namespace tokenbatch::backend {
namespace {

bool SameName(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace

CpuVectorFeatures DetectCpuVectorFeatures() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  CpuVectorFeatures f;
  f.avx = __builtin_cpu_supports("avx") != 0;
  f.avx2_fma = f.avx && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  // SkylakeX's tables use Haswell's kernels for some routines too.
  f.avx512 = f.avx2_fma && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512vl");
  return f;
#else
  return {};  // OpenBLAS's cores named here are x86's
#endif
}

std::optional<std::string> BetterBlasCore(std::string_view chosen, const CpuVectorFeatures& features) {
  if (!SameName(chosen, "Prescott")) return std::nullopt;
  // The widest of OpenBLAS's x86-64 cores whose instructions the CPU runs, by
  // the names its OPENBLAS_CORETYPE takes (every DYNAMIC_ARCH release has them).
  if (features.avx512) return "SkylakeX";
  if (features.avx2_fma) return "Haswell";
  if (features.avx) return "Sandybridge";
  return std::nullopt;
}

bool RerunBlasCoreSelection() {
  const OpenBlasRuntime& blas = OpenBlasRuntime::Get();
  if (!blas.has_core_selection()) return false;
  blas.RestartThreadPool([&] {
    blas.quit();
    blas.init();
  });
  return true;
}

BlasCore UseBestBlasCore() {
  const OpenBlasRuntime& blas = OpenBlasRuntime::Get();
  if (!blas.has_core_selection()) return {};
  BlasCore result{.choice = BlasCoreChoice::kKept, .before = blas.corename(), .after = ""};
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) {
    result.choice = BlasCoreChoice::kAlreadySet;
  } else if (const std::optional<std::string> better = BetterBlasCore(result.before, DetectCpuVectorFeatures())) {
    setenv("OPENBLAS_CORETYPE", better->c_str(), /*overwrite=*/0);
    result.reselected = RerunBlasCoreSelection();
    // A build without that core's kernels substitutes the nearest it has, which
    // is still a switch; a refused name leaves Prescott.
    if (!SameName(blas.corename(), result.before)) result.choice = BlasCoreChoice::kSwitched;
  }
  result.after = blas.corename();
  return result;
}

}  // namespace tokenbatch::backend
