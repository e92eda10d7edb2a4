// Batcher's member definitions (a template, so they live in a header). Include
// tokenbatch/runtime/batcher.h, not this file.
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
absl::StatusOr<RequestId> Batcher<In, Out>::Submit(In&& input, std::int64_t tokens, const SubmitOptions& options,
                                                   Callback done) {
  if (!done) return InvalidArgumentError("Submit needs a callback");
  auto refuse = [this](absl::Status status) {
    MutexLock lock(&mu_);
    recorder_.OnRefused(GetErrorKind(status));
    return status;
  };
  // Common case first: a request that fits is queued whole, without a plan.
  AdmissionPlan plan;
  if (tokens < 1 || tokens > max_input_tokens_) {
    absl::StatusOr<AdmissionPlan> planned = PlanAdmission(tokens, options_.scheduler);
    if (!planned.ok()) return refuse(planned.status());
    plan = std::move(*planned);
  }
  const absl::InlinedVector<TokenWindow, 1> windows =
      plan.windows.empty() ? absl::InlinedVector<TokenWindow, 1>{{0, tokens}}
                           : absl::InlinedVector<TokenWindow, 1>(plan.windows.begin(), plan.windows.end());
  // Slice outside the lock: truncation and splitting copy tokens.
  std::vector<In> pieces;
  std::int64_t total_tokens = 0;
  for (const TokenWindow& w : windows) {
    total_tokens += w.size();
    if (plan.action == AdmissionPlan::Action::kAdmit) break;
    absl::StatusOr<In> piece = InvalidArgumentError("slicer threw");
    try {
      piece = hooks_.slice(input, w);
    } catch (const std::exception& e) {
      piece = InvalidArgumentError(absl::StrCat("slicer threw: ", e.what()));
    } catch (...) {
    }
    if (!piece.ok()) return refuse(piece.status());
    pieces.push_back(std::move(*piece));
  }

  const TimePoint now = SteadyClock::now();
  MutexLock lock(&mu_);
  if (!accepting_) {
    recorder_.OnRefused(ErrorKind::kShuttingDown);
    return ShuttingDownError("batcher is shutting down; request not accepted");
  }
  if (absl::Status cap = scheduler_->CheckCapacity(windows.size(), total_tokens); !cap.ok()) {
    recorder_.OnRefused(GetErrorKind(cap));
    return cap;
  }
  const RequestId id = next_id_++;
  Parent parent{std::move(done), windows, {}, {}, windows.size(),
                options.deadline};
  parent.parts.resize(windows.size());
  bool wake = false;
  for (std::size_t i = 0; i < windows.size(); ++i) {
    const RequestId child_id = next_id_++;
    const std::int64_t child_tokens = windows[i].size();
    auto queued = scheduler_->Enqueue({child_id, child_tokens, now, options.priority, options.deadline});
    if (!queued.ok()) {  // not expected after CheckCapacity; roll back the windows queued so far
      for (RequestId c : parent.children) scheduler_->Remove(c), children_.erase(c);
      recorder_.OnRefused(GetErrorKind(queued.status()));
      return queued.status();
    }
    wake = wake || queued->wake_worker;
    parent.children.push_back(child_id);
    Child& child = children_[child_id];
    child = Child{id, i, std::nullopt, child_tokens, now, false};
    if (pieces.empty()) {
      child.input.emplace(std::move(input));
    } else {
      child.input.emplace(std::move(pieces[i]));
    }
  }
  if (options.deadline) {
    const bool earliest = deadlines_.empty() || *options.deadline < deadlines_.begin()->first;
    deadlines_.emplace(*options.deadline, id);
    if (earliest) deadline_cv_.notify_one();
  }
  parents_.emplace(id, std::move(parent));
  recorder_.OnSubmitted();
  if (wake && idle_workers_ > 0) cv_.notify_one();
  return id;
}

template <typename In, typename Out>
absl::StatusOr<typename Batcher<In, Out>::Ticket> Batcher<In, Out>::Submit(In&& input, std::int64_t tokens,
                                                                            const SubmitOptions& options) {
  auto promise = std::make_shared<std::promise<Result>>();
  std::future<Result> future = promise->get_future();
  absl::StatusOr<RequestId> id =
      Submit(std::move(input), tokens, options, [promise](Result r) { promise->set_value(std::move(r)); });
  if (!id.ok()) return id.status();
  return Ticket{*id, std::move(future)};
}

template <typename In, typename Out>
bool Batcher<In, Out>::Cancel(RequestId id) {
  std::vector<Completion> completions;
  {
    MutexLock lock(&mu_);
    if (!parents_.contains(id)) return false;
    ResolveLocked(id, CancelledError(absl::StrCat("request ", id, " cancelled by the caller")), completions);
    // The anchor may have changed, so the pending wake-up time may be too late.
    if (idle_workers_ > 0) cv_.notify_one();
  }
  Fire(completions);
  return true;
}

template <typename In, typename Out>
void Batcher<In, Out>::Shutdown(ShutdownMode mode) {
  std::vector<Completion> completions;
  {
    MutexLock lock(&mu_);
    accepting_ = false;
    if (mode == ShutdownMode::kCancelQueued) {
      std::vector<RequestId> queued_parents;
      for (const auto& [child_id, child] : children_) {
        if (!child.in_flight) queued_parents.push_back(child.parent);
      }
      for (RequestId p : queued_parents) {
        if (parents_.contains(p)) ResolveLocked(p, ShuttingDownError("batcher shut down before dispatch"), completions);
      }
    } else {
      draining_ = true;
    }
    stopping_ = true;
    cv_.notify_all();
  }
  Fire(completions);
  std::call_once(join_once_, [this] {
    for (std::thread& t : workers_) t.join();
    {
      MutexLock lock(&mu_);
      workers_joined_ = true;  // every request is resolved: the deadline thread may stop
      deadline_cv_.notify_all();
    }
    deadline_thread_.join();
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
  return recorder_.Snapshot(scheduler_->queued_requests(), scheduler_->queued_tokens(), aimd_.max_budget(),
                            aimd_.current());
}

template <typename In, typename Out>
void Batcher<In, Out>::WorkerLoop() {
  std::vector<Completion> completions;
  mu_.Lock();
  while (true) {
    const TimePoint now = SteadyClock::now();
    const std::int64_t budget = aimd_.current();
    Decision d = scheduler_->Next(now, {budget, draining_});
    for (RequestId child_id : d.expired) {
      auto it = children_.find(child_id);
      if (it == children_.end()) continue;
      ResolveLocked(it->second.parent, DeadlineExceededError("deadline passed while queued"), completions);
    }
    if (!d.batch.empty()) {
      if (d.wake_at && idle_workers_ > 0) cv_.notify_one();  // more may be ready for another worker
      recorder_.OnDispatch(d, budget);
      Batch batch = TakeBatchLocked(d, now);
      mu_.Unlock();
      Fire(completions);
      double exec_us = 0;
      IsolationReport report;
      std::vector<Result> results = Execute(batch, &exec_us, &report);
      mu_.Lock();
      recorder_.OnBatchDone(exec_us, report.retries, report.oom_events);
      if (report.oom_events == 0) aimd_.OnSuccess();
      CompleteLocked(batch, results, completions);
      continue;
    }
    if (!completions.empty()) {
      mu_.Unlock();
      Fire(completions);
      mu_.Lock();
      continue;
    }
    if (stopping_ && scheduler_->queued_requests() == 0) break;
    ++idle_workers_;
    if (d.wake_at) {
      mu_.WaitUntil(cv_, *d.wake_at);
    } else {
      mu_.Wait(cv_);
    }
    --idle_workers_;
  }
  mu_.Unlock();
}

template <typename In, typename Out>
typename Batcher<In, Out>::Batch Batcher<In, Out>::TakeBatchLocked(const Decision& d, TimePoint now) {
  Batch batch;
  batch.ids = d.batch;
  batch.inputs.reserve(d.batch.size());
  batch.tokens.reserve(d.batch.size());
  for (RequestId child_id : d.batch) {
    Child& child = children_.at(child_id);  // queued children are always present
    child.in_flight = true;
    batch.inputs.push_back(std::move(*child.input));
    child.input.reset();
    batch.tokens.push_back(child.tokens);
    recorder_.OnQueueWait(std::chrono::duration<double, std::micro>(now - child.arrival).count());
  }
  return batch;
}

template <typename In, typename Out>
std::vector<typename Batcher<In, Out>::Result> Batcher<In, Out>::Execute(const Batch& batch, double* exec_us,
                                                                        IsolationReport* report) {
  std::vector<Result> results(batch.inputs.size(), BackendError("no result"));
  auto on_oom = [&](std::size_t offset, std::size_t count) {
    BatchShape shape;
    for (std::size_t i = offset; i < offset + count; ++i) shape = shape.With(batch.tokens[i]);
    MutexLock lock(&mu_);
    aimd_.OnOutOfMemory(options_.scheduler.cost_model.Cost(shape));
  };
  const TimePoint start = SteadyClock::now();
  RunIsolated<Out>(backend_, std::span<const In>(batch.inputs), std::span<Result>(results), on_oom, *report);
  *exec_us = std::chrono::duration<double, std::micro>(SteadyClock::now() - start).count();
  return results;
}

template <typename In, typename Out>
void Batcher<In, Out>::CompleteLocked(Batch& batch, std::vector<Result>& results, std::vector<Completion>& out) {
  const TimePoint now = SteadyClock::now();
  for (std::size_t i = 0; i < batch.ids.size(); ++i) {
    auto child_it = children_.find(batch.ids[i]);
    if (child_it == children_.end()) continue;  // its request was resolved meanwhile: drop
    const RequestId parent_id = child_it->second.parent;
    const std::size_t index = child_it->second.index;
    children_.erase(child_it);
    auto parent_it = parents_.find(parent_id);
    if (parent_it == parents_.end()) continue;
    Parent& parent = parent_it->second;
    if (!results[i].ok()) {
      ResolveLocked(parent_id, std::move(results[i]).status(), out);
      continue;
    }
    parent.parts[index] = std::move(*results[i]);
    if (--parent.remaining > 0) continue;
    if (parent.deadline && *parent.deadline < now) {
      ResolveLocked(parent_id, DeadlineExceededError("deadline passed while the batch ran; result dropped"), out);
      continue;
    }
    if (parent.parts.size() == 1) {
      ResolveLocked(parent_id, std::move(*parent.parts[0]), out);
      continue;
    }
    Completion merged{nullptr, BackendError("not merged"), true, {}, {parent.windows.begin(), parent.windows.end()}};
    merged.parts.reserve(parent.parts.size());
    for (auto& p : parent.parts) merged.parts.push_back(std::move(*p));
    merged.done = TakeLocked(parent_id);  // recorded in Fire, once merged
    out.push_back(std::move(merged));
  }
}

template <typename In, typename Out>
typename Batcher<In, Out>::Callback Batcher<In, Out>::TakeLocked(RequestId parent_id) {
  auto it = parents_.find(parent_id);
  Parent& parent = it->second;
  for (RequestId child_id : parent.children) {
    auto child_it = children_.find(child_id);
    if (child_it == children_.end()) continue;
    if (!child_it->second.in_flight) scheduler_->Remove(child_id);
    children_.erase(child_it);  // an in-flight child's result will be dropped
  }
  if (parent.deadline) deadlines_.erase({*parent.deadline, parent_id});
  Callback done = std::move(parent.done);
  parents_.erase(it);
  return done;
}

template <typename In, typename Out>
void Batcher<In, Out>::ResolveLocked(RequestId parent_id, Result result, std::vector<Completion>& out) {
  recorder_.OnResolved(result.status());
  out.push_back({TakeLocked(parent_id), std::move(result)});
}

template <typename In, typename Out>
void Batcher<In, Out>::Fire(std::vector<Completion>& completions) {
  for (Completion& c : completions) {
    if (c.merge) {
      try {
        c.result = hooks_.merge(std::span<const Out>(c.parts), std::span<const TokenWindow>(c.windows));
      } catch (const std::exception& e) {
        c.result = BackendError(absl::StrCat("merge threw: ", e.what()));
      } catch (...) {
        c.result = BackendError("merge threw a non-standard exception");
      }
      MutexLock lock(&mu_);
      recorder_.OnResolved(c.result.status());
    }
    try {
      c.done(std::move(c.result));
    } catch (...) {
      // The caller's callback failed; the request is resolved all the same.
    }
  }
  completions.clear();
}

template <typename In, typename Out>
void Batcher<In, Out>::DeadlineLoop() {
  std::vector<Completion> completions;
  mu_.Lock();
  while (true) {
    if (!completions.empty()) {
      mu_.Unlock();
      Fire(completions);
      mu_.Lock();
      continue;
    }
    if (workers_joined_) break;  // every request is resolved by then
    const TimePoint now = SteadyClock::now();
    while (!deadlines_.empty() && deadlines_.begin()->first < now) {
      ResolveLocked(deadlines_.begin()->second,
                    DeadlineExceededError("deadline passed before the result (queued or running)"), completions);
    }
    if (!completions.empty()) continue;
    if (deadlines_.empty()) {
      mu_.Wait(deadline_cv_);
    } else {
      // Deadlines expire strictly after they pass, as in the policy core.
      const TimePoint first = deadlines_.begin()->first;
      mu_.WaitUntil(deadline_cv_, first == TimePoint::max() ? first : first + Duration(1));
    }
  }
  mu_.Unlock();
}

}  // namespace tokenbatch
