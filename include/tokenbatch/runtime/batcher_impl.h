// Batcher's member definitions, submit side: Create, Submit, Cancel, Shutdown and
// the observers (a template, so they live in a header). The worker side is in
// batcher_worker_impl.h. Include tokenbatch/runtime/batcher.h, not this file.
#pragma once

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"

namespace tokenbatch {

template <typename In, typename Out>
absl::StatusOr<std::unique_ptr<Batcher<In, Out>>> Batcher<In, Out>::Create(const BatcherOptions& options,
                                                                            Backend backend, Hooks hooks) {
  if (!backend) return InvalidArgumentError("Batcher needs a backend function");
  if (options.num_workers < 1) {
    return InvalidArgumentError(absl::StrCat("num_workers must be >= 1, got ", options.num_workers));
  }
  const OversizePolicy oversize = options.scheduler.oversize;
  if (oversize != OversizePolicy::kReject && !hooks.slice) {
    return InvalidArgumentError(absl::StrCat("oversize policy '", ToAbsl(OversizePolicyName(oversize)),
                                             "' needs Hooks::slice"));
  }
  if (oversize == OversizePolicy::kSplit && !hooks.merge) {
    return InvalidArgumentError("oversize policy 'split' needs Hooks::merge");
  }
  if (absl::Status s = AimdBudget::Validate(options.scheduler.max_batch_tokens, options.aimd); !s.ok()) return s;
  auto scheduler = Scheduler::Create(options.scheduler);
  if (!scheduler.ok()) return scheduler.status();
  std::unique_ptr<Batcher> batcher(
      new Batcher(options, std::move(*scheduler), std::move(backend), std::move(hooks)));
  for (int i = 0; i < options.num_workers; ++i) {
    batcher->workers_.emplace_back([b = batcher.get()] { b->WorkerLoop(); });
  }
  batcher->deadline_thread_ = std::thread([b = batcher.get()] { b->DeadlineLoop(); });
  return batcher;
}

template <typename In, typename Out>
absl::Status Batcher<In, Out>::Refuse(absl::Status status) {
  MutexLock lock(&mu_);
  recorder_.OnRefused(GetErrorKind(status));
  return status;
}

template <typename In, typename Out>
absl::Status Batcher<In, Out>::CheckCapacityLocked(std::size_t requests, std::int64_t tokens) const {
  return CheckQueueCapacity(options_.scheduler, scheduled_requests_ + intake_.size(),
                            scheduled_tokens_ + intake_tokens_, requests, tokens);
}

namespace batcher_internal {
// Every slot of the slab is live: refused like a full queue.
inline absl::Status SlabFullError() {
  return QueueFullError("queue full: 67,108,864 requests unresolved (the Batcher's limit)");
}
}  // namespace batcher_internal

template <typename In, typename Out>
void Batcher<In, Out>::Stamp(Record& r, int priority, std::int64_t tokens, TimePoint now, In&& input) {
  r.stage = Stage::kQueued;
  r.priority = priority;
  r.tokens = tokens;
  r.arrival = now;
  r.input.emplace(std::move(input));
}

// The common case: a request that fits, without a deadline, goes to the intake.
template <typename In, typename Out>
absl::StatusOr<RequestId> Batcher<In, Out>::Submit(In&& input, std::int64_t tokens, const SubmitOptions& options,
                                                   Callback done) {
  if (!done) return InvalidArgumentError("Submit needs a callback");
  return SubmitWith(std::move(input), tokens, options, Notifier{std::move(done), {}});
}

template <typename In, typename Out>
absl::StatusOr<typename Batcher<In, Out>::Ticket> Batcher<In, Out>::Submit(In&& input, std::int64_t tokens,
                                                                            const SubmitOptions& options) {
  auto [promise, future] = ResultPromise<Out>::Make();
  Notifier done{nullptr, std::move(promise)};
  absl::StatusOr<RequestId> id = SubmitWith(std::move(input), tokens, options, std::move(done));
  if (!id.ok()) return id.status();
  return Ticket{*id, std::move(future)};
}

template <typename In, typename Out>
absl::StatusOr<RequestId> Batcher<In, Out>::SubmitWith(In&& input, std::int64_t tokens,
                                                       const SubmitOptions& options, Notifier done) {
  if (tokens < 1 || tokens > max_input_tokens_ || options.deadline) {
    return SubmitPlanned(std::move(input), tokens, options, std::move(done));
  }
  const TimePoint now = SteadyClock::now();
  absl::Status refused;
  RequestId id = 0;
  bool wake = false;
  {
    MutexLock lock(&intake_mu_);
    std::optional<RequestId> slot;
    if (!accepting_) {
      refused = ShuttingDownError("batcher is shutting down; request not accepted");
    } else if (refused = CheckCapacityLocked(1, tokens); refused.ok() && !(slot = slab_.Allocate())) {
      refused = batcher_internal::SlabFullError();
    }
    if (refused.ok()) {
      id = *slot;
      Record& r = slab_.Get(id);
      Stamp(r, options.priority, tokens, now, std::move(input));
      r.done = std::move(done);
      intake_.push_back(id);
      intake_tokens_ += tokens;
      ++submitted_;
      if (sleeping_workers_ > 0 && !wake_signalled_ && wake_rule_.OnArrival(tokens, options.priority, now)) {
        wake = wake_signalled_ = true;
      }
    }
  }
  if (!refused.ok()) return Refuse(std::move(refused));
  if (wake) wake_cv_.notify_one();
  return id;
}

template <typename In, typename Out>
absl::StatusOr<RequestId> Batcher<In, Out>::SubmitPlanned(In&& input, std::int64_t tokens,
                                                          const SubmitOptions& options, Notifier done) {
  AdmissionPlan plan;
  if (tokens < 1 || tokens > max_input_tokens_) {
    absl::StatusOr<AdmissionPlan> planned = PlanAdmission(tokens, options_.scheduler);
    if (!planned.ok()) return Refuse(planned.status());
    plan = std::move(*planned);
  }
  const bool whole = plan.action == AdmissionPlan::Action::kAdmit;
  const std::vector<TokenWindow> windows = whole ? std::vector<TokenWindow>{{0, tokens}} : plan.windows;
  // Slice outside the locks: truncation and splitting copy tokens.
  std::vector<In> pieces;
  std::int64_t total_tokens = 0;
  for (const TokenWindow& w : windows) {
    total_tokens += w.size();
    if (whole) break;
    absl::StatusOr<In> piece = InvalidArgumentError("slicer threw");
    try {
      piece = hooks_.slice(input, w);
    } catch (const std::exception& e) {
      piece = InvalidArgumentError(absl::StrCat("slicer threw: ", e.what()));
    } catch (...) {
    }
    if (!piece.ok()) return Refuse(piece.status());
    pieces.push_back(std::move(*piece));
  }
  const bool split = windows.size() > 1;

  const TimePoint now = SteadyClock::now();
  absl::Status refused;
  RequestId id = 0;
  std::vector<RequestId> scheduled;  // the request itself, or its windows
  std::vector<Completion> completions;
  bool wake = false;
  {
    MutexLock lock(&mu_);
    {
      MutexLock intake(&intake_mu_);
      if (!accepting_) {
        refused = ShuttingDownError("batcher is shutting down; request not accepted");
      } else {
        refused = CheckCapacityLocked(windows.size(), total_tokens);
      }
      for (std::size_t i = 0; refused.ok() && i < windows.size() + (split ? 1 : 0); ++i) {
        std::optional<RequestId> slot = slab_.Allocate();
        if (!slot) {
          refused = batcher_internal::SlabFullError();
        } else if (id == 0) {
          id = *slot;
          if (!split) scheduled.push_back(id);
        } else {
          scheduled.push_back(*slot);
        }
      }
      if (!refused.ok()) {
        if (split && id != 0) scheduled.push_back(id);
        for (RequestId r : scheduled) slab_.Get(r).id = 0, slab_.Release(r);
      } else {
        scheduled_requests_ += windows.size();  // published now, before the Scheduler has them
        scheduled_tokens_ += total_tokens;
        ++submitted_;
        // A sleeping worker's rule must count these too, or a later intake
        // arrival that fills the batch together with them would not wake it.
        for (const TokenWindow& w : windows) {
          if (sleeping_workers_ > 0 && !wake_signalled_) {
            wake = wake_rule_.OnArrival(w.size(), options.priority, now) || wake;
          }
        }
      }
    }
    if (!refused.ok()) {
      recorder_.OnRefused(GetErrorKind(refused));
      return refused;
    }
    Record& request = slab_.Get(id);
    request.stage = split ? Stage::kSplitParent : Stage::kQueued;
    request.deadline = options.deadline;
    request.done = std::move(done);
    if (split) {
      request.split = std::make_unique<SplitState>();
      request.split->windows = windows;
      request.split->parts.resize(windows.size());
      request.split->children = scheduled;
      request.split->remaining = windows.size();
    }
    absl::Status failed;
    for (std::size_t i = 0; i < scheduled.size(); ++i) {
      Record& r = slab_.Get(scheduled[i]);
      r.parent = split ? id : 0;
      r.index = static_cast<std::uint32_t>(i);
      Stamp(r, options.priority, windows[i].size(), now, pieces.empty() ? std::move(input) : std::move(pieces[i]));
      auto queued = scheduler_->Enqueue({scheduled[i], r.tokens, now, options.priority, options.deadline});
      if (!queued.ok()) failed = queued.status();
      wake = wake || (queued.ok() && queued->wake_worker);
    }
    if (options.deadline) {
      const bool earliest = deadlines_.empty() || *options.deadline < deadlines_.begin()->first;
      deadlines_.emplace(*options.deadline, id);
      if (earliest) deadline_cv_.notify_one();
    }
    // Not expected after the capacity check: the request is resolved with the error.
    if (!failed.ok()) ResolveLocked(id, failed, completions);
    PublishLocked();
  }
  Fire(completions);
  if (wake) WakeWorker();
  return id;
}

template <typename In, typename Out>
bool Batcher<In, Out>::Cancel(RequestId id) {
  std::vector<Completion> completions;
  bool live = false;
  {
    MutexLock lock(&mu_);
    SettleLocked(completions);  // a request still in the intake is now in the Scheduler
    {
      MutexLock intake(&intake_mu_);  // Find reads a slot a submit may be stamping
      const Record* r = slab_.Find(id);
      live = r != nullptr && r->parent == 0 && r->stage != Stage::kAbandoned;
    }
    if (live) {
      ResolveLocked(id, CancelledError(absl::StrCat("request ", id, " cancelled by the caller")), completions);
      PublishLocked();
    }
  }
  Fire(completions);
  // The anchor may have changed, so the pending wake-up time may be too late.
  if (live) WakeWorker();
  return live;
}

template <typename In, typename Out>
void Batcher<In, Out>::Shutdown(ShutdownMode mode) {
  std::vector<Completion> completions;
  {
    MutexLock lock(&mu_);
    {
      MutexLock intake(&intake_mu_);
      accepting_ = false;
    }
    SettleLocked(completions);
    if (mode == ShutdownMode::kCancelQueued) {
      // No submit can stamp a slot any more, so the slab can be walked.
      std::vector<RequestId> queued;
      {
        MutexLock intake(&intake_mu_);
        slab_.ForEachLive([&](const Record& r) {
          if (r.stage == Stage::kQueued) queued.push_back(r.parent != 0 ? r.parent : r.id);
        });
      }
      for (RequestId request : queued) {
        if (slab_.Get(request).id != request) continue;  // resolved with another window
        ResolveLocked(request, ShuttingDownError("batcher shut down before dispatch"), completions);
      }
      PublishLocked();
    } else {
      draining_ = true;
    }
    stopping_ = true;
  }
  {
    MutexLock intake(&intake_mu_);
    wake_signalled_ = true;
  }
  wake_cv_.notify_all();
  Fire(completions);
  std::call_once(join_once_, [this] {
    // joinable(): Create may have failed to start some of them.
    for (std::thread& t : workers_) {
      if (t.joinable()) t.join();
    }
    {
      MutexLock lock(&mu_);
      workers_joined_ = true;  // every request is resolved: the deadline thread may stop
      deadline_cv_.notify_all();
    }
    if (deadline_thread_.joinable()) deadline_thread_.join();
  });
}

template <typename In, typename Out>
std::int64_t Batcher<In, Out>::effective_budget() const {
  MutexLock lock(&mu_);
  return aimd_.current();
}

template <typename In, typename Out>
MetricsSnapshot Batcher<In, Out>::metrics() const {
  MutexLock lock(&mu_);
  MutexLock intake(&intake_mu_);
  MetricsSnapshot s =
      recorder_.Snapshot(scheduler_->queued_requests() + intake_.size(), scheduler_->queued_tokens() + intake_tokens_,
                         aimd_.max_budget(), aimd_.current());
  s.requests_submitted = submitted_;
  return s;
}

}  // namespace tokenbatch
