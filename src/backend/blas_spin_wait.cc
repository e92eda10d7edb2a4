#include "backend/blas_spin_wait.h"

#include <cstdlib>
#include <string>

#include "backend/openblas_runtime.h"

namespace tokenbatch::backend {

BlasSpinWait SetShortBlasSpinWait() {
  if (std::getenv("OPENBLAS_THREAD_TIMEOUT") != nullptr) return BlasSpinWait::kAlreadySet;
  const OpenBlasRuntime& blas = OpenBlasRuntime::Get();
  if (blas.read_env == nullptr || !blas.has_thread_pool()) return BlasSpinWait::kNoOpenBlas;
  setenv("OPENBLAS_THREAD_TIMEOUT", std::to_string(kBlasThreadTimeoutExponent).c_str(), /*overwrite=*/0);
  blas.read_env();
  return BlasSpinWait::kShortened;
}

bool RestartBlasThreadPool() {
  const OpenBlasRuntime& blas = OpenBlasRuntime::Get();
  if (!blas.has_thread_pool()) return false;
  blas.RestartThreadPool([] {});
  return true;
}

BlasSpinWait ShortenBlasSpinWait() {
  const BlasSpinWait result = SetShortBlasSpinWait();
  if (result == BlasSpinWait::kShortened) RestartBlasThreadPool();
  return result;
}

}  // namespace tokenbatch::backend
