// SetForwardThreads against the process's real libtorch and BLAS: whether a
// two-thread forward's own operators (libtorch's OpenMP) start a helper thread.
// Both builds run it: Debian's libtorch (OpenBLAS, with a thread pool of its
// own) and the PyPI wheel's (MKL inside libtorch's OpenMP), each taking one
// branch.
#include <ATen/ATen.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "testing/process_threads.h"
#include "tokenbatch/backend/encoder.h"

namespace tokenbatch::backend {
namespace {

using tokenbatch::testing::ThreadsOfThisProcess;

// An elementwise operator large enough that libtorch splits it across its
// OpenMP threads.
void RunParallelOperator() {
  at::Tensor x = at::rand({1 << 22});
  at::Tensor y = at::exp(x);
  ASSERT_NEAR(y[7].item<float>(), std::exp(x[7].item<float>()), 1e-5);
}

// Beside OpenBLAS's pool the operators stay on one thread (an OpenMP helper
// spinning between regions would hold the core OpenBLAS's thread needs) and
// OpenBLAS gets both threads; with the BLAS inside libtorch's OpenMP the
// operators get both, which starts one helper. On a fresh thread: OpenMP keeps
// its thread count and its team per thread.
TEST(ForwardThreadsTest, TwoThreadsGoToOpenBlasBesideItsPoolElseToTheOperators) {
  using GetInt = int (*)();
  const auto openblas_threads = reinterpret_cast<GetInt>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  const auto openblas_parallel = reinterpret_cast<GetInt>(dlsym(RTLD_DEFAULT, "openblas_get_parallel"));
  const bool openblas_pool = openblas_parallel != nullptr && openblas_parallel() == 1;  // its pthread build
  // The process's one-time start-up threads before counting: OpenBLAS's pool
  // grown to two (it is process-wide) and this thread's OpenMP team, if any.
  SetForwardThreads(2);
  RunParallelOperator();
  int narrow_added = -1, wide_added = -1, blas_threads = 0;
  std::thread([&] {
    const int before = ThreadsOfThisProcess();
    SetForwardThreads(1);
    RunParallelOperator();
    narrow_added = ThreadsOfThisProcess() - before;
    SetForwardThreads(2);
    RunParallelOperator();
    wide_added = ThreadsOfThisProcess() - before;
    if (openblas_pool && openblas_threads != nullptr) blas_threads = openblas_threads();
  }).join();
  EXPECT_EQ(narrow_added, 0);
  if (openblas_pool) {
    ASSERT_NE(openblas_threads, nullptr);
    EXPECT_EQ(wide_added, 0);
    EXPECT_EQ(blas_threads, 2);
  } else {
    EXPECT_EQ(wide_added, 1);
  }
}

}  // namespace
}  // namespace tokenbatch::backend
