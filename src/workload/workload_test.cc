#include "tokenbatch/workload/workload.h"

#include <cstdio>
#include <fstream>

#include <gtest/gtest.h>

#include "tokenbatch/workload/text_corpus.h"

namespace tokenbatch::workload {
namespace {

TEST(EstimateTokens, CjkPerCharacterOtherPerFourBytes) {
  EXPECT_EQ(EstimateTokens("hello world!"), 3);  // 12 bytes
  EXPECT_EQ(EstimateTokens("你好"), 2);
  EXPECT_EQ(EstimateTokens("a"), 1);
  EXPECT_EQ(EstimateTokens(""), 1);
}

TEST(GenerateMix, SeedMixHalfLongRealText) {
  auto mix = GenerateMix({.requests = 200}, {});
  ASSERT_TRUE(mix.ok()) << mix.status();
  ASSERT_EQ(mix->size(), 200u);
  std::size_t n_long = 0;
  for (const WorkloadRequest& r : *mix) {
    EXPECT_GE(r.tokens, 1);
    EXPECT_EQ(r.tokens, EstimateTokens(r.text));  // no counter: the estimate
    if (r.length_class == LengthClass::kLong) {
      ++n_long;
      EXPECT_GE(CodePoints(r.text), 750u);
    } else {
      EXPECT_LE(CodePoints(r.text), 40u);
    }
  }
  EXPECT_EQ(n_long, 100u);
  auto again = GenerateMix({.requests = 200}, {});
  ASSERT_TRUE(again.ok());
  for (std::size_t i = 0; i < 200; ++i) EXPECT_EQ((*mix)[i].text, (*again)[i].text);
  auto other = GenerateMix({.requests = 200, .seed = 2}, {});
  ASSERT_TRUE(other.ok());
  std::size_t same = 0;
  for (std::size_t i = 0; i < 200; ++i) same += (*mix)[i].text == (*other)[i].text ? 1 : 0;
  EXPECT_LT(same, 100u);
}

TEST(GenerateMix, CounterIsUsedAndErrorsPropagate) {
  auto counted = GenerateMix({.kind = MixKind::kAllShort, .requests = 5},
                             [](std::string_view t) -> absl::StatusOr<std::int64_t> {
                               return static_cast<std::int64_t>(t.size());
                             });
  ASSERT_TRUE(counted.ok());
  for (const auto& r : *counted) EXPECT_EQ(r.tokens, static_cast<std::int64_t>(r.text.size()));
  auto failed = GenerateMix({.requests = 5}, [](std::string_view) -> absl::StatusOr<std::int64_t> {
    return absl::InvalidArgumentError("bad text");
  });
  EXPECT_EQ(failed.status().message(), "bad text");
  EXPECT_FALSE(GenerateMix({.requests = 0}, {}).ok());
  EXPECT_FALSE(GenerateMix({.long_fraction = 1.5}, {}).ok());
}

TEST(GenerateMix, LongTailedHasAHeavyTail) {
  auto mix = GenerateMix({.kind = MixKind::kLongTailed, .requests = 500}, {});
  ASSERT_TRUE(mix.ok()) << mix.status();
  std::int64_t max_tokens = 0;
  std::size_t n_short = 0;
  for (const auto& r : *mix) {
    max_tokens = std::max(max_tokens, r.tokens);
    n_short += r.length_class == LengthClass::kShort ? 1 : 0;
    EXPECT_EQ(r.length_class == LengthClass::kShort, r.tokens <= 64);
  }
  EXPECT_GT(max_tokens, 1000);  // median 300 chars, sigma 1.5: p99 ~ 10,000 chars
  EXPECT_GT(n_short, 50u);
}

TEST(Arrivals, PoissonGapsAverageTheRate) {
  std::vector<WorkloadRequest> r(2000);
  ASSERT_TRUE(AssignArrivals({.kind = ArrivalKind::kPoisson, .rate_per_s = 1000}, r).ok());
  EXPECT_EQ(r[0].arrival_us, 0);
  for (std::size_t i = 1; i < r.size(); ++i) EXPECT_GE(r[i].arrival_us, r[i - 1].arrival_us);
  const double mean_gap_us = static_cast<double>(r.back().arrival_us) / 1999.0;
  EXPECT_NEAR(mean_gap_us, 1000.0, 100.0);  // 1/rate = 1 ms; 2,000 draws: sd ~ 2.2%
  EXPECT_FALSE(AssignArrivals({.kind = ArrivalKind::kPoisson, .rate_per_s = 0}, r).ok());
  EXPECT_FALSE(ParseArrivalKind("uniform").ok());
  EXPECT_EQ(*ParseMixKind("long-tailed"), MixKind::kLongTailed);
}

TEST(Jsonl, SaveLoadRoundTripAndErrors) {
  const std::string path = ::testing::TempDir() + "/workload.jsonl";
  std::vector<WorkloadRequest> w = {{.id = 3, .text = "短文本 \"quoted\"", .tokens = 4, .arrival_us = 7},
                                    {.id = 9, .text = "long", .tokens = 500,
                                     .length_class = LengthClass::kLong, .arrival_us = 8}};
  ASSERT_TRUE(SaveJsonl(path, w).ok());
  auto loaded = LoadJsonl(path, {});
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_EQ(loaded->size(), 2u);
  EXPECT_EQ((*loaded)[0].text, w[0].text);
  EXPECT_EQ((*loaded)[0].id, 3u);
  EXPECT_EQ((*loaded)[1].tokens, 500);
  EXPECT_EQ((*loaded)[1].length_class, LengthClass::kLong);
  EXPECT_EQ((*loaded)[1].arrival_us, 8);
  {
    std::ofstream out(path);
    out << "{\"text\": \"abcdefgh\"}\n{\"tokens\": 100}\n";
  }
  loaded = LoadJsonl(path, {});
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ((*loaded)[0].tokens, 2);  // estimated
  EXPECT_EQ((*loaded)[1].length_class, LengthClass::kLong);  // 100 > 64
  {
    std::ofstream out(path);
    out << "{\"tokens\": 1}\n{\"tokens\": 0}\n";
  }
  loaded = LoadJsonl(path, {});
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find(":2:"), std::string::npos) << loaded.status();
  {
    std::ofstream out(path);
    out << "not json\n";
  }
  EXPECT_EQ(LoadJsonl(path, {}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(LoadJsonl(path + ".missing", {}).status().code(), absl::StatusCode::kNotFound);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace tokenbatch::workload
