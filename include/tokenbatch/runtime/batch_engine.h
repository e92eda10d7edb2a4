// BatchEngine: the compiled, type-independent runtime under Batcher<In, Out>.
//
// The engine owns everything that does not depend on what a request carries:
// request ids and their records, token counts, priorities, deadlines, the intake
// queue, the policy core (Scheduler), the AIMD budget, the metrics, the worker
// threads (one per model instance) and the deadline thread. What a request
// carries (its input, its output, how its caller is told) stays in the typed
// facade, Batcher<In, Out> (batcher.h), which implements the two interfaces
// below: EngineClient for the payload table, EngineContext for the typed work of
// one thread. The engine calls the facade once per batch to load and run it, and
// once per resolved request to hand it its result.
//
// Locking: the engine has one lock for its records and the policy core (the
// "engine lock") and a small one for the submit side. Methods documented "under
// the engine lock" are called with it held: they must not block, call back into
// the engine or run user code. The others are called without any engine lock.
//
// The guarantees (exactly once, failure isolation, oversize handling, what runs on
// which thread) are Batcher's; see batcher.h.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tokenbatch/core/admission.h"
#include "tokenbatch/core/request.h"
#include "tokenbatch/runtime/batcher_options.h"
#include "tokenbatch/runtime/isolation.h"
#include "tokenbatch/runtime/metrics.h"

namespace tokenbatch {

// True while the calling thread is an engine worker firing completions
// (EngineContext::Fire) with its next batch already taken: that batch's model
// call waits until the callbacks return. A callback with costly work (formatting
// a reply) can hand it to another thread then, and do it inline otherwise, when
// the worker has nothing else to do. False on every other thread.
[[nodiscard]] bool CallbackDelaysNextBatch();

// The typed work of one engine thread (a worker, the deadline thread, or a caller
// of Submit, Cancel or Shutdown): the batch it runs and the resolutions it owes.
// Used by one thread at a time.
class EngineContext {
 public:
  virtual ~EngineContext() = default;

  // Under the engine lock: moves the inputs of the scheduled records `ids` (a
  // batch about to run, in order) out of the payload table into this context.
  virtual void LoadBatch(std::span<const RequestId> ids) = 0;
  // Without a lock: runs the loaded batch through the backend with failure
  // isolation (isolation.h). `statuses` has one entry per input (same order), all
  // OK on entry; the error of each input that failed is written there, and an
  // output is held for every input left OK. `on_oom(offset, count)` is
  // RunIsolated's. Blocks for as long as the model runs.
  virtual void RunBatch(std::span<absl::Status> statuses,
                        absl::FunctionRef<void(std::size_t offset, std::size_t count)> on_oom,
                        IsolationReport& report) = 0;

  // Under the engine lock, each exactly once per request: takes the request's
  // callback out of the payload table and owes it...
  // ...`error` (not OK).
  virtual void Resolve(RequestId request, absl::Status error) = 0;
  // ...the output of input `batch_index` of the last batch run.
  virtual void ResolveWithOutput(RequestId request, std::size_t batch_index) = 0;
  // ...the merge of its windows' outputs (kept by StoreWindowOutput); `windows`
  // are the token positions each covers, in window order.
  virtual void ResolveMerged(RequestId request, std::span<const TokenWindow> windows) = 0;
  // Under the engine lock: keeps the output of input `batch_index` of the last
  // batch as window `window` of split request `request`, for ResolveMerged.
  virtual void StoreWindowOutput(RequestId request, std::uint32_t window, std::size_t batch_index) = 0;

  // Whether resolutions are owed (Fire has work).
  [[nodiscard]] virtual bool HasCompletions() const = 0;
  // Without a lock: merges split requests and calls the callbacks owed, then
  // forgets them. Reports each merge's outcome with BatchEngine::RecordMerged.
  virtual void Fire() = 0;
};

// The facade's payload table, which mirrors the engine's record slots.
class EngineClient {
 public:
  virtual ~EngineClient() = default;
  // Under the submit-side lock, before the engine hands out any of them: the
  // payload table must cover `slots` slots. Rare (the slab grows in chunks). Must
  // not block or call the engine; may throw std::bad_alloc (the submit fails with
  // it and the engine is unchanged).
  virtual void GrowTo(std::size_t slots) = 0;
  // Under the engine lock: record `id` is being freed; drop what its payload
  // still holds (an input never dispatched, a split request's window outputs).
  // Must not block, throw or call the engine.
  virtual void Clear(RequestId id) = 0;
  // A context for a worker or the deadline thread. Called once per thread, at Start.
  [[nodiscard]] virtual std::unique_ptr<EngineContext> NewContext() = 0;
};

// Thread-safety: every method may be called from any thread, except Start (at
// most once, before Shutdown; Submit and Cancel may come before it, and
// BatcherOptions::defer_start relies on that) and the destructor. Submit, SubmitPlanned, Cancel,
// Refuse and the observers never block on a batch: they take the engine's locks
// briefly. Shutdown blocks until the threads are joined, so it must not be
// called from an engine thread (inside EngineContext::Fire), nor may the engine
// be destroyed there.
class BatchEngine {
 public:
  // Validates `options` (InvalidArgument: bad scheduler, AIMD or worker options).
  // `client` must outlive the engine. No thread runs until Start.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<BatchEngine>> Create(const BatcherOptions& options,
                                                                           EngineClient& client);
  // Joins the threads if Shutdown was not called (cancelling what is queued).
  virtual ~BatchEngine() = default;

  // Starts the worker threads and the deadline thread. Call once.
  virtual void Start() = 0;

  // Submits a request through the intake: one of 1..max_input_tokens tokens
  // (EffectiveMaxInputTokens) without a deadline; any other needs a plan
  // (PlanWindows, SubmitPlanned). Under the submit-side lock, with the id
  // allocated, calls `fill(id)` to store the payload; `fill` must not throw,
  // block or call the engine.
  // Errors (fill not called, counted as refused): QueueFull, ShuttingDown.
  [[nodiscard]] virtual absl::StatusOr<RequestId> Submit(std::int64_t tokens, const SubmitOptions& options,
                                                         absl::FunctionRef<void(RequestId)> fill) = 0;
  // The windows a request of `tokens` tokens is scheduled as under the oversize
  // policy: [0, tokens) when admitted whole. Errors (counted as refused):
  // InvalidArgument (tokens < 1), Oversize (under reject).
  [[nodiscard]] virtual absl::StatusOr<std::vector<TokenWindow>> PlanWindows(std::int64_t tokens) = 0;
  // Submits a request scheduled as `windows` (from PlanWindows). With one window
  // the request itself is scheduled; with more it is split and each window is a
  // scheduled record. Under the engine lock calls `fill(request, scheduled)`
  // (which must not throw, block or call the engine), where `scheduled` are the
  // ids whose payloads take the inputs (`request` itself when not split). An Enqueue failure (not expected) resolves
  // the request into `context`, which the caller fires. Errors (fill not called, counted as refused): QueueFull,
  // ShuttingDown.
  [[nodiscard]] virtual absl::StatusOr<RequestId> SubmitPlanned(
      std::span<const TokenWindow> windows, const SubmitOptions& options, EngineContext& context,
      absl::FunctionRef<void(RequestId request, std::span<const RequestId> scheduled)> fill) = 0;
  // Counts a request refused before it reached the engine (e.g. its slicer failed)
  // and returns `status`.
  virtual absl::Status Refuse(absl::Status status) = 0;

  // Resolves request `id` with Cancelled into `context` if it is not resolved yet;
  // the caller fires `context`. False if already resolved or unknown.
  virtual bool Cancel(RequestId id, EngineContext& context) = 0;
  // Stops accepting, drains or cancels what is queued per `mode` (cancellations
  // into `context`, fired here before the threads are joined), joins the threads.
  // Blocks until in-flight batches are done. Idempotent.
  virtual void Shutdown(ShutdownMode mode, EngineContext& context) = 0;

  // Counts the outcome of a split request's merge (called by EngineContext::Fire).
  virtual void RecordMerged(const absl::Status& status) = 0;
  // The AIMD-effective budget in the cost model's unit (<= max_batch_tokens).
  [[nodiscard]] virtual std::int64_t effective_budget() const = 0;
  [[nodiscard]] virtual MetricsSnapshot metrics() const = 0;
};

}  // namespace tokenbatch
