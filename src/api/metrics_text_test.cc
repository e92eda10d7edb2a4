// Tests of the Prometheus text exposition.
#include "api/metrics_text.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tokenbatch::server {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(MetricsText, HistogramIsCumulativeWithSumAndCount) {
  Histogram h({1, 2, 4});
  h.Observe(0.5);
  h.Observe(3);
  h.Observe(3);
  h.Observe(10);
  std::string out;
  AppendHistogram(out, "x", "help text", h);
  EXPECT_EQ(out,
            "# HELP x help text\n# TYPE x histogram\n"
            "x_bucket{le=\"1\"} 1\nx_bucket{le=\"2\"} 1\nx_bucket{le=\"4\"} 3\nx_bucket{le=\"+Inf\"} 4\n"
            "x_sum 16.5\nx_count 4\n");
}

TEST(MetricsText, ScalesMicrosecondsToSeconds) {
  Histogram h({1000, 2000});
  h.Observe(1500);
  std::string out;
  AppendHistogram(out, "t_seconds", "t", h, 1e-6);
  EXPECT_THAT(out, HasSubstr("t_seconds_bucket{le=\"0.001\"} 0\n"));
  EXPECT_THAT(out, HasSubstr("t_seconds_bucket{le=\"0.002\"} 1\n"));
  EXPECT_THAT(out, HasSubstr("t_seconds_sum 0.0015\n"));
}

// A scraper reads a histogram's sum as a counter and subtracts two scrapes:
// past a million, six significant digits would move it in steps of ten.
TEST(MetricsText, LargeSumsKeepEveryDigit) {
  Histogram h({10});
  for (int i = 0; i < 1234567; i += 1000) h.Observe(1000);  // 1,235 observations of 1000
  h.Observe(567.25);
  std::string out;
  AppendHistogram(out, "s", "s", h);
  EXPECT_THAT(out, HasSubstr("s_sum 1235567.25\n"));
  EXPECT_THAT(out, HasSubstr("s_count 1236\n"));
}

TEST(MetricsText, SnapshotHasEveryFamily) {
  MetricsSnapshot m;
  m.queue_requests = 3;
  m.queue_tokens = 120;
  m.effective_budget = 2048;
  m.requests_succeeded = 9;
  m.failures_by_kind["cancelled"] = 2;
  m.oom_events = 1;
  const std::string out = MetricsSnapshotText(m);
  EXPECT_THAT(out, HasSubstr("tokenbatch_queue_size 3\n"));
  EXPECT_THAT(out, HasSubstr("tokenbatch_queue_tokens 120\n"));
  EXPECT_THAT(out, HasSubstr("tokenbatch_effective_budget 2048\n"));
  EXPECT_THAT(out, HasSubstr("tokenbatch_inputs_total{outcome=\"success\"} 9\n"));
  EXPECT_THAT(out, HasSubstr("tokenbatch_inputs_total{outcome=\"cancelled\"} 2\n"));
  EXPECT_THAT(out, HasSubstr("tokenbatch_oom_events_total 1\n"));
  for (const char* family : {"tokenbatch_batch_size_bucket", "tokenbatch_batch_tokens_bucket",
                             "tokenbatch_batch_fill_ratio_bucket", "tokenbatch_batch_padding_efficiency_bucket",
                             "tokenbatch_queue_wait_seconds_bucket", "tokenbatch_inference_seconds_bucket"}) {
    EXPECT_THAT(out, HasSubstr(family));
  }
}

TEST(MetricsText, LearnedLatencyIsLabelledByWorkerOrByForwardThreads) {
  MetricsSnapshot workers;
  workers.learned_latency = {{.fixed_us = 2000, .us_per_cost = 10}, {.fixed_us = 3000, .us_per_cost = 20}};
  std::string out = MetricsSnapshotText(workers);
  EXPECT_THAT(out, HasSubstr("tokenbatch_learned_batch_fixed_seconds{worker=\"1\"} 0.003\n"));
  EXPECT_THAT(out, HasSubstr("tokenbatch_learned_batch_seconds_per_cost{worker=\"0\"} 1e-05\n"));

  MetricsSnapshot widths = workers;  // intra-op adaptive: one fit per width
  widths.learned_latency_threads = {1, 4};
  out = MetricsSnapshotText(widths);
  EXPECT_THAT(out, HasSubstr("tokenbatch_learned_batch_fixed_seconds{threads=\"1\"} 0.002\n"));
  EXPECT_THAT(out, HasSubstr("tokenbatch_learned_batch_seconds_per_cost{threads=\"4\"} 2e-05\n"));
  EXPECT_THAT(out, Not(HasSubstr("worker=")));
}

TEST(MetricsText, SeveralModelsShareEachFamilysHeaderAndLabelTheirSeries) {
  MetricsSnapshot a, b;
  a.queue_requests = 1;
  b.queue_requests = 2;
  b.failures_by_kind["oversize"] = 4;
  const std::string out = MetricsSnapshotText({{"model=\"a\"", &a}, {"model=\"b\"", &b}});
  EXPECT_THAT(out, HasSubstr("# TYPE tokenbatch_queue_size gauge\ntokenbatch_queue_size{model=\"a\"} 1\n"
                             "tokenbatch_queue_size{model=\"b\"} 2\n"));
  EXPECT_THAT(out, HasSubstr("tokenbatch_inputs_total{model=\"b\",outcome=\"oversize\"} 4\n"));
  EXPECT_THAT(out, HasSubstr("tokenbatch_batch_size_bucket{model=\"a\",le=\"+Inf\"} 0\n"));
  EXPECT_THAT(out, HasSubstr("tokenbatch_batch_size_sum{model=\"b\"} 0\n"));
  EXPECT_EQ(out.find("# HELP tokenbatch_batch_size "), out.rfind("# HELP tokenbatch_batch_size "));
}

TEST(MetricsText, LabelValuesAreEscaped) {
  EXPECT_EQ(LabelValue("plain"), "plain");
  EXPECT_EQ(LabelValue("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
}

TEST(MetricsText, TheSharedDeviceMemoryPerModel) {
  SharedDeviceMemory::Snapshot device{.limit_bytes = 1000, .in_flight_bytes = 300, .peak_in_flight_bytes = 900};
  device.models.push_back({.name = "embed", .in_flight_bytes = 300, .waits = 2});
  device.models.push_back({.name = "rerank", .waiting_for_bytes = 800});
  const std::string out = DeviceMemoryText(device);
  EXPECT_THAT(out, HasSubstr("tokenbatch_device_memory_limit_bytes 1000\n"));
  EXPECT_THAT(out, HasSubstr("tokenbatch_device_memory_peak_in_flight_bytes 900\n"));
  EXPECT_THAT(out, HasSubstr("tokenbatch_device_memory_in_flight_bytes{model=\"embed\"} 300\n"));
  EXPECT_THAT(out, HasSubstr("tokenbatch_device_memory_waiting_bytes{model=\"rerank\"} 800\n"));
  EXPECT_THAT(out, HasSubstr("tokenbatch_device_memory_waits_total{model=\"embed\"} 2\n"));
}

}  // namespace
}  // namespace tokenbatch::server
