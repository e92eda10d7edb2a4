#include "tokenbatch/workload/admission.h"

#include <gtest/gtest.h>

#include "tokenbatch/core/errors.h"

namespace tokenbatch::workload {
namespace {

std::vector<WorkloadRequest> Lengths(std::initializer_list<std::int64_t> tokens) {
  std::vector<WorkloadRequest> out;
  for (std::int64_t t : tokens) out.push_back({.id = out.size(), .tokens = t});
  return out;
}

TEST(Admit, TruncatesOnlyWhatIsLongerThanTheLimit) {
  const auto requests = Lengths({1, 511, 512, 513, 4000});
  auto a = Admit(requests, {.max_input_tokens = 512, .oversize = OversizePolicy::kTruncate});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->tokens, (std::vector<std::int64_t>{1, 511, 512, 512, 512}));
  EXPECT_EQ(a->truncated, 2u);
  EXPECT_EQ(a->rejected, 0u);
}

TEST(Admit, RejectedRequestsAreDroppedFromTheAdmittedList) {
  const auto requests = Lengths({20, 600, 30, 512});
  auto a = Admit(requests, {.max_input_tokens = 512, .oversize = OversizePolicy::kReject});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->tokens, (std::vector<std::int64_t>{20, 0, 30, 512}));
  EXPECT_EQ(a->rejected, 1u);
  const std::vector<WorkloadRequest> kept = AdmittedRequests(requests, *a);
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept[1].id, 2u);
  EXPECT_EQ(kept[2].tokens, 512);
}

TEST(Admit, RefusesSplitAndBadLimits) {
  const auto requests = Lengths({10});
  EXPECT_EQ(GetErrorKind(Admit(requests, {.max_input_tokens = 0}).status()), ErrorKind::kInvalidArgument);
  auto split = Admit(requests, {.max_input_tokens = 8, .oversize = OversizePolicy::kSplit});
  EXPECT_EQ(GetErrorKind(split.status()), ErrorKind::kInvalidArgument);
  EXPECT_NE(split.status().message().find("split"), std::string_view::npos);
  EXPECT_FALSE(Admit(Lengths({0}), {.max_input_tokens = 8}).ok());
}

}  // namespace
}  // namespace tokenbatch::workload
