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
// Structure: Batcher is the typed facade over a compiled, type-independent
// BatchEngine (batch_engine.h, src/runtime/engine/), which owns the threads,
// the records, the intake and the policy core. Batcher keeps what depends on
// In and Out: each request's input and callback in a payload table beside the
// engine's records, and, per engine thread, a Context that runs a batch through
// the backend and calls the callbacks.
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
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "tokenbatch/core/admission.h"
#include "tokenbatch/core/errors.h"
#include "tokenbatch/runtime/batch_engine.h"
#include "tokenbatch/runtime/batcher_options.h"
#include "tokenbatch/runtime/isolation.h"
#include "tokenbatch/runtime/metrics.h"
#include "tokenbatch/runtime/result_future.h"
#include "tokenbatch/runtime/slot_array.h"

namespace tokenbatch {

template <typename In, typename Out>
class Batcher final : private EngineClient {
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

  // Starts options.num_workers worker threads (unless options.defer_start).
  // Errors: InvalidArgument for invalid options, a missing backend, or a
  // truncate/split oversize policy without the hooks it needs.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Batcher>> Create(const BatcherOptions& options,
                                                                       Backend backend, Hooks hooks = {});

  // Shuts down with options.shutdown_on_destroy unless Shutdown was called; blocks
  // until in-flight batches finish.
  ~Batcher() override {
    if (engine_) Shutdown(shutdown_on_destroy_);
  }
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  // Queues `input` of `tokens` tokens; `done` is called exactly once with its
  // result. Moves from `input` only on success. Never blocks on the backend.
  // Errors (returned, `done` not called): InvalidArgument (tokens < 1, empty
  // `done`), Oversize (under `reject`), QueueFull, ShuttingDown, or the slicer's
  // error (InvalidArgument if it threw).
  [[nodiscard]] absl::StatusOr<RequestId> Submit(In&& input, std::int64_t tokens, const SubmitOptions& options,
                                                 Callback done) {
    if (!done) return InvalidArgumentError("Submit needs a callback");
    return SubmitWith(std::move(input), tokens, options, Notifier{std::move(done), {}});
  }
  // As above, with a future instead of a callback.
  [[nodiscard]] absl::StatusOr<Ticket> Submit(In&& input, std::int64_t tokens, const SubmitOptions& options = {}) {
    auto [promise, future] = ResultPromise<Out>::Make();
    absl::StatusOr<RequestId> id = SubmitWith(std::move(input), tokens, options, Notifier{nullptr, std::move(promise)});
    if (!id.ok()) return id.status();
    return Ticket{*id, std::move(future)};
  }

  // Resolves request `id` with Cancelled now if it is not resolved yet: removed
  // from the queue if queued, its result dropped if it is running. Returns false
  // if it was already resolved (or is unknown).
  bool Cancel(RequestId id) {
    Context context(*this);
    const bool live = engine_->Cancel(id, context);
    context.Fire();
    return live;
  }

  // Starts the worker and deadline threads of a Batcher created with
  // BatcherOptions::defer_start; does nothing if they were started already, or
  // if Shutdown came first. Thread-safe; blocks only while the threads are
  // created (a concurrent caller waits for the first).
  void Start() {
    std::call_once(started_, [this] { engine_->Start(); });
  }

  // Stops accepting (Submit fails with ShuttingDown), then drains or fails what is
  // queued per `mode`, and joins the workers. A Batcher whose start was deferred
  // and never started is started for kDrain (so that what is queued runs) and
  // not for kCancelQueued (so that nothing queued runs). Blocks until in-flight
  // batches are done. Idempotent; must not be called from a callback.
  void Shutdown(ShutdownMode mode) {
    std::call_once(started_, [this, mode] {
      if (mode == ShutdownMode::kDrain) engine_->Start();
    });
    Context context(*this);
    engine_->Shutdown(mode, context);
  }

  // The AIMD-effective budget in the cost model's unit (<= max_batch_tokens).
  [[nodiscard]] std::int64_t effective_budget() const { return engine_->effective_budget(); }
  [[nodiscard]] MetricsSnapshot metrics() const { return engine_->metrics(); }

 private:
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
  // What a request carries, beside its engine record (same id). Accessed under the
  // engine lock, or by the submitter before the id is published.
  struct Payload {
    std::optional<In> input;                // scheduled records, until dispatch
    Notifier done;                          // requests, until resolved
    std::vector<std::optional<Out>> parts;  // split requests: their windows' outputs
  };
  // A resolved request's callback and result, fired once the engine lock is
  // released. A split request's windows are merged there too (merge = true): the
  // user's merge function never runs under the lock.
  struct Completion {
    Completion(Notifier&& d, Result&& r) : done(std::move(d)), result(std::move(r)) {}
    Notifier done;
    Result result;
    bool merge = false;
    std::vector<Out> parts;
    std::vector<TokenWindow> windows;
  };

  // The typed work of one engine thread: its batch's inputs and results, and the
  // completions it owes.
  class Context final : public EngineContext {
   public:
    explicit Context(Batcher& batcher) : b_(batcher) {}

    void LoadBatch(std::span<const RequestId> ids) override {
      inputs_.clear();
      inputs_.reserve(ids.size());
      for (RequestId id : ids) {
        std::optional<In>& input = b_.payloads_.Get(id).input;
        inputs_.push_back(std::move(*input));
        input.reset();
      }
    }
    void RunBatch(std::span<absl::Status> statuses, absl::FunctionRef<void(std::size_t, std::size_t)> on_oom,
                  IsolationReport& report) override {
      // RunIsolated writes every element; the default (Unknown, no message) costs
      // no allocation, unlike a typed error built once per batch.
      results_.assign(inputs_.size(), Result());
      RunIsolated<Out>(b_.backend_, std::span<const In>(inputs_), std::span<Result>(results_), on_oom, report);
      for (std::size_t i = 0; i < results_.size(); ++i) {
        if (!results_[i].ok()) statuses[i] = results_[i].status();
      }
      inputs_.clear();
    }
    void Resolve(RequestId request, absl::Status error) override {
      completions_.emplace_back(TakeNotifier(request), Result(std::move(error)));
    }
    void ResolveWithOutput(RequestId request, std::size_t batch_index) override {
      completions_.emplace_back(TakeNotifier(request), std::move(results_[batch_index]));
    }
    void StoreWindowOutput(RequestId request, std::uint32_t window, std::size_t batch_index) override {
      b_.payloads_.Get(request).parts[window] = std::move(*results_[batch_index]);
    }
    void ResolveMerged(RequestId request, std::span<const TokenWindow> windows) override {
      Completion& merged = completions_.emplace_back(TakeNotifier(request), Result(BackendError("not merged")));
      merged.merge = true;
      merged.windows.assign(windows.begin(), windows.end());
      std::vector<std::optional<Out>>& parts = b_.payloads_.Get(request).parts;
      merged.parts.reserve(parts.size());
      for (std::optional<Out>& p : parts) merged.parts.push_back(std::move(*p));
    }
    [[nodiscard]] bool HasCompletions() const override { return !completions_.empty(); }

    // Merges split requests and runs callbacks. Exceptions thrown by a merge
    // become Backend errors; those thrown by a callback are dropped so that no
    // worker dies.
    void Fire() override {
      // Last to first: a thread waiting on these futures in submission order then
      // wakes once per batch (when the first is set, the rest are ready), instead
      // of once per request with the worker preempted each time (docs/benchmarks.md).
      for (auto it = completions_.rbegin(); it != completions_.rend(); ++it) {
        Completion& c = *it;
        if (c.merge) {
          try {
            c.result = b_.hooks_.merge(std::span<const Out>(c.parts), std::span<const TokenWindow>(c.windows));
          } catch (const std::exception& e) {
            c.result = BackendError(absl::StrCat("merge threw: ", e.what()));
          } catch (...) {
            c.result = BackendError("merge threw a non-standard exception");
          }
          b_.engine_->RecordMerged(c.result.status());
        }
        try {
          c.done(std::move(c.result));
        } catch (...) {
          // The caller's callback failed; the request is resolved all the same.
        }
      }
      completions_.clear();
    }

   private:
    // Leaves the payload's Notifier empty (a moved-from std::function need not
    // be; a moved-from promise is), so the callback's captures die with its
    // completion, not at the slot's next use.
    Notifier TakeNotifier(RequestId request) {
      Notifier& done = b_.payloads_.Get(request).done;
      Notifier taken = std::move(done);
      done.callback = nullptr;
      return taken;
    }

    Batcher& b_;
    std::vector<In> inputs_;
    std::vector<Result> results_;
    std::vector<Completion> completions_;
  };

  Batcher(const BatcherOptions& options, Backend backend, Hooks hooks)
      : backend_(std::move(backend)),
        hooks_(std::move(hooks)),
        shutdown_on_destroy_(options.shutdown_on_destroy),
        max_input_tokens_(EffectiveMaxInputTokens(options.scheduler)) {}

  // EngineClient.
  void GrowTo(std::size_t slots) override { payloads_.GrowTo(slots); }
  void Clear(RequestId id) override {
    Payload& p = payloads_.Get(id);
    p.input.reset();
    if (!p.parts.empty()) p.parts = {};
  }
  std::unique_ptr<EngineContext> NewContext() override { return std::make_unique<Context>(*this); }

  // Both Submit forms: the intake for the common case (a request that fits, without
  // a deadline), else a plan (slicing outside every lock) and SubmitPlanned.
  absl::StatusOr<RequestId> SubmitWith(In&& input, std::int64_t tokens, const SubmitOptions& options, Notifier done) {
    if (tokens >= 1 && tokens <= max_input_tokens_ && !options.deadline) {
      return engine_->Submit(tokens, options, [&](RequestId id) {
        Payload& p = payloads_.Get(id);
        p.input.emplace(std::move(input));
        p.done = std::move(done);
      });
    }
    absl::StatusOr<std::vector<TokenWindow>> windows = engine_->PlanWindows(tokens);
    if (!windows.ok()) return windows.status();
    const bool whole = windows->size() == 1 && (*windows)[0].begin == 0 && (*windows)[0].end == tokens;
    // Slice outside the locks: truncation and splitting copy tokens.
    std::vector<In> pieces;
    for (const TokenWindow& w : *windows) {
      if (whole) break;
      absl::StatusOr<In> piece = InvalidArgumentError("slicer threw");
      try {
        piece = hooks_.slice(input, w);
      } catch (const std::exception& e) {
        piece = InvalidArgumentError(absl::StrCat("slicer threw: ", e.what()));
      } catch (...) {
      }
      if (!piece.ok()) return engine_->Refuse(piece.status());
      pieces.push_back(std::move(*piece));
    }
    Context context(*this);
    absl::StatusOr<RequestId> id = engine_->SubmitPlanned(
        *windows, options, context, [&](RequestId request, std::span<const RequestId> scheduled) {
          Payload& p = payloads_.Get(request);
          p.done = std::move(done);
          if (scheduled.size() > 1 || scheduled[0] != request) p.parts.resize(scheduled.size());
          for (std::size_t i = 0; i < scheduled.size(); ++i) {
            payloads_.Get(scheduled[i]).input.emplace(pieces.empty() ? std::move(input) : std::move(pieces[i]));
          }
        });
    context.Fire();
    return id;
  }

  const Backend backend_;
  const Hooks hooks_;
  const ShutdownMode shutdown_on_destroy_;
  const std::int64_t max_input_tokens_;  // longer inputs need a plan (BatchEngine::PlanWindows)
  SlotArray<Payload> payloads_;          // before engine_: the engine is destroyed first
  std::unique_ptr<BatchEngine> engine_;
  std::once_flag started_;
};

template <typename In, typename Out>
absl::StatusOr<std::unique_ptr<Batcher<In, Out>>> Batcher<In, Out>::Create(const BatcherOptions& options,
                                                                           Backend backend, Hooks hooks) {
  // The engine validates the rest of `options` (BatchEngine::Create).
  if (!backend) return InvalidArgumentError("Batcher needs a backend function");
  const OversizePolicy oversize = options.scheduler.oversize;
  if (oversize != OversizePolicy::kReject && !hooks.slice) {
    return InvalidArgumentError(
        absl::StrCat("oversize policy '", ToAbsl(OversizePolicyName(oversize)), "' needs Hooks::slice"));
  }
  if (oversize == OversizePolicy::kSplit && !hooks.merge) {
    return InvalidArgumentError("oversize policy 'split' needs Hooks::merge");
  }
  std::unique_ptr<Batcher> batcher(new Batcher(options, std::move(backend), std::move(hooks)));
  absl::StatusOr<std::unique_ptr<BatchEngine>> engine = BatchEngine::Create(options, *batcher);
  if (!engine.ok()) return engine.status();
  batcher->engine_ = std::move(*engine);
  if (!options.defer_start) batcher->Start();
  return batcher;
}

}  // namespace tokenbatch
