#include "tokenbatch/sim/batch_former.h"

#include <algorithm>
#include <deque>

#include "absl/strings/str_cat.h"
#include "tokenbatch/core/errors.h"
#include "tokenbatch/runtime/aimd_budget.h"

namespace tokenbatch::sim {
namespace {

struct Queued {
  RequestId id;
  std::int64_t tokens;
  TimePoint arrival;
};

// Baselines that are not core policies keep their own arrival-ordered queue.
class QueueingFormer : public BatchFormer {
 public:
  absl::Status Enqueue(RequestId id, std::int64_t tokens, TimePoint arrival) override {
    if (tokens < 1) return InvalidArgumentError("tokens must be >= 1");
    queue_.push_back({id, tokens, arrival});
    return absl::OkStatus();
  }

 protected:
  std::deque<Queued> queue_;
};

// The policy core, unchanged, under the runtime's AIMD budget.
class CoreFormer final : public BatchFormer {
 public:
  explicit CoreFormer(std::unique_ptr<Scheduler> scheduler)
      : scheduler_(std::move(scheduler)), aimd_(scheduler_->options().max_batch_tokens, AimdOptions{}) {}
  absl::Status Enqueue(RequestId id, std::int64_t tokens, TimePoint arrival) override {
    absl::StatusOr<EnqueueOutcome> r = scheduler_->Enqueue({.id = id, .tokens = tokens, .arrival = arrival});
    return r.status();
  }
  FormerDecision Next(TimePoint now) override { return Decide(now, nullptr, 0); }
  bool SupportsMemoryLimit() const override { return true; }
  FormerDecision NextWithin(TimePoint now, const CostModel& memory_model, std::int64_t allowance) override {
    return Decide(now, &memory_model, allowance);
  }
  std::size_t queued() const override { return scheduler_->queued_requests(); }
  void OnOutOfMemory(std::int64_t cost) override { aimd_.OnOutOfMemory(cost); }
  void OnAnswered(TimePoint now, std::int64_t count) override { scheduler_->OnAnswered(now, count); }

 private:
  FormerDecision Decide(TimePoint now, const CostModel* memory_model, std::int64_t allowance) {
    const BatchLatencyModel model = fit_.model();
    Decision d = scheduler_->Next(now, {.budget = aimd_.current(),
                                        .latency_model = fit_.ready() ? &model : nullptr,
                                        .memory_model = memory_model,
                                        .memory_allowance = allowance});
    FormerDecision out;
    out.batch = std::move(d.batch);
    out.fill = static_cast<double>(d.cost) / static_cast<double>(scheduler_->options().max_batch_tokens);
    out.cost = d.cost;
    out.wake_at = d.wake_at;
    out.memory_bytes = d.memory_bytes;
    out.memory_needed = d.memory_needed;
    return out;
  }

 public:
  void OnBatchRun(std::int64_t cost, double latency_us) override {
    fit_.Add(cost, latency_us);
    aimd_.OnSuccess();
  }

 private:
  std::unique_ptr<Scheduler> scheduler_;
  AimdBudget aimd_;
  // One fit for all simulated workers: they model identical devices.
  OnlineLatencyFit fit_;
};

class FixedCountFormer final : public QueueingFormer {
 public:
  FixedCountFormer(std::int64_t batch_size, Duration max_wait) : batch_size_(batch_size), max_wait_(max_wait) {}
  FormerDecision Next(TimePoint now) override {
    FormerDecision out;
    if (queue_.empty()) return out;
    const auto n = static_cast<std::size_t>(batch_size_);
    const TimePoint due = queue_.front().arrival + max_wait_;
    if (queue_.size() < n && now < due) {
      out.wake_at = due;
      return out;
    }
    const std::size_t take = std::min(n, queue_.size());
    for (std::size_t i = 0; i < take; ++i) {
      out.batch.push_back(queue_.front().id);
      queue_.pop_front();
    }
    out.fill = static_cast<double>(take) / static_cast<double>(batch_size_);
    return out;
  }
  std::size_t queued() const override { return queue_.size(); }

 private:
  std::int64_t batch_size_;
  Duration max_wait_;
};

class SortedWindowFormer final : public QueueingFormer {
 public:
  SortedWindowFormer(std::int64_t batch_size, std::int64_t window, Duration max_wait)
      : batch_size_(batch_size), window_(window), max_wait_(max_wait) {}
  FormerDecision Next(TimePoint now) override {
    FormerDecision out;
    if (ready_.empty() && !queue_.empty()) {
      const TimePoint due = queue_.front().arrival + max_wait_;
      if (queue_.size() < static_cast<std::size_t>(window_) && now < due) {
        out.wake_at = due;
        return out;
      }
      // Sort the oldest `window` requests by length (stable: ties keep arrival
      // order) and cut them into batches, shortest first.
      const std::size_t take = std::min(static_cast<std::size_t>(window_), queue_.size());
      std::vector<Queued> window(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(take));
      queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(take));
      std::stable_sort(window.begin(), window.end(),
                       [](const Queued& a, const Queued& b) { return a.tokens < b.tokens; });
      for (std::size_t i = 0; i < window.size(); i += static_cast<std::size_t>(batch_size_)) {
        std::vector<RequestId> batch;
        for (std::size_t k = i; k < std::min(window.size(), i + static_cast<std::size_t>(batch_size_)); ++k) {
          batch.push_back(window[k].id);
        }
        ready_.push_back(std::move(batch));
      }
    }
    if (ready_.empty()) return out;
    out.batch = std::move(ready_.front());
    ready_.pop_front();
    out.fill = static_cast<double>(out.batch.size()) / static_cast<double>(batch_size_);
    return out;
  }
  std::size_t queued() const override {
    std::size_t n = queue_.size();
    for (const auto& b : ready_) n += b.size();
    return n;
  }

 private:
  std::int64_t batch_size_, window_;
  Duration max_wait_;
  std::deque<std::vector<RequestId>> ready_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<BatchFormer>> MakeFormer(const PolicySpec& spec) {
  switch (spec.kind) {
    case FormerKind::kCore: {
      auto scheduler = Scheduler::Create(spec.core);
      if (!scheduler.ok()) return scheduler.status();
      return std::unique_ptr<BatchFormer>(new CoreFormer(std::move(*scheduler)));
    }
    case FormerKind::kFixedCount:
    case FormerKind::kSortedWindow:
      if (spec.batch_size < 1 || spec.window < 1 || spec.max_wait < Duration::zero()) {
        return InvalidArgumentError(
            absl::StrCat("policy ", spec.name, ": batch_size and window must be >= 1 and max_wait >= 0"));
      }
      if (spec.kind == FormerKind::kFixedCount) {
        return std::unique_ptr<BatchFormer>(new FixedCountFormer(spec.batch_size, spec.max_wait));
      }
      return std::unique_ptr<BatchFormer>(new SortedWindowFormer(spec.batch_size, spec.window, spec.max_wait));
  }
  return InvalidArgumentError("unknown former kind");
}

std::vector<PolicySpec> SeedExperimentPolicies(std::int64_t budget, const CostModel& matching) {
  SchedulerOptions base;
  base.max_batch_tokens = budget;
  base.max_batch_size = 64;
  base.max_wait = std::chrono::milliseconds(4);
  base.early_dispatch_fraction = 0.9;
  base.max_queue_size = 0;  // the simulator submits whole workloads at once
  std::vector<PolicySpec> out;
  out.push_back({.name = "fixed-32", .kind = FormerKind::kFixedCount, .batch_size = 32});
  PolicySpec seed{.name = "seed-greedy", .core = base};
  seed.core.policy = PackingPolicy::kFifo;
  seed.core.cost_model = CostModel::Sum();
  seed.core.adaptive_wait = false;  // the seed's fixed window
  out.push_back(seed);
  PolicySpec tei{.name = "tei", .core = base};
  tei.core.policy = PackingPolicy::kFifo;
  tei.core.cost_model = CostModel::Padded();
  tei.core.max_wait = Duration::zero();
  out.push_back(tei);
  out.push_back({.name = "infinity", .kind = FormerKind::kSortedWindow, .batch_size = 32, .window = 128});
  PolicySpec bucketed{.name = "ours-bucketed", .core = base};
  bucketed.core.policy = PackingPolicy::kBucketed;
  bucketed.core.cost_model = matching;
  out.push_back(bucketed);
  PolicySpec aware{.name = "ours-length-aware", .core = base};
  aware.core.policy = PackingPolicy::kLengthAware;
  aware.core.cost_model = matching;
  out.push_back(aware);
  return out;
}

}  // namespace tokenbatch::sim
