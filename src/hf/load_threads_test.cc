// What loading a model leaves running in the process: the load's OpenMP helper
// threads end with it (RunOnOwnThread, src/backend/torch_guard.h).

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "testing/build_paths.h"
#include "testing/process_threads.h"
#include "tokenbatch/hf/hf_encoder.h"

namespace tokenbatch::hf {
namespace {

namespace fs = std::filesystem;
using tokenbatch::testing::ThreadsOfThisProcess;

// A load runs parallel regions (weight conversions, the probe forward), and an
// OpenMP team, once started, lives as long as the thread that started it; each
// test runs in a process of its own (gtest_discover_tests), so nothing before
// this one started a team. A team's helpers end on their own after their thread
// ends, not before Load returns, so the count is awaited: a helper left behind
// lives on, and the wait runs out.
TEST(LoadThreadsTest, LoadingLeavesNoThreadBehind) {
  const std::string mini_lm = tokenbatch::testing::ModelDir() + "/all-MiniLM-L6-v2";
  ASSERT_TRUE(fs::is_directory(mini_lm)) << mini_lm << " is missing: run scripts/prepare_assets.sh";
  const int before = ThreadsOfThisProcess();
  auto encoder = HfEncoder::Load({.model_dir = mini_lm});
  ASSERT_TRUE(encoder.ok()) << encoder.status();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (ThreadsOfThisProcess() > before && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_LE(ThreadsOfThisProcess(), before);
}

}  // namespace
}  // namespace tokenbatch::hf
