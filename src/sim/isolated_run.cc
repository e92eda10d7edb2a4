// One batch under failure isolation, and latency percentiles (isolated_run.h).
#include "sim/isolated_run.h"

#include <algorithm>
#include <cmath>

namespace tokenbatch::sim {

void RunIsolatedModel(const GpuModel& gpu, std::span<const std::int64_t> lengths, std::size_t offset,
                      std::int64_t others_bytes, IsolatedRun& run) {
  const BatchEstimate e = gpu.Estimate(lengths);
  const std::int64_t peak = e.peak_bytes + others_bytes;
  run.peak_bytes = std::max(run.peak_bytes, peak);
  if (peak <= gpu.usable_bytes()) {
    run.activation_bytes = std::max(run.activation_bytes, e.peak_bytes - gpu.weight_bytes());
    run.held_bytes = std::max(run.held_bytes, peak - gpu.weight_bytes());
    run.latency_us += e.latency_us;
    return;
  }
  ++run.oom_calls;
  run.latency_us += e.latency_us * gpu.failed_forward_fraction();
  if (lengths.size() == 1) {
    run.lost[offset] = true;
    return;
  }
  const std::size_t half = lengths.size() / 2;
  RunIsolatedModel(gpu, lengths.first(half), offset, others_bytes, run);
  RunIsolatedModel(gpu, lengths.subspan(half), offset + half, others_bytes, run);
}

LatencySummary Summarise(std::vector<double>& ms) {
  std::sort(ms.begin(), ms.end());
  LatencySummary s;
  s.count = ms.size();
  if (ms.empty()) return s;
  auto rank = [&](double p) {  // nearest rank: the ceil(p·n)-th smallest
    const auto k = static_cast<std::size_t>(std::ceil(p * static_cast<double>(ms.size())));
    return ms[std::clamp<std::size_t>(k, 1, ms.size()) - 1];
  };
  s.p50 = rank(0.50);
  s.p95 = rank(0.95);
  s.p99 = rank(0.99);
  return s;
}


}  // namespace tokenbatch::sim
