// Prometheus text for MetricsSnapshot (see metrics_text.h).
#include "api/metrics_text.h"

#include <cmath>
#include <cstdio>

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

// A sample value or bucket bound. absl::StrCat keeps only six significant
// digits of a double, so a histogram's running sum (a counter a scraper
// subtracts between scrapes) would move in steps once it grows past a million;
// 15 digits keep such sums exact to the unit for as long as a double can, and
// still print a scaled bound such as 1000 * 1e-6 as 0.001. Non-finite values
// take the exposition format's spellings.
std::string MetricValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char text[32];
  std::snprintf(text, sizeof text, "%.15g", value);
  return text;
}

// learned_latency[i]'s label: its worker, or with intra-op widths its forwards'
// threads.
std::string LatencyLabel(const MetricsSnapshot& m, std::size_t i) {
  if (i < m.learned_latency_threads.size()) return absl::StrCat("threads=\"", m.learned_latency_threads[i], "\"");
  return absl::StrCat("worker=\"", i, "\"");
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
    absl::StrAppend(&out, ToAbsl(name), "_bucket{", with, "le=\"", MetricValue(h.bounds()[i] * scale), "\"} ",
                    cumulative, "\n");
  }
  cumulative += h.counts().empty() ? 0 : h.counts().back();
  absl::StrAppend(&out, ToAbsl(name), "_bucket{", with, "le=\"+Inf\"} ", cumulative, "\n");
  absl::StrAppend(&out, ToAbsl(name), "_sum", only, " ", MetricValue(h.sum() * scale), "\n");
  absl::StrAppend(&out, ToAbsl(name), "_count", only, " ", h.count(), "\n");
}

namespace {

// `labels` and `more` joined by a comma, in braces; "" when both are empty.
std::string Braced(std::string_view labels, std::string_view more) {
  if (labels.empty() && more.empty()) return "";
  return absl::StrCat("{", ToAbsl(labels), !labels.empty() && !more.empty() ? "," : "", ToAbsl(more), "}");
}

// One family of a value per model: HELP and TYPE, then each model's series.
template <typename Get>
void Family(std::string& out, const std::vector<LabeledMetrics>& models, std::string_view name, std::string_view help,
            std::string_view type, Get get) {
  Header(out, name, help, type);
  for (const LabeledMetrics& m : models) {
    absl::StrAppend(&out, ToAbsl(name), Braced(m.labels, ""), " ", get(*m.metrics), "\n");
  }
}

}  // namespace

std::string LabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string MetricsSnapshotText(const MetricsSnapshot& m) { return MetricsSnapshotText({LabeledMetrics{"", &m}}); }

std::string MetricsSnapshotText(const std::vector<LabeledMetrics>& models) {
  std::string out;
  Family(out, models, "tokenbatch_queue_size", "Inputs queued (a split input counts once per window)", "gauge",
         [](const MetricsSnapshot& m) { return m.queue_requests; });
  Family(out, models, "tokenbatch_queue_tokens", "Tokens queued", "gauge",
         [](const MetricsSnapshot& m) { return m.queue_tokens; });
  Family(out, models, "tokenbatch_max_batch_tokens", "Configured batch budget, in the cost model's unit", "gauge",
         [](const MetricsSnapshot& m) { return m.max_batch_tokens; });
  Family(out, models, "tokenbatch_effective_budget", "AIMD-effective batch budget, in the cost model's unit", "gauge",
         [](const MetricsSnapshot& m) { return m.effective_budget; });
  Family(out, models, "tokenbatch_inputs_submitted_total", "Inputs accepted by the scheduler", "counter",
         [](const MetricsSnapshot& m) { return m.requests_submitted; });
  Header(out, "tokenbatch_inputs_total", "Inputs resolved or refused, by outcome", "counter");
  for (const LabeledMetrics& l : models) {
    absl::StrAppend(&out, "tokenbatch_inputs_total", Braced(l.labels, "outcome=\"success\""), " ",
                    l.metrics->requests_succeeded, "\n");
    for (const auto& [kind, n] : l.metrics->failures_by_kind) {
      absl::StrAppend(&out, "tokenbatch_inputs_total", Braced(l.labels, absl::StrCat("outcome=\"", kind, "\"")), " ", n,
                      "\n");
    }
  }
  Family(out, models, "tokenbatch_batches_total", "Batches dispatched", "counter",
         [](const MetricsSnapshot& m) { return m.batches_dispatched; });
  Header(out, "tokenbatch_batch_dispatch_total", "Batches by dispatch reason", "counter");
  for (const LabeledMetrics& l : models) {
    for (const auto& [reason, n] : l.metrics->dispatch_reasons) {
      absl::StrAppend(&out, "tokenbatch_batch_dispatch_total", Braced(l.labels, absl::StrCat("reason=\"", reason, "\"")),
                      " ", n, "\n");
    }
  }
  Family(out, models, "tokenbatch_oom_events_total", "Backend calls that ran out of memory (each is retried smaller)",
         "counter", [](const MetricsSnapshot& m) { return m.oom_events; });
  Family(out, models, "tokenbatch_isolation_retries_total", "Backend calls made to bisect failed batches", "counter",
         [](const MetricsSnapshot& m) { return m.isolation_retries; });
  Header(out, "tokenbatch_learned_batch_fixed_seconds",
         "Per-batch part of the batch run time, learned per worker or per forward width (0 until learned)", "gauge");
  for (const LabeledMetrics& l : models) {
    for (std::size_t w = 0; w < l.metrics->learned_latency.size(); ++w) {
      absl::StrAppend(&out, "tokenbatch_learned_batch_fixed_seconds",
                      Braced(l.labels, LatencyLabel(*l.metrics, w)), " ",
                      MetricValue(l.metrics->learned_latency[w].fixed_us * 1e-6), "\n");
    }
  }
  Header(out, "tokenbatch_learned_batch_seconds_per_cost",
         "Batch run time per unit of the cost model, learned per worker or per forward width (0 until learned)", "gauge");
  for (const LabeledMetrics& l : models) {
    for (std::size_t w = 0; w < l.metrics->learned_latency.size(); ++w) {
      absl::StrAppend(&out, "tokenbatch_learned_batch_seconds_per_cost",
                      Braced(l.labels, LatencyLabel(*l.metrics, w)), " ",
                      MetricValue(l.metrics->learned_latency[w].us_per_cost * 1e-6), "\n");
    }
  }
  struct HistogramFamily {
    const char* name;
    const char* help;
    const Histogram MetricsSnapshot::*histogram;
    double scale;
  };
  static constexpr HistogramFamily kHistograms[] = {
      {"tokenbatch_batch_size", "Inputs per batch", &MetricsSnapshot::batch_size, 1},
      {"tokenbatch_batch_tokens", "Real tokens per batch", &MetricsSnapshot::batch_tokens, 1},
      {"tokenbatch_batch_cost", "Batch cost in the cost model's unit", &MetricsSnapshot::batch_cost, 1},
      {"tokenbatch_batch_fill_ratio", "Batch cost / effective budget", &MetricsSnapshot::fill_ratio, 1},
      {"tokenbatch_batch_padding_efficiency", "Real tokens / padded tokens per batch",
       &MetricsSnapshot::padding_efficiency, 1},
      {"tokenbatch_queue_wait_seconds", "Time from queueing to dispatch", &MetricsSnapshot::queue_wait_us, 1e-6},
      {"tokenbatch_inference_seconds", "Backend time per batch, retries included", &MetricsSnapshot::batch_exec_us,
       1e-6},
  };
  for (const HistogramFamily& f : kHistograms) {
    bool first = true;
    for (const LabeledMetrics& l : models) {
      AppendHistogramSeries(out, f.name, first ? f.help : "", l.labels, l.metrics->*f.histogram, f.scale);
      first = false;
    }
  }
  return out;
}

std::string DeviceMemoryText(const SharedDeviceMemory::Snapshot& device) {
  std::string out;
  Scalar(out, "tokenbatch_device_memory_limit_bytes",
         "Bytes the models' batches in flight may hold together (--device-memory)", "gauge", device.limit_bytes);
  Scalar(out, "tokenbatch_device_memory_peak_in_flight_bytes",
         "Most bytes the models' batches held at once since start", "gauge", device.peak_in_flight_bytes);
  Header(out, "tokenbatch_device_memory_in_flight_bytes", "Bytes the model's batches in flight hold", "gauge");
  for (const SharedDeviceMemory::ModelState& m : device.models) {
    absl::StrAppend(&out, "tokenbatch_device_memory_in_flight_bytes{model=\"", LabelValue(m.name), "\"} ", m.in_flight_bytes,
                    "\n");
  }
  Header(out, "tokenbatch_device_memory_waiting_bytes",
         "Bytes the model's next batch waits for (0: not waiting)", "gauge");
  for (const SharedDeviceMemory::ModelState& m : device.models) {
    absl::StrAppend(&out, "tokenbatch_device_memory_waiting_bytes{model=\"", LabelValue(m.name), "\"} ", m.waiting_for_bytes,
                    "\n");
  }
  Header(out, "tokenbatch_device_memory_waits_total",
         "Times the model's next batch had to wait for memory other batches held", "counter");
  for (const SharedDeviceMemory::ModelState& m : device.models) {
    absl::StrAppend(&out, "tokenbatch_device_memory_waits_total{model=\"", LabelValue(m.name), "\"} ", m.waits, "\n");
  }
  return out;
}

}  // namespace tokenbatch::server
