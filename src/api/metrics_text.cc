// Prometheus text for MetricsSnapshot (see metrics_text.h).
#include "api/metrics_text.h"

#include "absl/strings/str_cat.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::server {
namespace {

void Header(std::string& out, std::string_view name, std::string_view help, std::string_view type) {
  absl::StrAppend(&out, "# HELP ", ToAbsl(name), " ", ToAbsl(help), "\n# TYPE ", ToAbsl(name), " ", ToAbsl(type),
                  "\n");
}
template <typename T>
void Scalar(std::string& out, std::string_view name, std::string_view help, std::string_view type, T value) {
  Header(out, name, help, type);
  absl::StrAppend(&out, ToAbsl(name), " ", value, "\n");
}

}  // namespace

void AppendHistogram(std::string& out, std::string_view name, std::string_view help, const Histogram& h,
                     double scale) {
  AppendHistogramSeries(out, name, help, "", h, scale);
}

void AppendHistogramSeries(std::string& out, std::string_view name, std::string_view help, std::string_view labels,
                           const Histogram& h, double scale) {
  if (!help.empty()) Header(out, name, help, "histogram");
  const std::string with = labels.empty() ? std::string() : absl::StrCat(ToAbsl(labels), ",");
  const std::string only = labels.empty() ? std::string() : absl::StrCat("{", ToAbsl(labels), "}");
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < h.bounds().size(); ++i) {
    cumulative += h.counts()[i];
    absl::StrAppend(&out, ToAbsl(name), "_bucket{", with, "le=\"", h.bounds()[i] * scale, "\"} ", cumulative, "\n");
  }
  cumulative += h.counts().empty() ? 0 : h.counts().back();
  absl::StrAppend(&out, ToAbsl(name), "_bucket{", with, "le=\"+Inf\"} ", cumulative, "\n");
  absl::StrAppend(&out, ToAbsl(name), "_sum", only, " ", h.sum() * scale, "\n");
  absl::StrAppend(&out, ToAbsl(name), "_count", only, " ", h.count(), "\n");
}

std::string MetricsSnapshotText(const MetricsSnapshot& m) {
  std::string out;
  Scalar(out, "tokenbatch_queue_size", "Inputs queued (a split input counts once per window)", "gauge",
         m.queue_requests);
  Scalar(out, "tokenbatch_queue_tokens", "Tokens queued", "gauge", m.queue_tokens);
  Scalar(out, "tokenbatch_max_batch_tokens", "Configured batch budget, in the cost model's unit", "gauge",
         m.max_batch_tokens);
  Scalar(out, "tokenbatch_effective_budget", "AIMD-effective batch budget, in the cost model's unit", "gauge",
         m.effective_budget);
  Scalar(out, "tokenbatch_inputs_submitted_total", "Inputs accepted by the scheduler", "counter",
         m.requests_submitted);
  Header(out, "tokenbatch_inputs_total", "Inputs resolved or refused, by outcome", "counter");
  absl::StrAppend(&out, "tokenbatch_inputs_total{outcome=\"success\"} ", m.requests_succeeded, "\n");
  for (const auto& [kind, n] : m.failures_by_kind) {
    absl::StrAppend(&out, "tokenbatch_inputs_total{outcome=\"", kind, "\"} ", n, "\n");
  }
  Scalar(out, "tokenbatch_batches_total", "Batches dispatched", "counter", m.batches_dispatched);
  Header(out, "tokenbatch_batch_dispatch_total", "Batches by dispatch reason", "counter");
  for (const auto& [reason, n] : m.dispatch_reasons) {
    absl::StrAppend(&out, "tokenbatch_batch_dispatch_total{reason=\"", reason, "\"} ", n, "\n");
  }
  Scalar(out, "tokenbatch_oom_events_total", "Backend calls that ran out of memory (each is retried smaller)",
         "counter", m.oom_events);
  Scalar(out, "tokenbatch_isolation_retries_total", "Backend calls made to bisect failed batches", "counter",
         m.isolation_retries);
  Header(out, "tokenbatch_learned_batch_fixed_seconds",
         "Per-batch part of the batch run time, learned per worker (0 until learned)", "gauge");
  for (std::size_t w = 0; w < m.learned_latency.size(); ++w) {
    absl::StrAppend(&out, "tokenbatch_learned_batch_fixed_seconds{worker=\"", w, "\"} ",
                    m.learned_latency[w].fixed_us * 1e-6, "\n");
  }
  Header(out, "tokenbatch_learned_batch_seconds_per_cost",
         "Batch run time per unit of the cost model, learned per worker (0 until learned)", "gauge");
  for (std::size_t w = 0; w < m.learned_latency.size(); ++w) {
    absl::StrAppend(&out, "tokenbatch_learned_batch_seconds_per_cost{worker=\"", w, "\"} ",
                    m.learned_latency[w].us_per_cost * 1e-6, "\n");
  }
  AppendHistogram(out, "tokenbatch_batch_size", "Inputs per batch", m.batch_size);
  AppendHistogram(out, "tokenbatch_batch_tokens", "Real tokens per batch", m.batch_tokens);
  AppendHistogram(out, "tokenbatch_batch_cost", "Batch cost in the cost model's unit", m.batch_cost);
  AppendHistogram(out, "tokenbatch_batch_fill_ratio", "Batch cost / effective budget", m.fill_ratio);
  AppendHistogram(out, "tokenbatch_batch_padding_efficiency", "Real tokens / padded tokens per batch",
                  m.padding_efficiency);
  AppendHistogram(out, "tokenbatch_queue_wait_seconds", "Time from queueing to dispatch", m.queue_wait_us, 1e-6);
  AppendHistogram(out, "tokenbatch_inference_seconds", "Backend time per batch, retries included",
                  m.batch_exec_us, 1e-6);
  return out;
}

}  // namespace tokenbatch::server
