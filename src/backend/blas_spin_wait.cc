#include "backend/blas_spin_wait.h"

#include <dlfcn.h>

#include <cstdlib>
#include <string>

namespace tokenbatch::backend {

BlasSpinWait ShortenBlasSpinWait() {
  if (std::getenv("OPENBLAS_THREAD_TIMEOUT") != nullptr) return BlasSpinWait::kAlreadySet;
  // OpenBLAS exports these for its own fork handling; they are not in its
  // public header, hence the types written out here.
  const auto read_env = reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "openblas_read_env"));
  const auto shutdown = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "blas_thread_shutdown_"));
  const auto start = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "blas_thread_init"));
  if (read_env == nullptr || shutdown == nullptr || start == nullptr) return BlasSpinWait::kNoOpenBlas;
  setenv("OPENBLAS_THREAD_TIMEOUT", std::to_string(kBlasThreadTimeoutExponent).c_str(), /*overwrite=*/0);
  read_env();
  shutdown();
  start();
  return BlasSpinWait::kShortened;
}

}  // namespace tokenbatch::backend
