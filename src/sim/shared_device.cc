// Several models on one simulated GPU (see shared_device.h).
#include "tokenbatch/sim/shared_device.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "sim/isolated_run.h"
#include "tokenbatch/core/device_memory_budget.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::sim {
namespace {

constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();
constexpr double kDone = 1e-6;  // µs of work left that counts as finished

TimePoint ToTime(std::int64_t ns) { return TimePoint{} + std::chrono::nanoseconds(ns); }
std::int64_t ToNs(TimePoint t) { return std::chrono::duration_cast<std::chrono::nanoseconds>(t - TimePoint{}).count(); }

struct Batch {
  std::size_t lane = 0;
  std::vector<RequestId> ids;
  std::vector<bool> lost;
  bool oom = false;
  std::int64_t cost = 0;           // in the lane's former's unit
  std::int64_t held_bytes = 0;     // its activations while it runs
  std::int64_t reserved_bytes = 0;  // kSharedBudget: taken from the budget
  double work_us = 0;               // its run time alone, retries included
  double left_us = 0;               // what is left of it
  std::int64_t start_ns = 0;
};

struct Lane {
  std::unique_ptr<BatchFormer> former;
  std::optional<CostModel> memory_model;  // kSharedBudget
  std::size_t free_workers = 0;
  std::int64_t wake = kNever;  // the former's wake-up
  std::size_t next = 0;        // the next request to arrive
  std::vector<std::int64_t> arrival_ns;
  double completed_tokens = 0;
  std::int64_t first_arrival = kNever, last_finish = 0;
};

}  // namespace

absl::StatusOr<SharedDeviceResult> SimulateSharedDevice(std::span<const ModelLane> lanes, MemorySharing sharing) {
  if (lanes.empty()) return InvalidArgumentError("simulate: no models");
  const std::int64_t usable = lanes.front().gpu.usable_bytes();
  std::int64_t weights = 0;
  for (const ModelLane& l : lanes) {
    if (l.requests.empty()) return InvalidArgumentError(absl::StrCat("simulate: model ", l.name, " has no requests"));
    if (l.workers == 0) return InvalidArgumentError(absl::StrCat("simulate: model ", l.name, ": workers must be >= 1"));
    if (l.gpu.usable_bytes() != usable) {
      return InvalidArgumentError(absl::StrCat("simulate: model ", l.name, " is on a device of another size"));
    }
    for (const SimRequest& r : l.requests) {
      if (r.tokens < 1 || r.arrival_us < 0) {
        return InvalidArgumentError(absl::StrCat("simulate: model ", l.name, " has a request with tokens < 1"));
      }
    }
    weights += l.gpu.weight_bytes();
  }
  SharedDeviceResult out;
  out.activation_limit_bytes = usable - weights;
  if (out.activation_limit_bytes <= 0) return InvalidArgumentError("simulate: the models' weights fill the device");

  std::vector<Lane> state(lanes.size());
  std::optional<DeviceMemoryBudget> budget;
  DeviceMemoryBudgetOptions shares{.limit_bytes = out.activation_limit_bytes};
  for (std::size_t i = 0; i < lanes.size(); ++i) {
    absl::StatusOr<std::unique_ptr<BatchFormer>> former = MakeFormer(lanes[i].policy);
    if (!former.ok()) return former.status();
    state[i].former = *std::move(former);
    state[i].free_workers = lanes[i].workers;
    state[i].arrival_ns.assign(lanes[i].requests.size(), 0);
    if (sharing == MemorySharing::kSharedBudget) {
      if (!state[i].former->SupportsMemoryLimit()) {
        return InvalidArgumentError(absl::StrCat("simulate: model ", lanes[i].name, "'s policy ",
                                                 lanes[i].policy.name, " cannot share a memory budget"));
      }
      absl::StatusOr<CostModel> memory = lanes[i].gpu.MatchingMemoryCostModel();
      if (!memory.ok()) return memory.status();
      state[i].memory_model = *memory;
      // Its scheduler refuses longer inputs (Oversize) than its own budget holds.
      std::int64_t longest = 0;
      for (const SimRequest& r : lanes[i].requests) longest = std::max(longest, r.tokens);
      longest = std::min(longest, EffectiveMaxInputTokens(lanes[i].policy.core));
      shares.models.push_back({.name = lanes[i].name,
                               .weight = lanes[i].weight,
                               .guaranteed_bytes = lanes[i].guaranteed_bytes,
                               .largest_batch_bytes = memory->SingleCost(longest)});
    }
    out.models.push_back(PolicyResult{.policy = lanes[i].name, .requests = lanes[i].requests.size()});
  }
  if (sharing == MemorySharing::kSharedBudget) {
    absl::StatusOr<DeviceMemoryBudget> created = DeviceMemoryBudget::Create(shares);
    if (!created.ok()) return created.status();
    budget = *std::move(created);
  }

  std::vector<Batch> running;
  std::int64_t now = 0, in_flight_bytes = 0;
  std::size_t total = 0, finished = 0;
  for (const ModelLane& l : lanes) total += l.requests.size();
  std::vector<std::vector<double>> short_ms(lanes.size()), long_ms(lanes.size());

  while (finished < total) {
    // The next event: an arrival, a batch's end (each of k running batches
    // advances at 1/k), or a wake-up of a lane with a free worker.
    std::int64_t t = kNever;
    for (std::size_t i = 0; i < lanes.size(); ++i) {
      const Lane& s = state[i];
      if (s.next < lanes[i].requests.size()) t = std::min(t, lanes[i].requests[s.next].arrival_us * 1000);
      if (s.free_workers > 0) t = std::min(t, s.wake);
    }
    double least = std::numeric_limits<double>::infinity();
    for (const Batch& b : running) least = std::min(least, b.left_us);
    const double k = static_cast<double>(running.size());
    if (!running.empty()) t = std::min(t, now + std::max<std::int64_t>(1, std::llround(least * k * 1000)));
    if (t == kNever) return absl::InternalError("simulate: the models stalled");
    t = std::max(t, now);
    for (Batch& b : running) b.left_us -= static_cast<double>(t - now) / 1000.0 / k;
    now = t;

    // Batches that ended give their memory back and answer their requests.
    for (std::size_t j = 0; j < running.size();) {
      if (running[j].left_us > kDone) {
        ++j;
        continue;
      }
      Batch done = std::move(running[j]);
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(j));
      Lane& s = state[done.lane];
      PolicyResult& r = out.models[done.lane];
      in_flight_bytes -= done.held_bytes;
      if (budget) budget->Release(done.lane, done.reserved_bytes);
      ++s.free_workers;
      if (!done.oom) s.former->OnBatchRun(done.cost, static_cast<double>(now - done.start_ns) / 1000.0);
      s.former->OnAnswered(ToTime(now), static_cast<std::int64_t>(done.ids.size()));
      for (std::size_t q = 0; q < done.ids.size(); ++q) {
        const SimRequest& req = lanes[done.lane].requests[done.ids[q]];
        if (done.lost[q]) {
          ++r.requests_lost;
          continue;
        }
        ++r.completed;
        s.completed_tokens += static_cast<double>(req.tokens);
        const double ms = static_cast<double>(now - s.arrival_ns[done.ids[q]]) / 1e6;
        (req.is_long ? long_ms : short_ms)[done.lane].push_back(ms);
      }
      s.last_finish = now;
      finished += done.ids.size();
    }
    // Arrivals.
    for (std::size_t i = 0; i < lanes.size(); ++i) {
      Lane& s = state[i];
      while (s.next < lanes[i].requests.size() && lanes[i].requests[s.next].arrival_us * 1000 <= now) {
        const std::size_t id = s.next++;
        s.arrival_ns[id] = now;
        s.first_arrival = std::min(s.first_arrival, now);
        if (!s.former->Enqueue(id, lanes[i].requests[id].tokens, ToTime(now)).ok()) {
          ++out.models[i].requests_rejected;
          ++finished;
        }
      }
    }
    // Every lane with a free worker forms what it can, in lane order.
    for (std::size_t i = 0; i < lanes.size(); ++i) {
      Lane& s = state[i];
      s.wake = kNever;
      while (s.free_workers > 0 && s.former->queued() > 0) {
        FormerDecision d = budget ? s.former->NextWithin(ToTime(now), *s.memory_model, budget->Allowance(i))
                                  : s.former->Next(ToTime(now));
        if (d.batch.empty()) {
          if (budget && d.memory_needed > 0) {
            budget->Wait(i, d.memory_needed);
          } else if (budget) {
            budget->StopWaiting(i);  // formed no batch for another reason: it reserves nothing
          }
          if (d.wake_at) s.wake = std::max(ToNs(*d.wake_at), now + 1);
          break;
        }
        if (budget) budget->Acquire(i, d.memory_bytes);
        std::vector<std::int64_t> lengths;
        for (RequestId id : d.batch) lengths.push_back(lanes[i].requests[id].tokens);
        // What the device holds beside it: the other models' weights and every
        // running batch's activations.
        const std::int64_t others = weights - lanes[i].gpu.weight_bytes() + in_flight_bytes;
        IsolatedRun run{.lost = std::vector<bool>(lengths.size(), false)};
        RunIsolatedModel(lanes[i].gpu, lengths, 0, others, run);
        if (run.oom_calls > 0) s.former->OnOutOfMemory(d.cost);
        PolicyResult& r = out.models[i];
        r.oom_events += run.oom_calls;
        ++r.batches;
        in_flight_bytes += run.activation_bytes;
        out.peak_activation_bytes = std::max(out.peak_activation_bytes, in_flight_bytes);
        running.push_back(Batch{.lane = i,
                                .ids = std::move(d.batch),
                                .lost = std::move(run.lost),
                                .oom = run.oom_calls > 0,
                                .cost = d.cost,
                                .held_bytes = run.activation_bytes,
                                .reserved_bytes = budget ? d.memory_bytes : 0,
                                .work_us = run.latency_us,
                                .left_us = std::max(run.latency_us, 1e-3),
                                .start_ns = now});
        --s.free_workers;
      }
    }
  }

  std::int64_t first = kNever, last = 0;
  double tokens = 0;
  for (const Lane& s : state) {
    first = std::min(first, s.first_arrival);
    last = std::max(last, s.last_finish);
    tokens += s.completed_tokens;
  }
  out.makespan_s = static_cast<double>(last - (first == kNever ? 0 : first)) / 1e9;
  for (std::size_t i = 0; i < lanes.size(); ++i) {
    PolicyResult& r = out.models[i];
    r.makespan_s = out.makespan_s;
    if (out.makespan_s > 0) {
      r.requests_per_s = static_cast<double>(r.completed) / out.makespan_s;
      r.tokens_per_s = state[i].completed_tokens / out.makespan_s;
    }
    r.latency_short = Summarise(short_ms[i]);
    r.latency_long = Summarise(long_ms[i]);
    r.short_latencies_ms = std::move(short_ms[i]);
    r.long_latencies_ms = std::move(long_ms[i]);
    out.oom_events += r.oom_events;
    out.requests_lost += r.requests_lost;
    out.requests_rejected += r.requests_rejected;
    if (budget) out.memory_waits += budget->waits(i);
  }
  if (out.makespan_s > 0) out.tokens_per_s = tokens / out.makespan_s;
  return out;
}

}  // namespace tokenbatch::sim
