// Reports of a policy comparison: a markdown table, the JSON array of the issue
// (one object per policy), and gnuplot plots (latency CDF per policy, histogram of
// batch cost). Numbers are formatted with fixed precision, so equal results give
// byte-identical text. Pure functions except WritePlots (files and gnuplot);
// thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tokenbatch/sim/simulator.h"

namespace tokenbatch::sim {

// The table: policy, req/s, tokens/s, short and long p50/p95/p99 (ms), padding
// efficiency, mean batch size, mean fill, batches over budget (of all), OOM
// events, requests lost, peak memory (GiB).
[[nodiscard]] std::string MarkdownTable(const std::vector<PolicyResult>& results);

// The short-request comparison, one row per policy with latency_short_alone set:
// short p50/p95/p99 under the mix, the same alone, and the p99 ratio mixed /
// alone (the target: <= 2). Empty if no result has it.
[[nodiscard]] std::string ShortAloneTable(const std::vector<PolicyResult>& results);

// JSON array (pretty-printed, two-space indent), per policy: policy,
// requests_per_s, tokens_per_s, latency_ms {short, long[, short_alone]}
// {p50, p95, p99, count},
// padding_efficiency, mean_batch_size, mean_fill, batches, batches_over_budget,
// oom_events, requests, completed, requests_lost, requests_rejected,
// peak_memory_bytes, makespan_s. Values rounded to 3 decimals.
[[nodiscard]] std::string ResultsJson(const std::vector<PolicyResult>& results);

// Every batch of every policy as JSON Lines, one object per batch in the order
// run: policy, size (B), max_tokens (Lmax), sum_tokens, cost (the batch's cost
// under the cost model the comparison's budget is in), start_ms (from the first
// arrival), latency_us (measured by bench, predicted by simulate), peak_bytes
// (the batch's own peak device memory, bytes: bench on CUDA with one worker,
// predicted by simulate; 0 where not measured), oom. For
// replaying the same batch shapes on another runtime (bench/peers/onnx_compute.py).
[[nodiscard]] std::string BatchesJsonl(const std::vector<PolicyResult>& results);

// Writes into `dir` (created if missing): latency_cdf.dat / .gp / .png (one CDF
// per policy of all completed requests' latency, log-scaled ms) and
// batch_cost.dat / .gp / .png (histogram of each policy's batch cost under the
// reference cost model). Runs `gnuplot` if `run_gnuplot`. Errors: NotFound if a
// file cannot be written; Internal if gnuplot fails. Blocks on I/O and gnuplot.
[[nodiscard]] absl::Status WritePlots(const std::string& dir, const std::vector<PolicyResult>& results,
                                      const std::string& cost_label, bool run_gnuplot);

}  // namespace tokenbatch::sim
