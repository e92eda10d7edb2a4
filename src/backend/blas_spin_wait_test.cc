// ShortenBlasSpinWait against the process's real OpenBLAS (Debian's libtorch
// links it; the PyPI wheel's libtorch does not, and then the call must leave
// everything alone). Its own test binary: it changes the environment.
#include "backend/blas_spin_wait.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace tokenbatch::backend {
namespace {

// cblas_sgemm's signature (row-major = 101, no transpose = 111), from the CBLAS
// reference interface.
using Sgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);

// C = A B on `threads` OpenBLAS threads, checked against a plain triple loop.
void ExpectProductCorrect(int threads) {
  const auto sgemm = reinterpret_cast<Sgemm>(dlsym(RTLD_DEFAULT, "cblas_sgemm"));
  const auto set_threads = reinterpret_cast<void (*)(int)>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  ASSERT_NE(sgemm, nullptr);
  ASSERT_NE(set_threads, nullptr);
  set_threads(threads);
  constexpr int n = 384;  // large enough for OpenBLAS to split it across threads
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-1, 1);
  std::vector<float> a(n * n), b(n * n), c(n * n, 0.0f);
  for (float& x : a) x = uniform(rng);
  for (float& x : b) x = uniform(rng);
  sgemm(101, 111, 111, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
  for (int i = 0; i < n; i += 37) {
    for (int j = 0; j < n; j += 41) {
      double expected = 0;
      for (int k = 0; k < n; ++k) expected += double(a[i * n + k]) * b[k * n + j];
      EXPECT_NEAR(c[i * n + j], expected, 1e-3) << i << "," << j;
    }
  }
}

TEST(BlasSpinWait, ShortensOnceAndKeepsProductsRight) {
  unsetenv("OPENBLAS_THREAD_TIMEOUT");
  const bool has_openblas = dlsym(RTLD_DEFAULT, "openblas_read_env") != nullptr;
  if (has_openblas) ExpectProductCorrect(2);  // the pool is up before the restart

  const BlasSpinWait first = ShortenBlasSpinWait();
  if (!has_openblas) {
    EXPECT_EQ(first, BlasSpinWait::kNoOpenBlas);
    EXPECT_EQ(std::getenv("OPENBLAS_THREAD_TIMEOUT"), nullptr);
    return;
  }
  EXPECT_EQ(first, BlasSpinWait::kShortened);
  ASSERT_NE(std::getenv("OPENBLAS_THREAD_TIMEOUT"), nullptr);
  EXPECT_EQ(std::string(std::getenv("OPENBLAS_THREAD_TIMEOUT")), std::to_string(kBlasThreadTimeoutExponent));
  // The restarted pool computes, on one thread and on two.
  ExpectProductCorrect(1);
  ExpectProductCorrect(2);
  // A second call, like a user's own setting, keeps the value.
  EXPECT_EQ(ShortenBlasSpinWait(), BlasSpinWait::kAlreadySet);
  ExpectProductCorrect(2);
}

TEST(BlasSpinWait, KeepsTheUsersValue) {
  setenv("OPENBLAS_THREAD_TIMEOUT", "25", 1);
  EXPECT_EQ(ShortenBlasSpinWait(), BlasSpinWait::kAlreadySet);
  EXPECT_EQ(std::string(std::getenv("OPENBLAS_THREAD_TIMEOUT")), "25");
}

}  // namespace
}  // namespace tokenbatch::backend
