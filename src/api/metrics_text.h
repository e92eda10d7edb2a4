// Prometheus text exposition (format 0.0.4) of the Batcher's MetricsSnapshot.
// Pure: thread-safe, never blocks. Internal to the server.
#pragma once

#include <string>
#include <string_view>

#include "tokenbatch/runtime/histogram.h"
#include "tokenbatch/runtime/metrics.h"

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

// Every metric of `m`, named tokenbatch_*: queue size and tokens, budgets,
// requests by outcome, batches by dispatch reason, OOM events and isolation
// retries, and the batch size/tokens/cost/fill/padding-efficiency and queue-wait
// and inference-time histograms.
[[nodiscard]] std::string MetricsSnapshotText(const MetricsSnapshot& m);

}  // namespace tokenbatch::server
