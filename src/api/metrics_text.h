// Prometheus text exposition (format 0.0.4) of the Batchers' MetricsSnapshots
// and of the device memory they share.
// Pure: thread-safe, never blocks. Internal to the server.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tokenbatch/runtime/histogram.h"
#include "tokenbatch/runtime/metrics.h"
#include "tokenbatch/runtime/shared_device_memory.h"

namespace tokenbatch::server {

// Appends `name` as a histogram: HELP/TYPE lines, cumulative _bucket{le=...}
// series (+Inf last), _sum and _count. Bounds and sum are multiplied by `scale`
// (1e-6 turns microseconds into Prometheus' base unit, seconds).
void AppendHistogram(std::string& out, std::string_view name, std::string_view help, const Histogram& h,
                     double scale = 1.0);

// One labelled series of histogram `name` (e.g. labels `route="/rerank"`):
// HELP/TYPE lines first when `help` is not empty (once per name), then the
// _bucket{labels,le=...}, _sum{labels} and _count{labels} lines.
void AppendHistogramSeries(std::string& out, std::string_view name, std::string_view help, std::string_view labels,
                           const Histogram& h, double scale = 1.0);

// `value` as the text of a label value: backslash, double quote and line feed
// escaped (the exposition format's rules).
[[nodiscard]] std::string LabelValue(std::string_view value);

// One model's snapshot and the labels that name it in each of its series
// (`model="embed"`; "" for none).
struct LabeledMetrics {
  std::string labels;
  const MetricsSnapshot* metrics = nullptr;
};

// Every metric of every snapshot, named tokenbatch_*: queue size and tokens,
// budgets, requests by outcome, batches by dispatch reason, OOM events and
// isolation retries, the learned batch times per worker, and the batch
// size/tokens/cost/fill/padding-efficiency and queue-wait and inference-time
// histograms. Each family's HELP and TYPE come once, followed by its series for
// each snapshot in order, that snapshot's labels first (the format groups a
// family's series).
[[nodiscard]] std::string MetricsSnapshotText(const std::vector<LabeledMetrics>& models);
// One snapshot, its series unlabelled.
[[nodiscard]] std::string MetricsSnapshotText(const MetricsSnapshot& m);

// The shared device memory's series: its limit, the bytes in flight and waited
// for per model (labels `model="name"`), the peak in flight, and the waits per
// model (SharedDeviceMemory::Snapshot).
[[nodiscard]] std::string DeviceMemoryText(const SharedDeviceMemory::Snapshot& device);

}  // namespace tokenbatch::server
