// Batcher: the thread-safe token-budget micro-batcher, a runtime around Scheduler.
//
// Callers Submit one input with its exact token count and get a future (or a
// callback). N worker threads, one per model instance, each run one batch at a
// time: a free worker asks the policy core for the next batch (so it sees every
// request that arrived meanwhile), runs the backend on it with the lock released,
// then resolves the requests. When the core says "not yet", the worker sleeps
// exactly until the core's wake_at or until a submit may have made a batch ready;
// it never polls.
//
// Guarantees:
//   * Every accepted request is resolved exactly once, with a result or a typed
//     error (errors.h); nothing is lost on shutdown, backend failure or
//     cancellation. A request refused by Submit is never queued, its callback is
//     never called, and the input it was given is left untouched.
//   * Failure isolation: a failed batch is bisected and retried (isolation.h), so
//     only a request that fails alone gets the error. Out-of-memory failures also
//     shrink the effective budget (AimdBudget), which recovers after successes.
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
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "tokenbatch/core/admission.h"
#include "tokenbatch/core/errors.h"
#include "tokenbatch/core/scheduler.h"
#include "tokenbatch/runtime/aimd_budget.h"
#include "tokenbatch/runtime/batcher_options.h"
#include "tokenbatch/runtime/isolation.h"
#include "tokenbatch/runtime/metrics.h"
#include "tokenbatch/runtime/mutex.h"

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

  struct Ticket {
    RequestId id;                 // for Cancel
    std::future<Result> result;   // becomes ready exactly once
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
  struct Parent {
    // One entry each unless the request was split (inline: no allocation then).
    Callback done;
    absl::InlinedVector<TokenWindow, 1> windows;
    absl::InlinedVector<std::optional<Out>, 1> parts;
    absl::InlinedVector<RequestId, 1> children;
    std::size_t remaining = 0;
    std::optional<TimePoint> deadline;
  };
  struct Child {
    RequestId parent = 0;
    std::size_t index = 0;
    std::optional<In> input;  // moved into the batch at dispatch
    std::int64_t tokens = 0;
    TimePoint arrival{};
    bool in_flight = false;
  };
  // A resolved request's callback and result, fired once the lock is released.
  // A split request's windows are merged there too (merge = true): the user's
  // merge function never runs under the lock.
  struct Completion {
    Callback done;
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

  void WorkerLoop();
  Batch TakeBatchLocked(const Decision& d, TimePoint now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::vector<Result> Execute(const Batch& batch, double* exec_us, IsolationReport* report)
      ABSL_LOCKS_EXCLUDED(mu_);
  void CompleteLocked(Batch& batch, std::vector<Result>& results, std::vector<Completion>& out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ResolveLocked(RequestId parent_id, Result result, std::vector<Completion>& out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Removes a request and its queued windows; returns its callback (unresolved).
  Callback TakeLocked(RequestId parent_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
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

  mutable Mutex mu_;
  std::condition_variable cv_;
  std::unique_ptr<Scheduler> scheduler_ ABSL_GUARDED_BY(mu_);
  AimdBudget aimd_ ABSL_GUARDED_BY(mu_);
  MetricsRecorder recorder_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<RequestId, Parent> parents_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<RequestId, Child> children_ ABSL_GUARDED_BY(mu_);
  // (deadline, request id) of unresolved requests with a deadline, earliest first.
  std::set<std::pair<TimePoint, RequestId>> deadlines_ ABSL_GUARDED_BY(mu_);
  std::condition_variable deadline_cv_;
  RequestId next_id_ ABSL_GUARDED_BY(mu_) = 1;
  int idle_workers_ ABSL_GUARDED_BY(mu_) = 0;
  bool accepting_ ABSL_GUARDED_BY(mu_) = true;
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool workers_joined_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace tokenbatch

#include "tokenbatch/runtime/batcher_impl.h"  // IWYU pragma: export
