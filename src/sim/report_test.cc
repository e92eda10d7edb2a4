#include "tokenbatch/sim/report.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace tokenbatch::sim {
namespace {

PolicyResult Sample(const std::string& name, double rps) {
  PolicyResult r;
  r.policy = name;
  r.requests_per_s = rps;
  r.tokens_per_s = rps * 10;
  r.latency_short = {.p50 = 1.23456, .p95 = 2, .p99 = 3, .count = 2};
  r.short_latencies_ms = {1.0, 3.0};
  r.long_latencies_ms = {10.0};
  r.padding_efficiency = 0.5;
  r.batches = 2;
  r.batches_over_budget = 1;
  r.peak_memory_bytes = 1 << 30;
  r.batch_records = {{.cost = 100}, {.cost = 4000}};
  return r;
}

TEST(Report, MarkdownHasOneRowPerPolicy) {
  const std::string table = MarkdownTable({Sample("a", 1.25), Sample("b", 2)});
  EXPECT_NE(table.find("| a | 1.2 |"), std::string::npos) << table;  // fixed one decimal
  EXPECT_NE(table.find("| b | 2.0 |"), std::string::npos);
  EXPECT_NE(table.find("| 1/2 |"), std::string::npos);
  EXPECT_NE(table.find("| 1.00 |"), std::string::npos);  // 1 GiB
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 4);
}

TEST(Report, JsonHasTheIssueFields) {
  auto j = nlohmann::json::parse(ResultsJson({Sample("a", 1.25)}));
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 1u);
  const auto& o = j[0];
  EXPECT_EQ(o["policy"], "a");
  EXPECT_DOUBLE_EQ(o["requests_per_s"].get<double>(), 1.25);
  EXPECT_DOUBLE_EQ(o["latency_ms"]["short"]["p50"].get<double>(), 1.235);
  for (const char* key : {"tokens_per_s", "padding_efficiency", "mean_batch_size", "mean_fill",
                          "batches_over_budget", "oom_events", "requests_lost", "peak_memory_bytes"}) {
    EXPECT_TRUE(o.contains(key)) << key;
  }
  EXPECT_EQ(o["peak_memory_bytes"], 1 << 30);
  EXPECT_TRUE(o["latency_ms"]["long"].contains("p99"));
}

TEST(Report, ShortAloneTableComparesTheP99) {
  EXPECT_EQ(ShortAloneTable({Sample("a", 1)}), "");  // nobody ran the comparison
  PolicyResult with = Sample("b", 1);
  with.latency_short_alone = LatencySummary{.p50 = 0.5, .p95 = 1, .p99 = 1.5, .count = 2};
  const std::string table = ShortAloneTable({Sample("a", 1), with});
  EXPECT_EQ(table,
            "| policy | short p50/p95/p99 ms, mixed | short p50/p95/p99 ms, alone | p99 mixed / alone |\n"
            "|---|---:|---:|---:|\n"
            "| b | 1.2 / 2.0 / 3.0 | 0.5 / 1.0 / 1.5 | 2.00 |\n");
  auto j = nlohmann::json::parse(ResultsJson({Sample("a", 1), with}));
  EXPECT_FALSE(j[0]["latency_ms"].contains("short_alone"));
  EXPECT_DOUBLE_EQ(j[1]["latency_ms"]["short_alone"]["p99"].get<double>(), 1.5);
}

TEST(Report, WritesPlotDataAndScripts) {
  const std::string dir = ::testing::TempDir() + "/sim_plots";
  ASSERT_TRUE(WritePlots(dir, {Sample("a", 1), Sample("b", 2)}, "padded tokens", /*run_gnuplot=*/false).ok());
  std::ifstream cdf(dir + "/latency_cdf.dat");
  std::stringstream text;
  text << cdf.rdbuf();
  // Policy a: 3 latencies (1, 3, 10 ms) + the closing point at 1.0.
  EXPECT_NE(text.str().find("# a\n1.0000 0.33333\n3.0000 0.66667\n10.0000 1.00000\n10.0000 1.00000\n"),
            std::string::npos)
      << text.str();
  EXPECT_TRUE(std::filesystem::exists(dir + "/batch_cost.gp"));
  std::ifstream gp(dir + "/latency_cdf.gp");
  std::stringstream script;
  script << gp.rdbuf();
  EXPECT_NE(script.str().find("index 1 with lines lw 2 title \"b\""), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tokenbatch::sim
