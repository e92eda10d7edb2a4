#include "tokenbatch/sim/simulator.h"

#include "sim/isolated_run.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <queue>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::sim {
namespace {

constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();

TimePoint ToTime(std::int64_t ns) { return TimePoint{} + std::chrono::nanoseconds(ns); }
std::int64_t ToNs(TimePoint t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t - TimePoint{}).count();
}

// (time ns, insertion sequence, payload index): ordered by time, then sequence,
// so simultaneous events are handled in the order they were scheduled.
using Event = std::tuple<std::int64_t, std::uint64_t, std::size_t>;
using EventQueue = std::priority_queue<Event, std::vector<Event>, std::greater<>>;

struct Running {
  std::vector<RequestId> ids;
  std::vector<bool> lost;             // per id: failed with out-of-memory alone
  bool oom = false;                   // any call of the batch ran out of memory
  std::int64_t cost = 0;              // in the former's cost model (FormerDecision::cost)
  double latency_us = 0;              // simulated run time, retries included
  std::int64_t activation_bytes = 0;  // held while it runs (SimOptions::shared_memory)
  int threads = 0;                    // SimOptions::intra_op: the cores it holds
};

// The time of a forward on `threads` threads over the GpuModel's (measured on
// speed.model_threads), where `cores` threads run speed.speedup times as fast
// as one: Amdahl's law t(n) = t(1) · (1 − p + p / n), p fitted to the speedup.
double WidthFactor(int threads, int cores, const IntraOpSpeedup& speed) {
  if (cores <= 1) return 1.0;
  const double p = (1.0 - 1.0 / speed.speedup) / (1.0 - 1.0 / cores);
  auto time = [&](int n) { return 1.0 - p + p / n; };
  return time(threads) / time(speed.model_threads);
}

absl::StatusOr<std::optional<IntraOpWidth>> MakeWidths(const SimOptions& options) {
  if (!options.intra_op) return std::optional<IntraOpWidth>();
  absl::StatusOr<IntraOpWidth> widths = IntraOpWidth::Create(*options.intra_op);
  if (!widths.ok()) return widths.status();
  const int cores = options.intra_op->cores;
  if (options.workers != static_cast<std::size_t>(cores)) {
    return InvalidArgumentError(absl::StrCat("simulate: intra_op runs one worker per core: workers must be ", cores));
  }
  const IntraOpSpeedup& speed = options.intra_op_speedup;
  if (!(speed.speedup >= 1) || !std::isfinite(speed.speedup) ||
      (speed.model_threads != 1 && speed.model_threads != cores)) {
    return InvalidArgumentError(absl::StrCat("simulate: intra_op speedup must be >= 1 and model_threads 1 or ", cores));
  }
  return std::optional<IntraOpWidth>(*std::move(widths));
}

}  // namespace

absl::StatusOr<PolicyResult> Simulate(const PolicySpec& policy, const GpuModel& gpu,
                                      std::span<const SimRequest> requests, const SimOptions& options,
                                      const ProgressFn& progress) {
  if (requests.empty()) return InvalidArgumentError("simulate: empty workload");
  if (options.workers == 0) return InvalidArgumentError("simulate: workers must be >= 1");
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (requests[i].tokens < 1 || requests[i].arrival_us < 0) {
      return InvalidArgumentError(absl::StrCat("simulate: request ", i, " has tokens < 1 or arrival < 0"));
    }
  }
  absl::StatusOr<std::unique_ptr<BatchFormer>> made = MakeFormer(policy);
  if (!made.ok()) return made.status();
  BatchFormer& former = **made;
  absl::StatusOr<std::optional<IntraOpWidth>> made_widths = MakeWidths(options);
  if (!made_widths.ok()) return made_widths.status();
  std::optional<IntraOpWidth>& widths = *made_widths;

  const std::size_t n = requests.size();
  const bool closed = options.clients > 0;
  std::uint64_t seq = 0;
  EventQueue arrivals, completions;
  std::size_t next_closed = 0;  // closed loop: the next request to send
  auto send_next = [&](std::int64_t at) {
    if (next_closed < n) arrivals.emplace(at, seq++, next_closed++);
  };
  if (closed) {
    for (std::size_t c = 0; c < options.clients; ++c) send_next(0);
  } else {
    for (std::size_t i = 0; i < n; ++i) arrivals.emplace(requests[i].arrival_us * 1000, seq++, i);
  }

  PolicyResult r;
  r.policy = policy.name;
  r.requests = n;
  std::vector<std::int64_t> arrival_ns(n, 0);
  std::vector<Running> running;
  std::size_t free_workers = options.workers, finished = 0;
  std::int64_t in_flight_bytes = 0;  // activations of the running batches (shared memory only)
  std::int64_t wake = kNever;  // the former's wake-up; kNever: none
  std::int64_t now = 0, first_arrival = kNever, last_finish = 0;
  double sum_real = 0, sum_padded = 0, sum_fill = 0, sum_size = 0, completed_tokens = 0;

  auto finish = [&](std::size_t count) {
    finished += count;
    last_finish = now;
    if (closed) {
      for (std::size_t k = 0; k < count; ++k) send_next(now);
    }
    if (progress) progress(finished, n);
  };

  while (finished < n) {
    std::int64_t t = kNever;
    if (!completions.empty()) t = std::min(t, std::get<0>(completions.top()));
    if (!arrivals.empty()) t = std::min(t, std::get<0>(arrivals.top()));
    if (free_workers > 0) t = std::min(t, wake);
    if (t == kNever) return absl::InternalError(absl::StrCat("simulate: policy ", policy.name, " stalled"));
    now = std::max(now, t);

    while (!completions.empty() && std::get<0>(completions.top()) <= now) {
      Running done = std::move(running[std::get<2>(completions.top())]);
      completions.pop();
      in_flight_bytes -= done.activation_bytes;
      ++free_workers;
      if (widths) widths->Finish(done.threads);
      // Learned when the batch ends, as a runtime worker learns it.
      if (!done.oom) former.OnBatchRun(done.cost, done.latency_us);
      former.OnAnswered(ToTime(now), static_cast<std::int64_t>(done.ids.size()));
      for (std::size_t k = 0; k < done.ids.size(); ++k) {
        const RequestId id = done.ids[k];
        if (done.lost[k]) {
          ++r.requests_lost;
          continue;
        }
        ++r.completed;
        completed_tokens += static_cast<double>(requests[id].tokens);
        const double ms = static_cast<double>(now - arrival_ns[id]) / 1e6;
        (requests[id].is_long ? r.long_latencies_ms : r.short_latencies_ms).push_back(ms);
      }
      finish(done.ids.size());
    }
    while (!arrivals.empty() && std::get<0>(arrivals.top()) <= now) {
      const std::size_t i = std::get<2>(arrivals.top());
      arrivals.pop();
      arrival_ns[i] = now;
      first_arrival = std::min(first_arrival, now);
      if (!former.Enqueue(i, requests[i].tokens, ToTime(now)).ok()) {
        ++r.requests_rejected;
        finish(1);
      }
    }
    wake = kNever;
    while (free_workers > 0 && former.queued() > 0) {
      if (widths && !widths->CanStart()) {
        widths->OnWaitingForCore(ToTime(now));  // a completion frees a core
        break;
      }
      FormerDecision d = former.Next(ToTime(now));
      if (d.batch.empty()) {
        // A wake time not after now would spin; the core never asks for one, but
        // guard anyway by stepping one nanosecond.
        if (d.wake_at) wake = std::max(ToNs(*d.wake_at), now + 1);
        break;
      }
      std::vector<std::int64_t> lengths;
      BatchShape shape;
      for (RequestId id : d.batch) {
        lengths.push_back(requests[id].tokens);
        shape = shape.With(requests[id].tokens);
      }
      IsolatedRun run{.lost = std::vector<bool>(lengths.size(), false)};
      RunIsolatedModel(gpu, lengths, 0, options.shared_memory ? in_flight_bytes : 0, run);
      int threads = 0;
      if (widths) {
        threads = widths->Start(ToTime(now), former.queued() > 0);
        run.latency_us *= WidthFactor(threads, widths->cores(), options.intra_op_speedup);
      }
      const bool oom = run.oom_calls > 0;
      // The runtime cuts the budget at the first failed call, a fraction of a
      // forward after dispatch: before any other batch could be formed here.
      if (oom) former.OnOutOfMemory(d.cost);
      BatchRecord b{.start_ns = now,
                    .size = shape.size,
                    .max_tokens = shape.max_tokens,
                    .sum_tokens = shape.sum_tokens,
                    .cost = options.over_budget_model.Cost(shape),
                    .latency_us = run.latency_us,
                    .threads = threads,
                    .peak_bytes = run.peak_bytes,
                    .oom = oom};
      r.batches_over_budget += b.cost > options.over_budget_limit ? 1 : 0;
      r.oom_events += run.oom_calls;
      r.peak_memory_bytes = std::max(r.peak_memory_bytes, run.peak_bytes);
      r.peak_forward_bytes = std::max(r.peak_forward_bytes, run.held_bytes);
      const std::int64_t held = options.shared_memory ? run.activation_bytes : 0;
      in_flight_bytes += held;
      sum_real += static_cast<double>(shape.sum_tokens);
      sum_padded += static_cast<double>(shape.padded_tokens());
      sum_fill += d.fill;
      sum_size += static_cast<double>(shape.size);
      r.batch_records.push_back(b);
      const std::int64_t latency_ns = std::max<std::int64_t>(1, std::llround(run.latency_us * 1000.0));
      running.push_back({std::move(d.batch), std::move(run.lost), oom, d.cost, run.latency_us, held, threads});
      completions.emplace(now + latency_ns, seq++, running.size() - 1);
      --free_workers;
    }
  }

  r.batches = r.batch_records.size();
  r.makespan_s = static_cast<double>(last_finish - (first_arrival == kNever ? 0 : first_arrival)) / 1e9;
  if (r.makespan_s > 0) {
    r.requests_per_s = static_cast<double>(r.completed) / r.makespan_s;
    r.tokens_per_s = completed_tokens / r.makespan_s;
  }
  r.padding_efficiency = sum_padded > 0 ? sum_real / sum_padded : 1.0;
  if (r.batches > 0) {
    r.mean_batch_size = sum_size / static_cast<double>(r.batches);
    r.mean_fill = sum_fill / static_cast<double>(r.batches);
  }
  r.latency_short = Summarise(r.short_latencies_ms);
  r.latency_long = Summarise(r.long_latencies_ms);
  return r;
}

}  // namespace tokenbatch::sim
