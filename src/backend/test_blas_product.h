// A matrix product through the process's OpenBLAS, checked against a plain
// loop: the BLAS tests' evidence that OpenBLAS still computes after they
// restart its threads or change its kernels. Test-only.
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace tokenbatch::backend {

// cblas_sgemm's signature (row-major = 101, no transpose = 111), from the CBLAS
// reference interface.
using Sgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);

// C = A B on `threads` OpenBLAS threads, checked against a plain triple loop.
inline void ExpectProductCorrect(int threads) {
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

}  // namespace tokenbatch::backend
