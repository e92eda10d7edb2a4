// Two models on one simulated device (see simulate_two_models.h).
#include "cli/simulate_two_models.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "cli/fail.h"
#include "tokenbatch/sim/shared_device.h"

namespace tokenbatch::cli {
namespace {

constexpr Command kCommand{"simulate"};

// The length-aware core over `gpu`'s memory cost model, its budget `bytes`.
sim::PolicySpec OursAlone(const sim::GpuModel& gpu, std::int64_t bytes) {
  sim::PolicySpec p{.name = "ours-length-aware"};
  p.core.cost_model = OrFail(kCommand, gpu.MatchingMemoryCostModel(), "the memory cost model");
  p.core.max_batch_tokens = bytes;
  p.core.max_batch_size = 64;
  p.core.max_wait = std::chrono::milliseconds(4);
  p.core.max_queue_size = 0;  // the simulator submits whole workloads
  return p;
}

// The nearest-rank p99 of every request of a model, ms.
std::string P99(const sim::PolicyResult& m) {
  std::vector<double> all = m.short_latencies_ms;
  all.insert(all.end(), m.long_latencies_ms.begin(), m.long_latencies_ms.end());
  if (all.empty()) return "-";
  std::sort(all.begin(), all.end());
  const auto k = static_cast<std::size_t>(std::ceil(0.99 * static_cast<double>(all.size())));
  return fmt::format("{:.1f}", all[std::clamp<std::size_t>(k, 1, all.size()) - 1]);
}

}  // namespace

void RunTwoModels(const sim::GpuModel& first, const std::vector<sim::SimRequest>& first_requests,
                  const sim::GpuModel& second, const std::vector<sim::SimRequest>& second_requests) {
  const std::int64_t activations = first.usable_bytes() - first.weight_bytes() - second.weight_bytes();
  if (activations <= 0) Fail(kCommand, "the two models' weights fill the device: no memory is left for batches");
  const sim::PolicySpec infinity{
      .name = "infinity", .kind = sim::FormerKind::kSortedWindow, .batch_size = 32, .window = 128};
  struct Row {
    const char* name;
    sim::PolicySpec first, second;
    sim::MemorySharing sharing;
  };
  const Row rows[] = {
      {"infinity (per model)", infinity, infinity, sim::MemorySharing::kPerModel},
      {"ours, a budget per model", OursAlone(first, activations), OursAlone(second, activations),
       sim::MemorySharing::kPerModel},
      {"ours, one shared budget", OursAlone(first, activations), OursAlone(second, activations),
       sim::MemorySharing::kSharedBudget},
  };
  fmt::print("# tokenbatch simulate: two models on one device\n\n");
  fmt::print("- device: {} ({:.1f} GiB usable); weights {:.2f} GiB ({}) + {:.2f} GiB ({}); {:.2f} GiB for batches\n",
             first.device().name, static_cast<double>(first.usable_bytes()) / (1 << 30),
             static_cast<double>(first.weight_bytes()) / (1 << 30), first.model().name,
             static_cast<double>(second.weight_bytes()) / (1 << 30), second.model().name,
             static_cast<double>(activations) / (1 << 30));
  fmt::print("- requests: {} to {}, {} to {}; one worker per model; concurrent batches share the GPU's compute\n\n",
             first_requests.size(), first.model().name, second_requests.size(), second.model().name);
  fmt::print("| batching | OOM events | requests lost | refused (oversize) | tokens/s (both) | p99 {} ms | p99 {} ms "
             "| peak activations GiB | memory waits |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
             first.model().name, second.model().name);
  for (const Row& row : rows) {
    const std::vector<sim::ModelLane> lanes{
        {.name = "first", .gpu = first, .policy = row.first, .requests = first_requests},
        {.name = "second", .gpu = second, .policy = row.second, .requests = second_requests}};
    auto r = sim::SimulateSharedDevice(lanes, row.sharing);
    if (!r.ok()) Fail(kCommand, fmt::format("{}: {}", row.name, std::string(r.status().message())));
    fmt::print("| {} | {} | {} | {} | {:.0f} | {} | {} | {:.2f} | {} |\n", row.name, r->oom_events,
               r->requests_lost, r->requests_rejected, r->tokens_per_s, P99(r->models[0]), P99(r->models[1]),
               static_cast<double>(r->peak_activation_bytes) / (1 << 30), r->memory_waits);
  }
}

}  // namespace tokenbatch::cli
