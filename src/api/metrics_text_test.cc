// Tests of the Prometheus text exposition.
#include "api/metrics_text.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tokenbatch::server {
namespace {

using ::testing::HasSubstr;

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

}  // namespace
}  // namespace tokenbatch::server
