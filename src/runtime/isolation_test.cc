#include "tokenbatch/runtime/isolation.h"

#include <stdexcept>

#include <gtest/gtest.h>

namespace tokenbatch {
namespace {

using Results = std::vector<absl::StatusOr<int>>;

// Doubles each input; fails any call that contains a negative input.
absl::StatusOr<std::vector<int>> DoubleUnlessPoisoned(std::span<const int> in) {
  std::vector<int> out;
  for (int v : in) {
    if (v < 0) return BackendError("poison input");
    out.push_back(2 * v);
  }
  return out;
}

TEST(IsolationTest, APoisonRequestFailsAloneAndTheOthersGetResults) {
  const std::vector<int> inputs = {1, 2, 3, -1, 5, 6, 7, 8};
  Results results(inputs.size());
  IsolationReport report;
  int ooms = 0;
  RunIsolated<int>(DoubleUnlessPoisoned, std::span<const int>(inputs), std::span(results),
                   [&](size_t, size_t) { ++ooms; }, report);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] < 0) {
      EXPECT_EQ(GetErrorKind(results[i].status()), ErrorKind::kBackend);
    } else {
      ASSERT_TRUE(results[i].ok()) << i;
      EXPECT_EQ(*results[i], 2 * inputs[i]);
    }
  }
  EXPECT_EQ(ooms, 0);
  // 8 -> 4+4 -> (2+2) -> (1+1): the poison path costs 2 calls per level.
  EXPECT_EQ(report.backend_calls, 7u);
  EXPECT_EQ(report.retries, 6u);
}

TEST(IsolationTest, OutOfMemoryIsReportedWithTheFailingRange) {
  // Fails with OOM whenever more than 2 inputs run together.
  auto backend = [](std::span<const int> in) -> absl::StatusOr<std::vector<int>> {
    if (in.size() > 2) return OutOfMemoryError("CUDA out of memory");
    return std::vector<int>(in.begin(), in.end());
  };
  const std::vector<int> inputs = {1, 2, 3, 4, 5, 6, 7, 8};
  Results results(inputs.size());
  IsolationReport report;
  std::vector<std::pair<size_t, size_t>> ranges;
  RunIsolated<int>(backend, std::span<const int>(inputs), std::span(results),
                   [&](size_t off, size_t n) { ranges.emplace_back(off, n); }, report);
  for (size_t i = 0; i < inputs.size(); ++i) EXPECT_EQ(*results[i], inputs[i]);
  EXPECT_EQ(ranges, (std::vector<std::pair<size_t, size_t>>{{0, 8}, {0, 4}, {4, 4}}));
  EXPECT_EQ(report.oom_events, 3u);
}

TEST(IsolationTest, ExceptionsBecomeTypedErrors) {
  const std::vector<int> one = {1};
  Results results(1);
  IsolationReport report;
  auto nop = [](size_t, size_t) {};
  RunIsolated<int>([](std::span<const int>) -> absl::StatusOr<std::vector<int>> { throw std::bad_alloc(); },
                   std::span<const int>(one), std::span(results), nop, report);
  EXPECT_EQ(GetErrorKind(results[0].status()), ErrorKind::kOutOfMemory);
  RunIsolated<int>(
      [](std::span<const int>) -> absl::StatusOr<std::vector<int>> { throw std::runtime_error("boom"); },
      std::span<const int>(one), std::span(results), nop, report);
  EXPECT_EQ(GetErrorKind(results[0].status()), ErrorKind::kBackend);
  EXPECT_NE(results[0].status().message().find("boom"), std::string_view::npos);
}

TEST(IsolationTest, WrongResultCountFailsEveryRequestWithoutRetry) {
  const std::vector<int> inputs = {1, 2, 3};
  Results results(3);
  IsolationReport report;
  RunIsolated<int>([](std::span<const int>) { return absl::StatusOr<std::vector<int>>(std::vector<int>{1}); },
                   std::span<const int>(inputs), std::span(results), [](size_t, size_t) {}, report);
  for (const auto& r : results) {
    EXPECT_EQ(GetErrorKind(r.status()), ErrorKind::kBackend);
    EXPECT_NE(r.status().message().find("returned 1 results for a batch of 3"), std::string_view::npos);
  }
  EXPECT_EQ(report.backend_calls, 1u);
}

}  // namespace
}  // namespace tokenbatch
