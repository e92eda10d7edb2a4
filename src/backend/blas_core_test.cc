// UseBestBlasCore against the process's real OpenBLAS (Debian's libtorch links
// it; the PyPI wheel's libtorch does not, and then the call must leave
// everything alone), and BetterBlasCore's rule. Its own test binary: it
// changes the environment and OpenBLAS's kernels.
#include "backend/blas_core.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <strings.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "backend/test_blas_product.h"

namespace tokenbatch::backend {
namespace {

// What UseBestBlasCore needs of OpenBLAS (the thread pool's restart is optional).
bool HasOpenBlas() {
  return dlsym(RTLD_DEFAULT, "openblas_get_corename") != nullptr &&
         dlsym(RTLD_DEFAULT, "gotoblas_dynamic_quit") != nullptr &&
         dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init") != nullptr;
}

bool IsX86() {
#if defined(__x86_64__) || defined(__i386__)
  return true;
#else
  return false;
#endif
}

std::string CoreName() {
  const auto corename = reinterpret_cast<char* (*)()>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  return corename == nullptr ? "" : corename();
}

bool SameName(const std::string& a, const std::string& b) { return strcasecmp(a.c_str(), b.c_str()) == 0; }

// Puts OpenBLAS on its Prescott kernels, as it falls back on a CPU it does not
// know, the way OPENBLAS_CORETYPE would at load time; the variable is then
// removed again.
void FallBackToPrescott() {
  setenv("OPENBLAS_CORETYPE", "Prescott", 1);
  ASSERT_TRUE(RerunBlasCoreSelection());
  unsetenv("OPENBLAS_CORETYPE");
  ASSERT_EQ(CoreName(), "Prescott");
}

TEST(BetterBlasCore, ReplacesOnlyThePrescottFallback) {
  const CpuVectorFeatures avx512{.avx = true, .avx2_fma = true, .avx512 = true};
  const CpuVectorFeatures avx2{.avx = true, .avx2_fma = true, .avx512 = false};
  const CpuVectorFeatures avx{.avx = true, .avx2_fma = false, .avx512 = false};
  EXPECT_EQ(BetterBlasCore("Prescott", avx512), "SkylakeX");
  EXPECT_EQ(BetterBlasCore("PRESCOTT", avx2), "Haswell");
  EXPECT_EQ(BetterBlasCore("prescott", avx), "Sandybridge");
  EXPECT_EQ(BetterBlasCore("Prescott", CpuVectorFeatures{}), std::nullopt);
  // OpenBLAS knew the CPU: its choice stands, even where a wider core would run.
  EXPECT_EQ(BetterBlasCore("Haswell", avx512), std::nullopt);
  EXPECT_EQ(BetterBlasCore("Zen", avx2), std::nullopt);
  EXPECT_EQ(BetterBlasCore("SkylakeX", avx512), std::nullopt);
  EXPECT_EQ(BetterBlasCore("", avx512), std::nullopt);
}

TEST(DetectCpuVectorFeatures, WiderImpliesNarrower) {
  const CpuVectorFeatures f = DetectCpuVectorFeatures();
  EXPECT_TRUE(!f.avx512 || f.avx2_fma);
  EXPECT_TRUE(!f.avx2_fma || f.avx);
  EXPECT_TRUE(IsX86() || !f.avx);
}

// The kernel's view of the same CPU (/proc/cpuinfo's flags, which leave out
// what the OS does not save) agrees with the compiler's CPUID reading.
TEST(DetectCpuVectorFeatures, AgreesWithTheKernelsFlags) {
  if (!IsX86()) GTEST_SKIP() << "/proc/cpuinfo's x86 flags line; this is not x86";
  std::ifstream cpuinfo("/proc/cpuinfo");
  ASSERT_TRUE(cpuinfo.is_open());
  std::set<std::string> flags;
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    for (std::string w; words >> w;) flags.insert(w);
    break;
  }
  ASSERT_FALSE(flags.empty());
  const CpuVectorFeatures f = DetectCpuVectorFeatures();
  EXPECT_EQ(f.avx, flags.count("avx") == 1);
  EXPECT_EQ(f.avx2_fma, flags.count("avx") && flags.count("avx2") && flags.count("fma"));
  EXPECT_EQ(f.avx512, f.avx2_fma && flags.count("avx512f") && flags.count("avx512cd") && flags.count("avx512bw") &&
                          flags.count("avx512dq") && flags.count("avx512vl"));
}

TEST(UseBestBlasCore, LeavesOpenBlasOwnChoiceOrReplacesItsFallback) {
  unsetenv("OPENBLAS_CORETYPE");
  if (!HasOpenBlas()) {
    const BlasCore r = UseBestBlasCore();
    EXPECT_EQ(r.choice, BlasCoreChoice::kNoOpenBlas);
    EXPECT_FALSE(r.reselected);
    EXPECT_EQ(r.before, "");
    EXPECT_EQ(r.after, "");
    EXPECT_EQ(std::getenv("OPENBLAS_CORETYPE"), nullptr);
    return;
  }
  ASSERT_NO_FATAL_FAILURE(ExpectProductCorrect(2));
  const std::string loaded = CoreName();
  const std::optional<std::string> better = BetterBlasCore(loaded, DetectCpuVectorFeatures());
  const BlasCore r = UseBestBlasCore();
  EXPECT_EQ(r.before, loaded);
  EXPECT_EQ(r.reselected, better.has_value());
  if (better) {
    EXPECT_EQ(r.choice, BlasCoreChoice::kSwitched);
    EXPECT_TRUE(SameName(r.after, *better)) << r.after;  // Debian's build has every core
    ASSERT_NE(std::getenv("OPENBLAS_CORETYPE"), nullptr);
    EXPECT_EQ(std::string(std::getenv("OPENBLAS_CORETYPE")), *better);
  } else {
    EXPECT_EQ(r.choice, BlasCoreChoice::kKept);
    EXPECT_EQ(r.after, loaded);
    EXPECT_EQ(std::getenv("OPENBLAS_CORETYPE"), nullptr);
  }
  EXPECT_EQ(CoreName(), r.after);
  ASSERT_NO_FATAL_FAILURE(ExpectProductCorrect(1));
  ASSERT_NO_FATAL_FAILURE(ExpectProductCorrect(2));
}

// On any CPU with AVX: after a fallback to Prescott, the call moves OpenBLAS to
// the widest core the CPU runs, and the products stay right on it.
TEST(UseBestBlasCore, ReplacesAFallbackToPrescott) {
  unsetenv("OPENBLAS_CORETYPE");
  if (!HasOpenBlas()) GTEST_SKIP() << "no OpenBLAS in this process (its libtorch uses another BLAS)";
  const std::optional<std::string> better = BetterBlasCore("Prescott", DetectCpuVectorFeatures());
  if (!better) GTEST_SKIP() << "this CPU runs nothing wider than OpenBLAS's Prescott kernels";
  ASSERT_NO_FATAL_FAILURE(FallBackToPrescott());
  ASSERT_NO_FATAL_FAILURE(ExpectProductCorrect(2));
  const BlasCore r = UseBestBlasCore();
  EXPECT_EQ(r.choice, BlasCoreChoice::kSwitched);
  EXPECT_TRUE(r.reselected);
  EXPECT_EQ(r.before, "Prescott");
  EXPECT_TRUE(SameName(r.after, *better)) << r.after;
  EXPECT_TRUE(SameName(CoreName(), *better)) << CoreName();
  ASSERT_NO_FATAL_FAILURE(ExpectProductCorrect(1));
  ASSERT_NO_FATAL_FAILURE(ExpectProductCorrect(2));
  // A second call finds its own setting and keeps it.
  const BlasCore again = UseBestBlasCore();
  EXPECT_EQ(again.choice, BlasCoreChoice::kAlreadySet);
  EXPECT_FALSE(again.reselected);
  EXPECT_EQ(again.after, r.after);
}

TEST(UseBestBlasCore, KeepsTheUsersCoreType) {
  setenv("OPENBLAS_CORETYPE", "Haswell", 1);
  const BlasCore r = UseBestBlasCore();
  EXPECT_EQ(r.choice, HasOpenBlas() ? BlasCoreChoice::kAlreadySet : BlasCoreChoice::kNoOpenBlas);
  EXPECT_EQ(r.after, r.before);
  EXPECT_FALSE(r.reselected);
  EXPECT_EQ(std::string(std::getenv("OPENBLAS_CORETYPE")), "Haswell");
}

}  // namespace
}  // namespace tokenbatch::backend
