// ShortenBlasSpinWait against the process's real OpenBLAS (Debian's libtorch
// links it; the PyPI wheel's libtorch does not, and then the call must leave
// everything alone). Its own test binary: it changes the environment.
#include "backend/blas_spin_wait.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "backend/test_blas_product.h"

namespace tokenbatch::backend {
namespace {

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

// The command line's order: the variable first, the pool's restart later (with
// a switch of OpenBLAS's kernels, or alone). Whether the restarted pool spins
// for the shorter time is not visible from here; that it still computes is.
TEST(BlasSpinWait, SetsTheVariableWithoutARestartAndARestartKeepsProductsRight) {
  unsetenv("OPENBLAS_THREAD_TIMEOUT");
  const bool has_openblas = dlsym(RTLD_DEFAULT, "openblas_read_env") != nullptr;
  const BlasSpinWait set = SetShortBlasSpinWait();
  EXPECT_EQ(set, has_openblas ? BlasSpinWait::kShortened : BlasSpinWait::kNoOpenBlas);
  EXPECT_EQ(std::getenv("OPENBLAS_THREAD_TIMEOUT") != nullptr, has_openblas);
  EXPECT_EQ(RestartBlasThreadPool(), has_openblas);
  if (!has_openblas) return;
  ExpectProductCorrect(1);
  ExpectProductCorrect(2);
  EXPECT_EQ(SetShortBlasSpinWait(), BlasSpinWait::kAlreadySet);
}

TEST(BlasSpinWait, KeepsTheUsersValue) {
  setenv("OPENBLAS_THREAD_TIMEOUT", "25", 1);
  EXPECT_EQ(ShortenBlasSpinWait(), BlasSpinWait::kAlreadySet);
  EXPECT_EQ(std::string(std::getenv("OPENBLAS_THREAD_TIMEOUT")), "25");
}

}  // namespace
}  // namespace tokenbatch::backend
