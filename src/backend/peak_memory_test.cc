#include "backend/peak_memory.h"

#include <cstdlib>
#include <cstring>
#include <memory>

#include <gtest/gtest.h>

namespace tokenbatch::backend {
namespace {

constexpr int64_t kMiB = 1 << 20;

TEST(PeakMemoryTest, ReadsProcStatus) {
  absl::StatusOr<int64_t> rss = ReadProcStatusBytes("VmRSS");
  ASSERT_TRUE(rss.ok()) << rss.status();
  EXPECT_GT(*rss, 0);
  EXPECT_EQ(*rss % 1024, 0);
  EXPECT_FALSE(ReadProcStatusBytes("NoSuchField").ok());
}

TEST(PeakMemoryTest, SeesATouchedAllocationAndForgetsItAfterReset) {
  CpuPeakMemory probe;
  ASSERT_TRUE(probe.Reset().ok());
  {
    // 64 MiB, written so its pages become resident, then freed.
    std::unique_ptr<char[]> block(new char[64 * kMiB]);
    std::memset(block.get(), 1, 64 * kMiB);
    EXPECT_EQ(block[12345], 1);
  }
  absl::StatusOr<int64_t> peak = probe.Peak();
  ASSERT_TRUE(peak.ok()) << peak.status();
  // The kernel's RSS counters lag by up to 64 pages per thread (SPLIT_RSS_COUNTING).
  EXPECT_GE(*peak, 62 * kMiB);
  EXPECT_LT(*peak, 80 * kMiB);

  // The block is gone; a fresh measurement must not remember it.
  ASSERT_TRUE(probe.Reset().ok());
  absl::StatusOr<int64_t> idle = probe.Peak();
  ASSERT_TRUE(idle.ok());
  EXPECT_LT(*idle, 8 * kMiB);
}

}  // namespace
}  // namespace tokenbatch::backend
