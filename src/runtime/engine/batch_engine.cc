// The batch engine's submit side and lifecycle: Create, Submit, Cancel, Shutdown
// and the observers. The worker and deadline loops are in their own files.
#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/engine/batch_engine_impl.h"
#include "tokenbatch/core/admission.h"
#include "tokenbatch/core/errors.h"
#include "tokenbatch/runtime/shared_device_memory.h"

namespace tokenbatch {

absl::StatusOr<std::unique_ptr<BatchEngine>> BatchEngine::Create(const BatcherOptions& options, EngineClient& client) {
  absl::StatusOr<std::unique_ptr<engine::BatchEngineImpl>> engine = engine::BatchEngineImpl::Make(options, client);
  if (!engine.ok()) return engine.status();
  return std::unique_ptr<BatchEngine>(std::move(*engine));
}

namespace engine {

absl::StatusOr<std::unique_ptr<BatchEngineImpl>> BatchEngineImpl::Make(const BatcherOptions& options,
                                                                       EngineClient& client) {
  if (options.num_workers < 1) {
    return InvalidArgumentError(absl::StrCat("num_workers must be >= 1, got ", options.num_workers));
  }
  if (options.intra_op) {
    absl::StatusOr<IntraOpWidth> widths = IntraOpWidth::Create(*options.intra_op);
    if (!widths.ok()) return widths.status();
    if (options.num_workers != options.intra_op->cores) {
      return InvalidArgumentError(absl::StrCat("intra_op shares ", options.intra_op->cores,
                                               " cores, one worker each: num_workers must be ", options.intra_op->cores,
                                               ", got ", options.num_workers));
    }
    if (!options.set_forward_threads) return InvalidArgumentError("intra_op needs set_forward_threads");
  }
  if (absl::Status s = AimdBudget::Validate(options.scheduler.max_batch_tokens, options.aimd); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<Scheduler>> scheduler = Scheduler::Create(options.scheduler);
  if (!scheduler.ok()) return scheduler.status();
  if (options.device_memory) {
    const DeviceMemoryShare& share = *options.device_memory;
    if (share.device == nullptr) return InvalidArgumentError("device_memory needs a SharedDeviceMemory");
    if (share.model >= share.device->models()) {
      return InvalidArgumentError(absl::StrCat("device_memory.model ", share.model, " is not one of the device's ",
                                               share.device->models(), " models"));
    }
    if (share.memory_model.kind() != CostModelKind::kMemory) {
      return InvalidArgumentError("device_memory.memory_model must be a memory cost model (bytes)");
    }
    // An anchor that could never fit would wait for ever.
    const std::int64_t longest = EffectiveMaxInputTokens(options.scheduler);
    const std::int64_t bytes = share.memory_model.SingleCost(longest);
    const std::int64_t most = share.device->MostBytesFor(share.model);
    if (bytes > most) {
      return InvalidArgumentError(absl::StrCat("an input of ", longest, " tokens (max_input_tokens) needs ", bytes,
                                               " bytes, more than the shared device memory can ever give this model (",
                                               most, " bytes): lower max_input_tokens or raise the limit"));
    }
  }
  auto engine = std::unique_ptr<BatchEngineImpl>(new BatchEngineImpl(options, std::move(*scheduler), client));
  if (options.device_memory) {
    BatchEngineImpl* e = engine.get();
    if (absl::Status s = options.device_memory->device->Attach(options.device_memory->model,
                                                               [e] { e->intake_.Signal(); });
        !s.ok()) {
      return s;
    }
    engine->attached_ = true;
  }
  return engine;
}

BatchEngineImpl::BatchEngineImpl(const BatcherOptions& options, std::unique_ptr<Scheduler> scheduler,
                                 EngineClient& client)
    : options_(options),
      max_input_tokens_(EffectiveMaxInputTokens(options.scheduler)),
      client_(client),
      scheduler_(std::move(scheduler)),
      aimd_(options.scheduler.max_batch_tokens, options.aimd),
      // Per worker, or with intra_op per width (narrow, wide): a batch's time
      // follows the threads it ran on, not the worker.
      latency_fits_(options.intra_op ? 2 : static_cast<std::size_t>(std::max(1, options.num_workers))),
      intake_(options_.scheduler, client),
      records_(intake_, *scheduler_, recorder_, client) {
  if (options.intra_op) intra_op_ = *IntraOpWidth::Create(*options.intra_op);  // validated by Make
}

BatchEngineImpl::~BatchEngineImpl() {
  // The facade shuts down first; this only stops the threads of an engine that
  // was started and never shut down.
  bool stopped = false;
  {
    MutexLock lock(&mu_);
    stopped = stopping_;
  }
  if (!stopped && !contexts_.empty()) {
    // A context of its own: the threads' contexts are in use until they are joined.
    const std::unique_ptr<EngineContext> context = client_.NewContext();
    Shutdown(ShutdownMode::kCancelQueued, *context);
  }
  // Its waker points here: no other model may call it any more.
  if (attached_) options_.device_memory->device->Detach(options_.device_memory->model);
}

void BatchEngineImpl::Start() {
  for (int i = 0; i <= options_.num_workers; ++i) contexts_.push_back(client_.NewContext());
  for (int i = 0; i < options_.num_workers; ++i) {
    workers_.emplace_back(
        [this, context = contexts_[i].get(), i] { WorkerLoop(*context, static_cast<std::size_t>(i)); });
  }
  deadline_thread_ = std::thread([this, context = contexts_.back().get()] { DeadlineLoop(*context); });
}

absl::Status BatchEngineImpl::Refuse(absl::Status status) {
  MutexLock lock(&mu_);
  recorder_.OnRefused(GetErrorKind(status));
  return status;
}

inline absl::StatusOr<RequestId> BatchEngineImpl::SubmitThroughIntake(TimePoint now, std::int64_t tokens,
                                                                      const SubmitOptions& options,
                                                                      absl::FunctionRef<void(RequestId)> fill) {
  bool wake = false;
  absl::StatusOr<RequestId> id = intake_.Submit(tokens, options.priority, now, fill, &wake);
  if (!id.ok()) return Refuse(id.status());
  if (wake) intake_.NotifyOne();
  return id;
}

absl::StatusOr<RequestId> BatchEngineImpl::Submit(std::int64_t tokens, const SubmitOptions& options,
                                                  absl::FunctionRef<void(RequestId)> fill) {
  return SubmitThroughIntake(SteadyClock::now(), tokens, options, fill);
}

absl::StatusOr<RequestId> BatchEngineImpl::SubmitAt(TimePoint now, std::int64_t tokens, const SubmitOptions& options,
                                                    absl::FunctionRef<void(RequestId)> fill) {
  return SubmitThroughIntake(now, tokens, options, fill);
}

absl::StatusOr<std::vector<TokenWindow>> BatchEngineImpl::PlanWindows(std::int64_t tokens) {
  if (tokens >= 1 && tokens <= max_input_tokens_) return std::vector<TokenWindow>{{0, tokens}};
  absl::StatusOr<AdmissionPlan> plan = PlanAdmission(tokens, options_.scheduler);
  if (!plan.ok()) return Refuse(plan.status());
  if (plan->action == AdmissionPlan::Action::kAdmit) return std::vector<TokenWindow>{{0, tokens}};
  return std::move(plan->windows);
}

absl::StatusOr<RequestId> BatchEngineImpl::SubmitPlanned(
    std::span<const TokenWindow> windows, const SubmitOptions& options, EngineContext& context,
    absl::FunctionRef<void(RequestId, std::span<const RequestId>)> fill) {
  return SubmitPlannedAt(SteadyClock::now(), windows, options, context, fill);
}

absl::StatusOr<RequestId> BatchEngineImpl::SubmitPlannedAt(
    TimePoint now, std::span<const TokenWindow> windows, const SubmitOptions& options, EngineContext& context,
    absl::FunctionRef<void(RequestId, std::span<const RequestId>)> fill) {
  const bool split = windows.size() > 1;
  std::vector<RequestId> scheduled;
  bool wake = false;
  RequestId id = 0;
  {
    MutexLock lock(&mu_);
    absl::StatusOr<RequestId> allocated =
        intake_.AllocatePlannedLocked(mu_, windows, options.priority, now, scheduled, &wake);
    if (!allocated.ok()) {
      recorder_.OnRefused(GetErrorKind(allocated.status()));
      return allocated.status();
    }
    id = *allocated;
    fill(id, scheduled);
    EngineRecord& request = intake_.Get(id);
    request.stage = split ? Stage::kSplitParent : Stage::kQueued;
    request.deadline = options.deadline;
    if (split) {
      request.split = std::make_unique<SplitWindows>();
      request.split->windows.assign(windows.begin(), windows.end());
      request.split->children = scheduled;
      request.split->remaining = windows.size();
    }
    absl::Status failed;
    for (std::size_t i = 0; i < scheduled.size(); ++i) {
      EngineRecord& r = intake_.Get(scheduled[i]);
      r.parent = split ? id : 0;
      r.index = static_cast<std::uint32_t>(i);
      Stamp(r, options.priority, windows[i].size(), now);
      auto queued = scheduler_->Enqueue({scheduled[i], r.tokens, now, options.priority, options.deadline});
      if (!queued.ok()) failed = queued.status();
      wake = wake || (queued.ok() && queued->wake_worker);
    }
    if (options.deadline && records_.AddDeadline(*options.deadline, id)) deadline_cv_.notify_one();
    // Not expected after the capacity check: the request is resolved with the error.
    if (!failed.ok()) records_.Resolve(id, failed, context);
    PublishLocked();
  }
  if (wake) intake_.WakeOne();
  return id;
}

bool BatchEngineImpl::Cancel(RequestId id, EngineContext& context) {
  bool live = false;
  {
    MutexLock lock(&mu_);
    SettleLocked(context);  // a request still in the intake is now in the Scheduler
    live = intake_.IsLiveRequest(id);
    if (live) {
      records_.Resolve(id, CancelledError(absl::StrCat("request ", id, " cancelled by the caller")), context);
      PublishLocked();
    }
  }
  // The anchor may have changed, so the pending wake-up time may be too late.
  if (live) intake_.WakeOne();
  return live;
}

void BatchEngineImpl::Shutdown(ShutdownMode mode, EngineContext& context) {
  {
    MutexLock lock(&mu_);
    intake_.Close();
    SettleLocked(context);
    if (mode == ShutdownMode::kCancelQueued) {
      // No submit can stamp a slot any more, so the slab can be walked.
      for (RequestId request : intake_.QueuedRequests()) {
        if (intake_.Get(request).id != request) continue;  // resolved with another window
        records_.Resolve(request, ShuttingDownError("batcher shut down before dispatch"), context);
      }
      PublishLocked();
    } else {
      draining_ = true;
    }
    stopping_ = true;
  }
  intake_.WakeAll();
  context.Fire();
  std::call_once(join_once_, [this] {
    // joinable(): the threads may never have started.
    for (std::thread& t : workers_) {
      if (t.joinable()) t.join();
    }
    {
      MutexLock lock(&mu_);
      workers_joined_ = true;  // every request is resolved: the deadline thread may stop
      deadline_cv_.notify_all();
    }
    if (deadline_thread_.joinable()) deadline_thread_.join();
    // Its workers are gone: it waits for no memory, and reserves none.
    if (attached_) options_.device_memory->device->Detach(options_.device_memory->model);
  });
}

void BatchEngineImpl::RecordMerged(const absl::Status& status) {
  MutexLock lock(&mu_);
  recorder_.OnResolved(status);
}

std::int64_t BatchEngineImpl::effective_budget() const {
  MutexLock lock(&mu_);
  return aimd_.current();
}

MetricsSnapshot BatchEngineImpl::metrics() const {
  MutexLock lock(&mu_);
  const Intake::Counts intake = intake_.counts();
  MetricsSnapshot s =
      recorder_.Snapshot(scheduler_->queued_requests() + intake.requests, scheduler_->queued_tokens() + intake.tokens,
                         aimd_.max_budget(), aimd_.current());
  s.requests_submitted = intake.submitted;
  for (const OnlineLatencyFit& fit : latency_fits_) {
    s.learned_latency.push_back(fit.ready() ? fit.model() : BatchLatencyModel{});
  }
  if (options_.intra_op) s.learned_latency_threads = {1, options_.intra_op->cores};
  return s;
}

}  // namespace engine
}  // namespace tokenbatch
