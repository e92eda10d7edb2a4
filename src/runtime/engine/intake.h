// Intake: the batch engine's submit side and the record slots.
//
// Submit does not touch the policy core: it takes a slot in the RequestSlab,
// stamps it and appends its id to the intake list under the intake's own small
// lock, and a worker moves the intake into the Scheduler before each decision
// (TakeAll). So submitting threads and workers do not share the core's indexes,
// and a submit costs a lock, a few stores and, rarely, a wake-up.
//
// The intake also holds what submitters need to decide alone: the queue size last
// published by the engine (for backpressure), and the wake rule of the sleeping
// workers (ArrivalWakeRule, the core's own rule applied to a snapshot of the
// queue), so that a submit wakes a worker only when the arrival can change its
// decision.
//
// Thread-safety: methods take the intake lock inside. Those whose name ends in
// Locked also require the engine lock (`engine_mu`), and so do Get,
// IsLiveRequest and QueuedRequests, which read records the engine lock guards
// once published (engine_record.h); Submit, WakeOne, WakeFirst, Signal, NotifyOne, WakeAll, Close
// and counts need no other lock. Lock order: engine lock, then intake lock.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/engine/engine_record.h"
#include "tokenbatch/core/scheduler.h"
#include "tokenbatch/runtime/batch_engine.h"
#include "tokenbatch/runtime/mutex.h"
#include "tokenbatch/runtime/request_slab.h"

namespace tokenbatch::engine {

class Intake {
 public:
  // `options` are the scheduler's (capacity limits); `client` is told when the
  // slab grows. Both must outlive the intake.
  Intake(const SchedulerOptions& options, EngineClient& client) : options_(options), client_(client) {}

  // Queues a request of `tokens` tokens at `now` (the common case: no plan, no
  // deadline): allocates its record, stamps it, calls `fill(id)` under the lock
  // and appends it. Errors (nothing allocated, fill not called): ShuttingDown,
  // QueueFull. Sets *wake when a sleeping worker must be woken (WakeOne).
  [[nodiscard]] absl::StatusOr<RequestId> Submit(std::int64_t tokens, int priority, TimePoint now,
                                                 absl::FunctionRef<void(RequestId)> fill, bool* wake);

  // Allocates the records of a planned request under the engine lock: the request,
  // plus one per window when `windows` has more than one. Counts them as queued
  // (they reach the Scheduler before the engine lock is released) and replays them
  // against the sleepers' wake rule. Returns the request id; `scheduled` gets the
  // ids to schedule (the request itself, or its windows). Records are stamped by
  // the caller. Errors (nothing allocated): ShuttingDown, QueueFull.
  [[nodiscard]] absl::StatusOr<RequestId> AllocatePlannedLocked(Mutex& engine_mu, std::span<const TokenWindow> windows,
                                                                int priority, TimePoint now,
                                                                std::vector<RequestId>& scheduled, bool* wake)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(engine_mu);

  // Moves the intake into `out` (swapped: `out` must be empty) and publishes the
  // Scheduler's counts plus these settling requests (queued until the caller has
  // admitted them), releasing the `released` slots (then cleared).
  void TakeAllLocked(Mutex& engine_mu, const Scheduler& scheduler, std::vector<RequestId>& released,
                     std::vector<RequestId>& out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(engine_mu);
  // Publishes the Scheduler's counts and releases `released` (then cleared), then
  // refreshes the sleepers' wake rule from the new queue, replaying the intake
  // against it. Returns true if a sleeper must be woken (WakeOne).
  bool PublishLocked(Mutex& engine_mu, const Scheduler& scheduler, std::vector<RequestId>& released)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(engine_mu);

  // Blocks the calling worker until `wake_at` (forever if unset) or a wake-up,
  // with the engine lock released meanwhile; returns at once if the intake is not
  // empty or a wake-up is pending. Arrivals meanwhile are judged against a
  // snapshot of `scheduler`'s queue taken here. `first_worker`: the caller is
  // worker 0, which every wake-up prefers (WakeOne) and WakeFirst reaches.
  void SleepLocked(Mutex& engine_mu, const Scheduler& scheduler, std::optional<TimePoint> wake_at,
                   bool first_worker = false) ABSL_EXCLUSIVE_LOCKS_REQUIRED(engine_mu);
  // Wakes one sleeping worker, if any: worker 0 if it sleeps, so that a lone
  // batch lands on the one worker that runs wide forwards (worker_loop.cc).
  void WakeOne() ABSL_LOCKS_EXCLUDED(mu_);
  // Wakes worker 0, now or at its next sleep.
  void WakeFirst() ABSL_LOCKS_EXCLUDED(mu_);
  // Wakes one sleeping worker, or else the next one that goes to sleep: for a
  // change no worker of this engine made (memory another model's batch gave
  // back), which can come between a worker's decision and its sleep.
  void Signal() ABSL_LOCKS_EXCLUDED(mu_);
  // Wakes a sleeper for a Submit that set *wake, as WakeOne chooses it.
  void NotifyOne() ABSL_LOCKS_EXCLUDED(mu_);
  // Wakes every worker, now and at its next sleep: they are stopping.
  void WakeAll() ABSL_LOCKS_EXCLUDED(mu_);

  // Refuses every later Submit with ShuttingDown.
  void Close() ABSL_LOCKS_EXCLUDED(mu_);
  // Whether `id` is a live request (not a window), not yet resolved. Engine lock held.
  [[nodiscard]] bool IsLiveRequest(RequestId id) ABSL_LOCKS_EXCLUDED(mu_);
  // The ids of requests with a record still queued (each once per queued record).
  // Engine lock held, and only after Close, when no submit can stamp a slot.
  [[nodiscard]] std::vector<RequestId> QueuedRequests() ABSL_LOCKS_EXCLUDED(mu_);

  // A published record (the caller holds the engine lock, or owns the slot).
  [[nodiscard]] EngineRecord& Get(RequestId id) { return slab_.Get(id); }

  struct Counts {
    std::size_t requests = 0;  // in the intake, not yet taken
    std::int64_t tokens = 0;
    std::uint64_t submitted = 0;  // accepted since creation
    int sleeping_workers = 0;     // in SleepLocked now
  };
  [[nodiscard]] Counts counts() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  absl::Status CheckAcceptingLocked(std::size_t requests, std::int64_t tokens) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::optional<RequestId> AllocateLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The condition variable of the sleeper a wake-up goes to: worker 0's while it
  // sleeps (and worker 0 is then no longer counted as a sleeper to prefer).
  std::condition_variable& ChooseSleeperLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PublishCountsLocked(const Scheduler& scheduler, std::size_t settling_requests, std::int64_t settling_tokens,
                           std::vector<RequestId>& released) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const SchedulerOptions& options_;
  EngineClient& client_;
  mutable Mutex mu_;
  std::condition_variable wake_cv_;   // sleeping workers other than worker 0 wait on it with mu_
  std::condition_variable first_cv_;  // worker 0 waits on it with mu_
  RequestSlab<EngineRecord> slab_;   // slot bookkeeping guarded by mu_
  std::vector<RequestId> intake_ ABSL_GUARDED_BY(mu_);
  std::int64_t intake_tokens_ ABSL_GUARDED_BY(mu_) = 0;
  std::size_t scheduled_requests_ ABSL_GUARDED_BY(mu_) = 0;  // in the Scheduler, as last published
  std::int64_t scheduled_tokens_ ABSL_GUARDED_BY(mu_) = 0;
  std::uint64_t submitted_ ABSL_GUARDED_BY(mu_) = 0;
  bool accepting_ ABSL_GUARDED_BY(mu_) = true;
  int sleeping_workers_ ABSL_GUARDED_BY(mu_) = 0;
  bool wake_signalled_ ABSL_GUARDED_BY(mu_) = false;
  bool first_sleeping_ ABSL_GUARDED_BY(mu_) = false;    // worker 0 waits on first_cv_, not yet chosen
  bool first_signalled_ ABSL_GUARDED_BY(mu_) = false;   // WakeFirst for worker 0's next sleep
  ArrivalWakeRule wake_rule_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tokenbatch::engine
