// Which low-precision modes a CPU may run, for every combination of the two
// instruction sets, and what the refusals say.
#include "tokenbatch/hf/cpu_low_precision.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "tokenbatch/core/errors.h"

namespace tokenbatch::hf {
namespace {

using ::testing::HasSubstr;

constexpr CpuLowPrecisionSupport kAvx2Only{};
constexpr CpuLowPrecisionSupport kBoth{.avx512_bf16 = true, .avx512_vnni = true};

TEST(CpuLowPrecisionTest, Float32NeedsNothing) {
  EXPECT_TRUE(CheckCpuLowPrecision(false, false, kAvx2Only).ok());
}

TEST(CpuLowPrecisionTest, EachModeNeedsItsInstructions) {
  EXPECT_TRUE(CheckCpuLowPrecision(true, false, kBoth).ok());
  EXPECT_TRUE(CheckCpuLowPrecision(false, true, kBoth).ok());
  EXPECT_TRUE(CheckCpuLowPrecision(true, false, {.avx512_bf16 = true}).ok());
  EXPECT_TRUE(CheckCpuLowPrecision(false, true, {.avx512_vnni = true}).ok());

  const absl::Status bf16 = CheckCpuLowPrecision(true, false, {.avx512_vnni = true});
  EXPECT_EQ(GetErrorKind(bf16), ErrorKind::kInvalidArgument) << bf16;
  EXPECT_THAT(bf16.message(), HasSubstr("bfloat16"));
  EXPECT_THAT(bf16.message(), HasSubstr("AVX-512 BF16"));
  EXPECT_THAT(bf16.message(), HasSubstr("--dtype float32"));

  const absl::Status int8 = CheckCpuLowPrecision(false, true, {.avx512_bf16 = true});
  EXPECT_EQ(GetErrorKind(int8), ErrorKind::kInvalidArgument) << int8;
  EXPECT_THAT(int8.message(), HasSubstr("int8"));
  EXPECT_THAT(int8.message(), HasSubstr("AVX-512 VNNI"));
}

// The CPU's own answer agrees with the flags the kernel lists for it.
TEST(CpuLowPrecisionTest, DetectsWhatProcCpuinfoLists) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line) && line.rfind("flags", 0) != 0) {
  }
  ASSERT_EQ(line.rfind("flags", 0), 0u) << "no flags line in /proc/cpuinfo";
  const std::string flags = line + " ";
  const CpuLowPrecisionSupport cpu = DetectCpuLowPrecision();
  EXPECT_EQ(cpu.avx512_bf16, flags.find(" avx512_bf16 ") != std::string::npos) << flags;
  EXPECT_EQ(cpu.avx512_vnni, flags.find(" avx512_vnni ") != std::string::npos) << flags;
}

}  // namespace
}  // namespace tokenbatch::hf
