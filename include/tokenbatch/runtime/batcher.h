// Batcher: the thread-safe token-budget micro-batcher, a runtime around Scheduler.
//
// Callers Submit one input with its exact token count and get a future (or a
// callback). N worker threads, one per model instance, each run one batch at a
// time: a free worker asks the policy core for the next batch (so it sees every
// request that arrived meanwhile), runs the backend on it with the lock released,
// then resolves the requests. When the core says "not yet", the worker sleeps
// exactly until the core's wake_at or until a submit may have made a batch ready
// (ArrivalWakeRule, the core's own rule); it never polls.
//
// Submit does not touch the policy core: it stamps a slot in a RequestSlab and
// appends it to an intake list under a small lock of its own, and a worker moves
// the intake into the Scheduler before each decision. So producer threads and
// workers do not share the core's indexes (whose cache lines would otherwise
// move between cores on every request; see docs/benchmarks.md), and a submit
// costs a lock, a clock read and a few stores. Requests with a deadline, and
// those that need truncating or splitting, go to the Scheduler directly.
//
// Guarantees:
//   * Every accepted request is resolved exactly once, with a result or a typed
//     error (errors.h); nothing is lost on shutdown, backend failure or
//     cancellation. A request refused by Submit is never queued, its callback is
//     never called, and the input it was given is left untouched.
//   * Failure isolation: a failed batch is bisected and retried (isolation.h), so
//     only a request that fails alone gets the error. An out-of-memory failure also
//     shrinks the effective budget (AimdBudget), once per dispatched batch however
//     many OOMs its bisection meets, and the budget recovers after successes.
//   * Oversize inputs follow SchedulerOptions::oversize: reject at submit,
//     truncate (Hooks::slice with window [0, max_input_tokens)), or split into
//     sliding windows (Hooks::slice per window) whose results Hooks::merge
//     combines; if any window fails, the request fails with that error.
//
// Threads: Submit, Cancel, metrics and effective_budget may be called from any
// thread. Besides the N workers, one deadline thread resolves requests whose
// deadline passes while they wait behind busy workers or run. Callbacks and the
// split merge run on those threads (or on the thread calling Cancel or Shutdown)
// without the lock held: they may call Submit or Cancel but must not block for
// long and must not call Shutdown or destroy the Batcher. An exception thrown by
// a callback is caught and dropped; one thrown by the slicer or the merge
// becomes the request's error.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "tokenbatch/core/admission.h"
#include "tokenbatch/core/errors.h"
#include "tokenbatch/core/scheduler.h"
#include "tokenbatch/runtime/aimd_budget.h"
#include "tokenbatch/runtime/batcher_options.h"
#include "tokenbatch/runtime/isolation.h"
#include "tokenbatch/runtime/metrics.h"
#include "tokenbatch/runtime/mutex.h"
#include "tokenbatch/runtime/request_slab.h"
#include "tokenbatch/runtime/result_future.h"

namespace tokenbatch {

template <typename In, typename Out>
class Batcher {
 public:
  using Result = absl::StatusOr<Out>;
  // Called exactly once per accepted request.
  using Callback = std::function<void(Result)>;
  // Runs one batch: returns one output per input, same order. May block (it is
  // the model call). An error (or exception) fails the call; see isolation.h.
  using Backend = std::function<absl::StatusOr<std::vector<Out>>(std::span<const In>)>;
  // Returns the part of `input` covering token positions `window`.
  using Slicer = std::function<absl::StatusOr<In>(const In& input, TokenWindow window)>;
  // Combines the outputs of a split request's windows (same order as `windows`).
  using Merger =
      std::function<absl::StatusOr<Out>(std::span<const Out> parts, std::span<const TokenWindow> windows)>;

  // Needed only for the truncate (slice) and split (slice + merge) oversize policies.
  struct Hooks {
    Slicer slice;
    Merger merge;
  };

  // What the future form of Submit returns: a std::future-like handle
  // (result_future.h) that becomes ready exactly once.
  using Future = ResultFuture<Out>;
  struct Ticket {
    RequestId id;    // for Cancel
    Future result;   // becomes ready exactly once
  };

  // Starts options.num_workers worker threads.
  // Errors: InvalidArgument for invalid options, a missing backend, or a
  // truncate/split oversize policy without the hooks it needs.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Batcher>> Create(const BatcherOptions& options,
                                                                       Backend backend, Hooks hooks = {});

  // Shuts down with options.shutdown_on_destroy unless Shutdown was called; blocks
  // until in-flight batches finish.
  ~Batcher() { Shutdown(options_.shutdown_on_destroy); }
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  // Queues `input` of `tokens` tokens; `done` is called exactly once with its
  // result. Moves from `input` only on success. Never blocks on the backend.
  // Errors (returned, `done` not called): InvalidArgument (tokens < 1, empty
  // `done`), Oversize (under `reject`), QueueFull, ShuttingDown, or the slicer's
  // error (InvalidArgument if it threw).
  [[nodiscard]] absl::StatusOr<RequestId> Submit(In&& input, std::int64_t tokens, const SubmitOptions& options,
                                                 Callback done);
  // As above, with a future instead of a callback.
  [[nodiscard]] absl::StatusOr<Ticket> Submit(In&& input, std::int64_t tokens,
                                              const SubmitOptions& options = {});

  // Resolves request `id` with Cancelled now if it is not resolved yet: removed
  // from the queue if queued, its result dropped if it is running. Returns false
  // if it was already resolved (or is unknown).
  bool Cancel(RequestId id);

  // Stops accepting (Submit fails with ShuttingDown), then drains or fails what is
  // queued per `mode`, and joins the workers. Blocks until in-flight batches are
  // done. Idempotent; must not be called from a callback.
  void Shutdown(ShutdownMode mode);

  // The AIMD-effective budget in the cost model's unit (<= max_batch_tokens).
  [[nodiscard]] std::int64_t effective_budget() const;
  [[nodiscard]] MetricsSnapshot metrics() const;

 private:
  // Where a record is in its life (see RequestSlab for free slots).
  enum class Stage : std::uint8_t {
    kQueued,       // in the intake or the Scheduler's queue
    kInFlight,     // in a running batch
    kAbandoned,    // in a running batch, but its request was resolved: drop the result
    kDone,         // its batch returned; being resolved or merged now
    kSplitParent,  // a split request; its windows are the scheduled records
  };
  // The windows of a split request (and their results as they arrive).
  struct SplitState {
    std::vector<TokenWindow> windows;
    std::vector<std::optional<Out>> parts;
    std::vector<RequestId> children;  // window ids; 0 once that window is done
    std::size_t remaining = 0;
  };
  // How a request's result is delivered: the caller's callback, or the promise
  // behind a Ticket's future (kept here rather than captured in a callback, which
  // would cost another allocation per request).
  struct Notifier {
    Callback callback;
    ResultPromise<Out> promise;
    void operator()(Result result) {
      if (promise.valid()) {
        promise.Set(std::move(result));
      } else {
        callback(std::move(result));
      }
    }
  };
  // One per request, and one per window of a split request; lives in slab_.
  // Written by Submit under intake_mu_ while its slot is not yet published, then
  // only under mu_.
  struct Record {
    RequestId id = 0;      // 0: free
    RequestId parent = 0;  // a window: its request's id; a request: 0
    std::uint32_t index = 0;  // a window: its index
    Stage stage = Stage::kQueued;
    int priority = 0;
    std::int64_t tokens = 0;
    TimePoint arrival{};
    std::optional<TimePoint> deadline;  // requests only
    std::optional<In> input;            // scheduled records, until dispatch
    Notifier done;                      // requests only
    std::unique_ptr<SplitState> split;  // split requests only
  };
  // A resolved request's callback and result, fired once the lock is released.
  // A split request's windows are merged there too (merge = true): the user's
  // merge function never runs under the lock.
  struct Completion {
    Notifier done;
    Result result;
    bool merge = false;
    std::vector<Out> parts;
    std::vector<TokenWindow> windows;
  };
  struct Batch {
    std::vector<RequestId> ids;
    std::vector<In> inputs;
    std::vector<std::int64_t> tokens;
  };

  Batcher(const BatcherOptions& options, std::unique_ptr<Scheduler> scheduler, Backend backend, Hooks hooks)
      : options_(options), backend_(std::move(backend)), hooks_(std::move(hooks)),
        max_input_tokens_(EffectiveMaxInputTokens(options.scheduler)),
        scheduler_(std::move(scheduler)),
        aimd_(options.scheduler.max_batch_tokens, options.aimd) {}

  // Submit for inputs that need a plan (oversize, invalid) or carry a deadline:
  // they go to the Scheduler directly, under mu_.
  absl::StatusOr<RequestId> SubmitPlanned(In&& input, std::int64_t tokens, const SubmitOptions& options,
                                          Notifier done);
  // Both Submit forms: the intake for the common case, else SubmitPlanned.
  absl::StatusOr<RequestId> SubmitWith(In&& input, std::int64_t tokens, const SubmitOptions& options,
                                       Notifier done);
  // Fills a newly allocated record that will be scheduled (a request, or a window
  // of a split one) as queued: its priority, tokens, arrival and input. Called by
  // whoever owns the slot (under intake_mu_ before it is published, else mu_).
  static void Stamp(Record& r, int priority, std::int64_t tokens, TimePoint now, In&& input);
  // Counts a refused Submit in the metrics and returns `status`.
  absl::Status Refuse(absl::Status status) ABSL_LOCKS_EXCLUDED(mu_, intake_mu_);
  // QueueFull if `requests` more requests of `tokens` tokens in all would exceed
  // max_queue_size or max_queued_tokens (queue = Scheduler + intake).
  absl::Status CheckCapacityLocked(std::size_t requests, std::int64_t tokens) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(intake_mu_);
  // Moves the intake into the Scheduler and publishes the queue size and the
  // freed slots to the submit side. Enqueue failures (not expected) resolve the
  // request with that error into `out`.
  void SettleLocked(std::vector<Completion>& out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Publishes the Scheduler's queue size plus `settling_*` (requests taken from
  // the intake but not yet enqueued) for the backpressure check, and returns
  // freed slots to the slab.
  void PublishCountsLocked(std::size_t settling_requests, std::int64_t settling_tokens)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_, intake_mu_);
  // Publishes the queue size and freed slots without touching the intake, and
  // refreshes the sleeping workers' wake rule (waking one if the intake already
  // holds what the new snapshot says must wake it).
  void PublishLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Wakes one sleeping worker, if any (it will call Next).
  void WakeWorker() ABSL_LOCKS_EXCLUDED(intake_mu_);

  void WorkerLoop();
  // Sleeps until `wake_at` (forever if unset) or a wake-up; returns at once if
  // the intake is not empty or a wake-up is pending. Holds mu_ again on return.
  void SleepLocked(std::optional<TimePoint> wake_at) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Batch TakeBatchLocked(const Decision& d, TimePoint now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::vector<Result> Execute(const Batch& batch, double* exec_us, IsolationReport* report)
      ABSL_LOCKS_EXCLUDED(mu_);
  void CompleteLocked(Batch& batch, std::vector<Result>& results, std::vector<Completion>& out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ResolveLocked(RequestId request_id, Result result, std::vector<Completion>& out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes a live request out of the queue and the slab (its in-flight records are
  // marked abandoned instead); returns its callback, not yet called.
  Notifier TakeLocked(RequestId request_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A scheduled record of a request being taken: out of the queue and freed, or,
  // if it is running, abandoned (freed when its batch completes, result dropped).
  void TakeScheduledLocked(Record& record) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Resets a record and queues its slot for release at the next publish.
  void FreeLocked(Record& record) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Merges split requests and runs callbacks. Exceptions thrown by a merge become
  // Backend errors; those thrown by a callback are dropped so that no worker dies.
  void Fire(std::vector<Completion>& completions) ABSL_LOCKS_EXCLUDED(mu_);
  // The deadline thread: resolves requests whose deadline passes while they are
  // queued behind busy workers or running (their late results are dropped).
  void DeadlineLoop();

  const BatcherOptions options_;
  const Backend backend_;
  const Hooks hooks_;
  const std::int64_t max_input_tokens_;
  std::vector<std::thread> workers_;
  std::thread deadline_thread_;
  std::once_flag join_once_;

  // Lock order: mu_ before intake_mu_.
  // mu_ guards the policy core and everything the workers share. Records are
  // reached through slab_ (whose slot bookkeeping intake_mu_ guards); a
  // published record's contents are guarded by mu_.
  mutable Mutex mu_;
  std::unique_ptr<Scheduler> scheduler_ ABSL_GUARDED_BY(mu_);
  AimdBudget aimd_ ABSL_GUARDED_BY(mu_);
  MetricsRecorder recorder_ ABSL_GUARDED_BY(mu_);
  // (deadline, request id) of unresolved requests with a deadline, earliest first.
  std::set<std::pair<TimePoint, RequestId>> deadlines_ ABSL_GUARDED_BY(mu_);
  std::condition_variable deadline_cv_;
  std::vector<RequestId> to_release_ ABSL_GUARDED_BY(mu_);  // freed, released at the next publish
  std::vector<RequestId> settling_ ABSL_GUARDED_BY(mu_);    // SettleLocked's swap buffer
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool workers_joined_ ABSL_GUARDED_BY(mu_) = false;

  // intake_mu_ guards what Submit touches, so that a submit never contends with
  // a worker for the policy core's indexes: the intake (requests accepted but not
  // yet in the Scheduler), the slab's slots, the published queue size used for
  // backpressure, and the wake rule: one snapshot of the queue shared by all
  // sleeping workers, retaken whenever a worker goes to sleep or the queue is
  // published after a change.
  mutable Mutex intake_mu_ ABSL_ACQUIRED_AFTER(mu_);
  std::condition_variable wake_cv_;  // sleeping workers wait on it with intake_mu_
  RequestSlab<Record> slab_;         // slot bookkeeping guarded by intake_mu_ (see above)
  std::vector<RequestId> intake_ ABSL_GUARDED_BY(intake_mu_);
  std::int64_t intake_tokens_ ABSL_GUARDED_BY(intake_mu_) = 0;
  std::size_t scheduled_requests_ ABSL_GUARDED_BY(intake_mu_) = 0;  // in the Scheduler, as last published
  std::int64_t scheduled_tokens_ ABSL_GUARDED_BY(intake_mu_) = 0;
  std::uint64_t submitted_ ABSL_GUARDED_BY(intake_mu_) = 0;
  bool accepting_ ABSL_GUARDED_BY(intake_mu_) = true;
  int sleeping_workers_ ABSL_GUARDED_BY(intake_mu_) = 0;
  bool wake_signalled_ ABSL_GUARDED_BY(intake_mu_) = false;
  ArrivalWakeRule wake_rule_ ABSL_GUARDED_BY(intake_mu_);
};

}  // namespace tokenbatch

#include "tokenbatch/runtime/batcher_impl.h"         // IWYU pragma: export
#include "tokenbatch/runtime/batcher_worker_impl.h"  // IWYU pragma: export
