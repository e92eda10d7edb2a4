// BatchEngineImpl: the batch engine (tokenbatch/runtime/batch_engine.h) built
// from its parts: the Intake (submit side), the RecordTable (records after
// submit), the worker loop (worker_loop.cc) and the deadline loop
// (deadline_loop.cc), around the policy core.
//
// Each loop is written as steps that take `now`, so tests drive the engine
// without threads: create it, Submit with a manual clock (SubmitAt), and call
// StepWorker and StepDeadlines with a fake EngineContext as the runner. The
// threads run the same steps with the steady clock and sleep between them.
#pragma once

#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "runtime/engine/intake.h"
#include "runtime/engine/record_table.h"
#include "tokenbatch/core/scheduler.h"
#include "tokenbatch/runtime/aimd_budget.h"
#include "tokenbatch/runtime/batch_engine.h"
#include "tokenbatch/runtime/metrics.h"
#include "tokenbatch/runtime/mutex.h"

namespace tokenbatch::engine {

// What one worker step did (StepWorker).
struct WorkerStep {
  std::vector<RequestId> batch;      // the batch run, anchor first; empty if none
  std::size_t expired = 0;           // requests resolved because their deadline passed while queued
  std::optional<TimePoint> wake_at;  // no batch: when the worker would wake (unset: queue empty)
  bool stop = false;                 // no batch, shutting down and nothing queued: the worker exits
  int threads = 0;                   // with intra_op: the threads the batch ran on
};

class BatchEngineImpl final : public BatchEngine {
 public:
  // Errors: InvalidArgument for invalid options.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<BatchEngineImpl>> Make(const BatcherOptions& options,
                                                                             EngineClient& client);
  ~BatchEngineImpl() override;

  void Start() override;
  [[nodiscard]] absl::StatusOr<RequestId> Submit(std::int64_t tokens, const SubmitOptions& options,
                                                 absl::FunctionRef<void(RequestId)> fill) override;
  [[nodiscard]] absl::StatusOr<std::vector<TokenWindow>> PlanWindows(std::int64_t tokens) override;
  [[nodiscard]] absl::StatusOr<RequestId> SubmitPlanned(
      std::span<const TokenWindow> windows, const SubmitOptions& options, EngineContext& context,
      absl::FunctionRef<void(RequestId request, std::span<const RequestId> scheduled)> fill) override;
  absl::Status Refuse(absl::Status status) override ABSL_LOCKS_EXCLUDED(mu_);
  bool Cancel(RequestId id, EngineContext& context) override ABSL_LOCKS_EXCLUDED(mu_);
  void Shutdown(ShutdownMode mode, EngineContext& context) override ABSL_LOCKS_EXCLUDED(mu_);
  void RecordMerged(const absl::Status& status) override ABSL_LOCKS_EXCLUDED(mu_);
  [[nodiscard]] std::int64_t effective_budget() const override ABSL_LOCKS_EXCLUDED(mu_);
  [[nodiscard]] MetricsSnapshot metrics() const override ABSL_LOCKS_EXCLUDED(mu_);

  // Manual-clock forms, for tests: Submit / SubmitPlanned at `now`.
  [[nodiscard]] absl::StatusOr<RequestId> SubmitAt(TimePoint now, std::int64_t tokens, const SubmitOptions& options,
                                                   absl::FunctionRef<void(RequestId)> fill);
  [[nodiscard]] absl::StatusOr<RequestId> SubmitPlannedAt(
      TimePoint now, std::span<const TokenWindow> windows, const SubmitOptions& options, EngineContext& context,
      absl::FunctionRef<void(RequestId request, std::span<const RequestId> scheduled)> fill);
  // One worker iteration at `now` with `context` as the runner: settle the intake,
  // ask the core, resolve expired requests, and run the batch if there is one,
  // completing it at `done_at` (default: `now`): done_at - now is the batch's run
  // time for the metrics and, when `done_at` is given, what the worker's latency
  // fit learns; fires `context`. Does not sleep.
  // Without Start only.
  WorkerStep StepWorker(EngineContext& context, TimePoint now, std::optional<TimePoint> done_at = std::nullopt)
      ABSL_LOCKS_EXCLUDED(mu_);
  // One deadline-thread iteration at `now`: resolves every request whose deadline
  // passed and fires `context`. Returns how many were resolved.
  std::size_t StepDeadlines(EngineContext& context, TimePoint now) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // What a worker keeps of the batch it runs (the typed part is in its context).
  struct RunningBatch {
    std::int64_t cost = 0;  // in the cost model's unit, as dispatched
    std::int64_t memory_bytes = 0;  // held of the shared device memory while it runs
    int threads = 0;                // with intra_op: the cores it holds while it runs (IntraOpWidth::Start)
    std::size_t fit = 0;            // the latency fit its run time teaches
    std::vector<RequestId> ids;
    std::vector<std::int64_t> tokens;
    std::vector<absl::Status> statuses;
  };

  BatchEngineImpl(const BatcherOptions& options, std::unique_ptr<Scheduler> scheduler, EngineClient& client);

  // Submit and SubmitAt: defined inline in batch_engine.cc, as it is on every
  // request's path.
  absl::StatusOr<RequestId> SubmitThroughIntake(TimePoint now, std::int64_t tokens, const SubmitOptions& options,
                                                absl::FunctionRef<void(RequestId)> fill);

  // --- worker_loop.cc
  void WorkerLoop(EngineContext& context, std::size_t worker);
  // The latency fit a batch dispatched at `now` by `worker` is predicted with:
  // the worker's, or with intra_op the one of the width it would get.
  std::size_t FitLocked(TimePoint now, std::size_t worker) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // With intra_op: whether the worker must wait for a core before it may take
  // a batch (none is free and work is queued); counts that as a sign of load.
  bool MustWaitForCoreLocked(TimePoint now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sleeps `worker` in the intake until `wake_at` or a wake-up.
  void SleepLocked(std::size_t worker, std::optional<TimePoint> wake_at) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // FireUnlocked for `worker`, which counts as unavailable meanwhile if it is worker 0.
  void FireUnlocked(EngineContext& context, std::size_t worker) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // With intra_op: whether `worker` leaves the queued work to worker 0 (asleep
  // or between decisions) and sleeps, because the next forward would be wide (worker_loop.cc says why only worker 0
  // runs wide forwards).
  bool LeavesWideForwardLocked(TimePoint now, std::size_t worker) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Asks the core at `now` (after SettleLocked) with latency fit `fit` and
  // resolves the expired requests.
  Decision DecideLocked(EngineContext& context, TimePoint now, std::size_t fit) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Marks `d`'s batch in flight, loads its inputs into `context` and, with
  // intra_op, gives it its threads (and `fit` the latency fit of that width):
  // one unless `worker` is 0.
  void DispatchLocked(const Decision& d, TimePoint now, EngineContext& context, RunningBatch& batch, std::size_t fit,
                      std::size_t worker) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The Scheduler's decision at `now` under `context`, within the shared device
  // memory when there is one (BatcherOptions::device_memory).
  Decision NextLocked(TimePoint now, DecisionContext context) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Gives the batch's shared device memory back (without the engine lock).
  void ReleaseMemory(RunningBatch& batch) ABSL_LOCKS_EXCLUDED(mu_);
  // Runs the loaded batch (no lock held but for an OOM's budget cut).
  void Execute(EngineContext& context, RunningBatch& batch, double* exec_us, IsolationReport* report)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Gives the batch's cores back (intra_op), completes its records and teaches
  // its latency fit its run time unless `learn` is false (the time is not the
  // batch's).
  void FinishLocked(EngineContext& context, RunningBatch& batch, TimePoint now, double exec_us,
                    const IsolationReport& report, bool learn)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves the intake into the Scheduler. Enqueue failures (not expected) resolve
  // the request with that error.
  void SettleLocked(EngineContext& context) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Publishes the queue size and freed slots to the intake and refreshes the
  // sleepers' wake rule, waking one if the intake already holds what wakes it.
  void PublishLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Fires `context` with the lock released.
  void FireUnlocked(EngineContext& context) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // --- deadline_loop.cc
  void DeadlineLoop(EngineContext& context);

  const BatcherOptions options_;
  const std::int64_t max_input_tokens_;
  EngineClient& client_;
  std::vector<std::unique_ptr<EngineContext>> contexts_;  // one per thread, made at Start
  std::vector<std::thread> workers_;
  std::thread deadline_thread_;
  std::once_flag join_once_;
  // Attached to BatcherOptions::device_memory (Make): detaches when it stops.
  bool attached_ = false;

  // Lock order: mu_ (the engine lock) before the intake's own.
  mutable Mutex mu_;
  std::unique_ptr<Scheduler> scheduler_ ABSL_GUARDED_BY(mu_);
  AimdBudget aimd_ ABSL_GUARDED_BY(mu_);
  MetricsRecorder recorder_ ABSL_GUARDED_BY(mu_);
  // One per worker (with intra_op: one per width, narrow then wide): its
  // batches' run times against their cost, for the adaptive batching window.
  // StepWorker is worker 0.
  std::vector<OnlineLatencyFit> latency_fits_ ABSL_GUARDED_BY(mu_);
  // BatcherOptions::intra_op: the cores the running forwards hold.
  std::optional<IntraOpWidth> intra_op_ ABSL_GUARDED_BY(mu_);
  Intake intake_;  // its own lock; its records are guarded by mu_
  RecordTable records_ ABSL_GUARDED_BY(mu_);
  std::condition_variable deadline_cv_;
  std::vector<RequestId> settling_ ABSL_GUARDED_BY(mu_);  // SettleLocked's swap buffer
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Worker 0 runs (with intra_op) and is not running callbacks: a wide forward
  // left to it is taken at its next decision (LeavesWideForwardLocked).
  bool first_worker_available_ ABSL_GUARDED_BY(mu_) = true;
  bool workers_joined_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace tokenbatch::engine
