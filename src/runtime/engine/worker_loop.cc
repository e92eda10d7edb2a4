// The batch engine's workers: each settles the intake, asks the policy core for
// the next batch, runs it through its EngineContext with the lock released, and
// completes its records; when the core says "not yet", it sleeps until the core's
// wake_at or until a submit may have made a batch ready (the intake's wake rule).
// It never polls.
#include <algorithm>
#include <chrono>
#include <utility>

#include "runtime/engine/batch_engine_impl.h"
#include "tokenbatch/runtime/shared_device_memory.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch {
namespace {

thread_local bool next_batch_waits = false;

// Fires `context` with CallbackDelaysNextBatch() true.
void FireBeforeBatch(EngineContext& context) {
  struct Flag {
    Flag() { next_batch_waits = true; }
    ~Flag() { next_batch_waits = false; }
  } flag;
  context.Fire();
}

}  // namespace

bool CallbackDelaysNextBatch() { return next_batch_waits; }

namespace engine {

void BatchEngineImpl::SettleLocked(EngineContext& context) {
  intake_.TakeAllLocked(mu_, *scheduler_, records_.released(), settling_);
  for (RequestId id : settling_) {
    const EngineRecord& r = intake_.Get(id);
    // Admit, not Enqueue: the worker decides right after, so the wake decision
    // would be wasted.
    absl::Status queued = scheduler_->Admit({id, r.tokens, r.arrival, r.priority, std::nullopt});
    // Not expected: the submit checked the limits against the same counts.
    if (!queued.ok()) records_.Resolve(id, std::move(queued), context);
  }
  settling_.clear();
}

void BatchEngineImpl::PublishLocked() {
  if (intake_.PublishLocked(mu_, *scheduler_, records_.released())) intake_.NotifyOne();
}

void BatchEngineImpl::FireUnlocked(EngineContext& context) {
  mu_.Unlock();
  context.Fire();
  mu_.Lock();
}

std::size_t BatchEngineImpl::FitLocked(TimePoint now, std::size_t worker) const {
  if (!intra_op_) return worker;
  return worker == 0 && intra_op_->Predict(now) > 1 ? 1 : 0;
}

// Only worker 0 runs wide forwards. libgomp (libtorch's OpenMP) keeps a team of
// helper threads for each thread that has run a parallel region, for as long as
// that thread lives, and once the process holds more of them than there are
// cores it cuts every helper's spin between parallel regions to a few
// iterations, so each region of a forward wakes its helpers from a futex. One
// worker with cores - 1 helpers stays within the cores; the others' one-thread
// forwards start no team.
// Another worker that finds a wide forward due leaves it to worker 0 when worker 0
// will decide promptly: it is asleep (woken with WakeFirst) or on its way to the
// next decision. Worker 0 may be running callbacks instead (user code, of any
// length), or have stopped: the other worker then runs the batch on one thread.
// Never while stopping: worker 0 may drain the queue and leave with the other
// worker asleep, and nothing would wake it again.
bool BatchEngineImpl::LeavesWideForwardLocked(TimePoint now, std::size_t worker) const {
  return intra_op_ && worker != 0 && !stopping_ && first_worker_available_ && scheduler_->queued_requests() > 0 &&
         intra_op_->Predict(now) > 1;
}

bool BatchEngineImpl::MustWaitForCoreLocked(TimePoint now) {
  if (!intra_op_ || intra_op_->CanStart() || scheduler_->queued_requests() == 0) return false;
  intra_op_->OnWaitingForCore(now);
  return true;
}

Decision BatchEngineImpl::DecideLocked(EngineContext& context, TimePoint now, std::size_t fit_index) {
  const OnlineLatencyFit& fit = latency_fits_[fit_index];
  const BatchLatencyModel model = fit.model();
  Decision d = NextLocked(now, {aimd_.current(), draining_, fit.ready() ? &model : nullptr});
  for (RequestId id : d.expired) {
    const EngineRecord& r = intake_.Get(id);
    if (r.id != id) continue;  // freed when another window of its request expired
    records_.Resolve(r.request_id(), DeadlineExceededError("deadline passed while queued"), context);
  }
  return d;
}

Decision BatchEngineImpl::NextLocked(TimePoint now, DecisionContext context) {
  if (!options_.device_memory) return scheduler_->Next(now, context);
  const DeviceMemoryShare& share = *options_.device_memory;
  // The engine lock stays held through Decide (lock order: engine, then the
  // device's), which the analysis cannot see inside the callback.
  Scheduler& scheduler = *scheduler_;
  Decision d;
  share.device->Decide(share.model, [&](std::int64_t allowance) {
    context.memory_model = &share.memory_model;
    context.memory_allowance = allowance;
    d = scheduler.Next(now, context);
    return SharedDeviceMemory::Take{.acquire = d.batch.empty() ? 0 : d.memory_bytes, .need = d.memory_needed};
  });
  return d;
}

void BatchEngineImpl::ReleaseMemory(RunningBatch& batch) {
  if (!options_.device_memory || batch.memory_bytes == 0) return;
  options_.device_memory->device->Release(options_.device_memory->model, std::exchange(batch.memory_bytes, 0));
}

void BatchEngineImpl::DispatchLocked(const Decision& d, TimePoint now, EngineContext& context, RunningBatch& batch,
                                     std::size_t fit, std::size_t worker) {
  recorder_.OnDispatch(d, aimd_.current());
  batch.ids = d.batch;
  batch.cost = d.cost;
  batch.memory_bytes = d.memory_bytes;
  batch.threads = 0;
  batch.fit = fit;
  if (intra_op_) {
    // The core has taken the batch out of the queue: what is left waits behind it.
    batch.threads = intra_op_->Start(now, scheduler_->queued_requests() > 0, /*may_run_wide=*/worker == 0);
    batch.fit = batch.threads > 1 ? 1 : 0;
  }
  batch.tokens.clear();
  for (RequestId id : d.batch) {
    EngineRecord& r = intake_.Get(id);  // queued records are always live
    r.stage = Stage::kInFlight;
    batch.tokens.push_back(r.tokens);
    recorder_.OnQueueWait(std::chrono::duration<double, std::micro>(now - r.arrival).count());
  }
  context.LoadBatch(batch.ids);
}

void BatchEngineImpl::Execute(EngineContext& context, RunningBatch& batch, double* exec_us, IsolationReport* report) {
  batch.statuses.assign(batch.ids.size(), absl::OkStatus());
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
  if (batch.threads > 0) options_.set_forward_threads(batch.threads);
  const TimePoint start = SteadyClock::now();
  context.RunBatch(batch.statuses, on_oom, *report);
  *exec_us = std::chrono::duration<double, std::micro>(SteadyClock::now() - start).count();
}

void BatchEngineImpl::FinishLocked(EngineContext& context, RunningBatch& batch, TimePoint now, double exec_us,
                                   const IsolationReport& report, bool learn) {
  if (batch.threads > 0) {
    intra_op_->Finish(std::exchange(batch.threads, 0));
    // A worker may be waiting for the cores just freed.
    if (scheduler_->queued_requests() > 0) intake_.WakeOne();
  }
  recorder_.OnBatchDone(exec_us, report.retries, report.oom_events);
  // A batch that was bisected ran more than once, and one that failed may have
  // stopped early: either way its time is not its shape's.
  const bool all_ok =
      std::all_of(batch.statuses.begin(), batch.statuses.end(), [](const absl::Status& st) { return st.ok(); });
  if (learn && report.retries == 0 && report.oom_events == 0 && all_ok) {
    latency_fits_[batch.fit].Add(batch.cost, exec_us);
  }
  if (report.oom_events == 0) aimd_.OnSuccess();
  // Before the clients see their answers: the adaptive window learns when
  // closed-loop clients return from this time.
  scheduler_->OnAnswered(now, static_cast<std::int64_t>(batch.ids.size()));
  records_.CompleteBatch(batch.ids, batch.statuses, now, context);
}

void BatchEngineImpl::SleepLocked(std::size_t worker, std::optional<TimePoint> wake_at) {
  intake_.SleepLocked(mu_, *scheduler_, wake_at, /*first_worker=*/worker == 0);
}

void BatchEngineImpl::FireUnlocked(EngineContext& context, std::size_t worker) {
  if (worker == 0) first_worker_available_ = false;
  FireUnlocked(context);
  if (worker == 0) first_worker_available_ = true;
}

void BatchEngineImpl::WorkerLoop(EngineContext& context, std::size_t worker) {
  RunningBatch batch;
  mu_.Lock();
  while (true) {
    SettleLocked(context);
    // Read after the intake is in: no request the core sees arrived after `now`.
    const TimePoint now = SteadyClock::now();
    const bool wait_for_core = MustWaitForCoreLocked(now);
    if (wait_for_core || LeavesWideForwardLocked(now, worker)) {
      if (context.HasCompletions()) {
        FireUnlocked(context, worker);
        continue;
      }
      // Else worker 0 takes the queued work when it wakes.
      if (!wait_for_core) intake_.WakeFirst();
      SleepLocked(worker, std::nullopt);  // until a forward ends (FinishLocked) or a submit
      continue;
    }
    const std::size_t fit = FitLocked(now, worker);
    Decision d = DecideLocked(context, now, fit);
    if (!d.batch.empty()) {
      DispatchLocked(d, now, context, batch, fit, worker);
      // More may be ready for another worker, which has a core to run it on.
      const bool wake_other = d.wake_at || (intra_op_ && intra_op_->CanStart() && scheduler_->queued_requests() > 0);
      PublishLocked();
      mu_.Unlock();
      if (wake_other) intake_.WakeOne();
      FireBeforeBatch(context);
      double exec_us = 0;
      IsolationReport report;
      Execute(context, batch, &exec_us, &report);
      ReleaseMemory(batch);
      mu_.Lock();
      FinishLocked(context, batch, SteadyClock::now(), exec_us, report, /*learn=*/true);
      continue;
    }
    if (!d.expired.empty()) PublishLocked();
    if (context.HasCompletions()) {
      FireUnlocked(context, worker);
      continue;
    }
    if (stopping_ && scheduler_->queued_requests() == 0) break;  // the intake is closed and settled
    SleepLocked(worker, d.wake_at);
  }
  if (worker == 0) first_worker_available_ = false;
  mu_.Unlock();
  // A worker asleep now may be waiting for work this one would have taken.
  intake_.WakeAll();
}

WorkerStep BatchEngineImpl::StepWorker(EngineContext& context, TimePoint now, std::optional<TimePoint> done_at) {
  WorkerStep step;
  RunningBatch batch;
  mu_.Lock();
  SettleLocked(context);
  const std::size_t fit = FitLocked(now, 0);
  Decision d = DecideLocked(context, now, fit);
  step.expired = d.expired.size();
  if (d.batch.empty()) {
    step.wake_at = d.wake_at;
    step.stop = stopping_ && scheduler_->queued_requests() == 0;
  } else {
    DispatchLocked(d, now, context, batch, fit, 0);
    step.threads = batch.threads;
    PublishLocked();
    mu_.Unlock();
    FireBeforeBatch(context);
    double exec_us = 0;
    IsolationReport report;
    Execute(context, batch, &exec_us, &report);
    ReleaseMemory(batch);
    // On the manual clock the batch runs from `now` to `done_at`: that, not the
    // wall time of the fake run, is what the latency fit learns, so a step test
    // decides the same way on any machine.
    exec_us = std::chrono::duration<double, std::micro>(done_at.value_or(now) - now).count();
    mu_.Lock();
    FinishLocked(context, batch, done_at.value_or(now), exec_us, report, /*learn=*/done_at.has_value());
    step.batch = std::move(batch.ids);
  }
  PublishLocked();
  mu_.Unlock();
  context.Fire();
  return step;
}

}  // namespace engine
}  // namespace tokenbatch
