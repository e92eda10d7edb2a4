// Batcher's member definitions, worker side: the intake hand-over, the worker and
// deadline loops, dispatch, completion and resolution (a template, so they live in
// a header). Include tokenbatch/runtime/batcher.h, not this file.
#pragma once

#include <chrono>

#include "absl/strings/str_cat.h"

namespace tokenbatch {

template <typename In, typename Out>
void Batcher<In, Out>::PublishCountsLocked(std::size_t settling_requests, std::int64_t settling_tokens) {
  scheduled_requests_ = scheduler_->queued_requests() + settling_requests;
  scheduled_tokens_ = scheduler_->queued_tokens() + settling_tokens;
  for (RequestId id : to_release_) slab_.Release(id);
  to_release_.clear();
}

template <typename In, typename Out>
void Batcher<In, Out>::PublishLocked() {
  bool wake = false;
  {
    MutexLock intake(&intake_mu_);
    PublishCountsLocked(0, 0);
    if (sleeping_workers_ > 0 && !wake_signalled_) {
      // The queue changed under the sleepers (a dispatch, cancel or expiry), so
      // their snapshot is stale: e.g. a worker asleep on an empty queue would
      // otherwise judge the next arrival against requests that are gone. Take a
      // new one and replay what is already in the intake against it.
      wake_rule_ = scheduler_->WakeRuleForArrivals();
      for (RequestId id : intake_) {
        const Record& r = slab_.Get(id);
        wake = wake_rule_.OnArrival(r.tokens, r.priority, r.arrival) || wake;
        if (wake) break;
      }
      wake_signalled_ = wake;
    }
  }
  if (wake) wake_cv_.notify_one();
}

template <typename In, typename Out>
void Batcher<In, Out>::SettleLocked(std::vector<Completion>& out) {
  {
    MutexLock intake(&intake_mu_);
    settling_.swap(intake_);
    // The settling requests count as queued until the Scheduler has them.
    PublishCountsLocked(settling_.size(), intake_tokens_);
    intake_tokens_ = 0;
  }
  for (RequestId id : settling_) {
    const Record& r = slab_.Get(id);
    // Admit, not Enqueue: this worker calls Next right after, so the wake
    // decision would be wasted.
    absl::Status queued = scheduler_->Admit({id, r.tokens, r.arrival, r.priority, std::nullopt});
    // Not expected: the submit checked the limits against the same counts.
    if (!queued.ok()) ResolveLocked(id, std::move(queued), out);
  }
  settling_.clear();
}

template <typename In, typename Out>
void Batcher<In, Out>::WakeWorker() {
  // Only a sleeping worker needs it: any other one calls Next before it sleeps,
  // and the caller has already changed what Next sees.
  bool sleeping = false;
  {
    MutexLock intake(&intake_mu_);
    sleeping = sleeping_workers_ > 0;
    if (sleeping) wake_signalled_ = true;
  }
  if (sleeping) wake_cv_.notify_one();
}

template <typename In, typename Out>
void Batcher<In, Out>::SleepLocked(std::optional<TimePoint> wake_at) {
  intake_mu_.Lock();
  if (!intake_.empty() || wake_signalled_) {
    wake_signalled_ = false;
    intake_mu_.Unlock();
    return;
  }
  // Arrivals from now on are judged against this snapshot (the core's own rule).
  wake_rule_ = scheduler_->WakeRuleForArrivals();
  ++sleeping_workers_;
  mu_.Unlock();
  if (wake_at) {
    intake_mu_.WaitUntil(wake_cv_, *wake_at);
  } else {
    intake_mu_.Wait(wake_cv_);
  }
  --sleeping_workers_;
  wake_signalled_ = false;
  intake_mu_.Unlock();
  mu_.Lock();
}

template <typename In, typename Out>
void Batcher<In, Out>::WorkerLoop() {
  std::vector<Completion> completions;
  mu_.Lock();
  while (true) {
    SettleLocked(completions);
    const TimePoint now = SteadyClock::now();
    const std::int64_t budget = aimd_.current();
    Decision d = scheduler_->Next(now, {budget, draining_});
    for (RequestId id : d.expired) {
      const Record& r = slab_.Get(id);
      if (r.id != id) continue;  // freed when another window of its request expired
      ResolveLocked(r.parent != 0 ? r.parent : id, DeadlineExceededError("deadline passed while queued"),
                    completions);
    }
    if (!d.batch.empty()) {
      recorder_.OnDispatch(d, budget);
      Batch batch = TakeBatchLocked(d, now);
      PublishLocked();
      mu_.Unlock();
      if (d.wake_at) WakeWorker();  // more may be ready for another worker
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
    if (!d.expired.empty()) PublishLocked();
    if (!completions.empty()) {
      mu_.Unlock();
      Fire(completions);
      mu_.Lock();
      continue;
    }
    if (stopping_ && scheduler_->queued_requests() == 0) break;  // the intake is closed and settled
    SleepLocked(d.wake_at);
  }
  mu_.Unlock();
}

template <typename In, typename Out>
typename Batcher<In, Out>::Batch Batcher<In, Out>::TakeBatchLocked(const Decision& d, TimePoint now) {
  Batch batch;
  batch.ids = d.batch;
  batch.inputs.reserve(d.batch.size());
  batch.tokens.reserve(d.batch.size());
  for (RequestId id : d.batch) {
    Record& r = slab_.Get(id);  // queued records are always live
    r.stage = Stage::kInFlight;
    batch.inputs.push_back(std::move(*r.input));
    r.input.reset();
    batch.tokens.push_back(r.tokens);
    recorder_.OnQueueWait(std::chrono::duration<double, std::micro>(now - r.arrival).count());
  }
  return batch;
}

template <typename In, typename Out>
std::vector<typename Batcher<In, Out>::Result> Batcher<In, Out>::Execute(const Batch& batch, double* exec_us,
                                                                        IsolationReport* report) {
  // RunIsolated writes every element; the default (Unknown, no message) costs no
  // allocation, unlike a typed error built once per batch.
  std::vector<Result> results(batch.inputs.size());
  // One decrease per dispatched batch, from the whole batch's cost (TCP cuts its
  // window once per round trip, not once per lost packet): the bisection's
  // further OOMs on halves, down to one request that fails alone, are the same
  // event and must not take the budget to the floor.
  bool shrunk = false;
  auto on_oom = [&](std::size_t offset, std::size_t count) {
    if (std::exchange(shrunk, true)) return;
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
    Record& r = slab_.Get(batch.ids[i]);  // in-flight records stay live until here
    if (r.stage == Stage::kAbandoned) {    // its request was resolved meanwhile: drop
      FreeLocked(r);
      continue;
    }
    r.stage = Stage::kDone;
    const RequestId request_id = r.parent != 0 ? r.parent : r.id;
    Record& request = r.parent != 0 ? slab_.Get(r.parent) : r;
    if (!results[i].ok()) {
      ResolveLocked(request_id, std::move(results[i]).status(), out);
      continue;
    }
    if (request.deadline && *request.deadline < now) {
      ResolveLocked(request_id, DeadlineExceededError("deadline passed while the batch ran; result dropped"), out);
      continue;
    }
    if (r.parent == 0) {
      ResolveLocked(request_id, std::move(*results[i]), out);
      continue;
    }
    SplitState& split = *request.split;
    split.parts[r.index] = std::move(*results[i]);
    split.children[r.index] = 0;
    FreeLocked(r);
    if (--split.remaining > 0) continue;
    Completion merged{{}, BackendError("not merged"), true, {}, split.windows};
    merged.parts.reserve(split.parts.size());
    for (auto& p : split.parts) merged.parts.push_back(std::move(*p));
    merged.done = TakeLocked(request_id);  // recorded in Fire, once merged
    out.push_back(std::move(merged));
  }
}

template <typename In, typename Out>
void Batcher<In, Out>::FreeLocked(Record& record) {
  to_release_.push_back(record.id);
  record = Record{};  // id 0: free
}

template <typename In, typename Out>
void Batcher<In, Out>::TakeScheduledLocked(Record& r) {
  if (r.stage == Stage::kInFlight) {
    r.stage = Stage::kAbandoned;
    return;
  }
  if (r.stage == Stage::kQueued) scheduler_->Remove(r.id);
  FreeLocked(r);
}

template <typename In, typename Out>
typename Batcher<In, Out>::Notifier Batcher<In, Out>::TakeLocked(RequestId request_id) {
  Record& request = slab_.Get(request_id);
  if (request.split) {
    for (RequestId child : request.split->children) {
      if (child != 0) TakeScheduledLocked(slab_.Get(child));
    }
  }
  if (request.deadline) deadlines_.erase({*request.deadline, request_id});
  Notifier done = std::move(request.done);
  if (request.split) {
    FreeLocked(request);
  } else {
    TakeScheduledLocked(request);
  }
  return done;
}

template <typename In, typename Out>
void Batcher<In, Out>::ResolveLocked(RequestId request_id, Result result, std::vector<Completion>& out) {
  recorder_.OnResolved(result.status());
  out.push_back({TakeLocked(request_id), std::move(result)});
}

template <typename In, typename Out>
void Batcher<In, Out>::Fire(std::vector<Completion>& completions) {
  // Last to first: a thread waiting on these futures in submission order then
  // wakes once per batch (when the first is set, the rest are ready), instead
  // of once per request with the worker preempted each time (docs/benchmarks.md).
  for (auto it = completions.rbegin(); it != completions.rend(); ++it) {
    Completion& c = *it;
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
      PublishLocked();
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
