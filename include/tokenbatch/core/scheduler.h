// Scheduler: the sans-IO token-budget batching policy.
//
// Plain data in, decisions out. The driver (the threaded Batcher, the simulator,
// a test) tells the Scheduler about requests (Enqueue, Remove) and asks it what to
// do now (Next), passing `now` and the effective budget on every call. The
// Scheduler never reads a clock, never sleeps, owns no threads and takes no locks;
// it only keeps the queue of request metadata (ids, token counts, times). Payloads
// stay with the driver.
//
// Decision rule (Next):
//   1. Requests whose deadline is < now leave the queue and are returned in
//      `expired` (resolve them with DeadlineExceeded; never dispatch them).
//   2. The anchor is the oldest request of the highest non-empty priority level
//      (kLengthAware with anchor_slack_per_token > 0: the one with the earliest
//      virtual deadline, arrival + slack × tokens; the max_wait clock in 3 and 4
//      still counts from the oldest). The packing policy
//      (SchedulerOptions::policy) forms a batch around it within the budget and
//      max_batch_size. The anchor is always included, even
//      when an AIMD-shrunk budget is below its own cost (it was admitted against
//      max_batch_tokens and must not starve).
//   3. The batch is dispatched if it is ready: the policy stopped because the next
//      candidate did not fit (budget) or max_batch_size was reached; or cost >=
//      early_dispatch_fraction × budget; or the oldest has waited >= max_wait; or
//      the driver is draining; or (adaptive_wait, with a latency model passed in)
//      waiting longer gains nothing (src/core/adaptive_wait.h). With
//      adaptive_wait, a batch whose anchor has waited max_wait may still be held
//      for the returns of clients answered since it arrived (OnAnswered), at most
//      until max_wait after the latest such answer. (kBucketed may instead
//      dispatch another bucket's ready batch while the anchor's bucket waits for
//      company.)
//   4. Otherwise nothing is dispatched and `wake_at` says when to ask again:
//      the oldest request's arrival + max_wait, the end of the adaptive hold, or
//      an earlier deadline.
//   With a device memory shared by other models (DecisionContext::memory_model),
//   the batch must also fit memory_allowance bytes; an anchor that alone does
//   not is not dispatched, and Decision::memory_needed says what it needs.
//
//   Example (seed note, fifo, sum cost, budget 4096): A 30, B 1800, C 300, D 1200,
//   E 1500 arrive together -> [A B C D] (cost 3330; E would make 4830 > 4096),
//   then [E] after max_wait.
//
// Thread-safety: none. A Scheduler is a plain object; the driver serialises calls
// (the Batcher holds its mutex around them). No method blocks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tokenbatch/core/arrival_wake_rule.h"
#include "tokenbatch/core/batch_latency_model.h"
#include "tokenbatch/core/cost_model.h"
#include "tokenbatch/core/request.h"
#include "tokenbatch/core/scheduler_options.h"

namespace tokenbatch {

// Why a batch was dispatched (for metrics and tests).
enum class DispatchReason {
  kNone,           // nothing dispatched
  kBudgetFull,     // the next candidate would have exceeded the budget
  kMaxBatchSize,   // max_batch_size reached
  kEarlyDispatch,  // cost >= early_dispatch_fraction × budget
  kMaxWait,        // the anchor waited max_wait
  kDrain,          // the driver is draining (shutdown)
  // adaptive_wait: waiting longer would cost the queued requests more than it
  // saves (last, so the values above keep their numbers).
  kNoGainInWaiting,
};

// Per-call inputs of Next().
struct DecisionContext {
  // Effective budget in the cost model's unit; the runtime passes its AIMD value
  // (<= max_batch_tokens). Values < 1 are treated as 1.
  std::int64_t budget = 0;
  // True while shutting down with drain: dispatch whatever is queued, no waiting.
  bool drain = false;
  // The deciding worker's learned batch latency (OnlineLatencyFit::model() once
  // ready()), for SchedulerOptions::adaptive_wait; null (not known yet), or a
  // model with a negative or non-finite term: the fixed max_wait window applies.
  // Read during the call only.
  const BatchLatencyModel* latency_model = nullptr;
  // Set when the batch's device memory is shared with other models' batches
  // (DeviceMemoryBudget): a second limit beside the budget, in bytes under this
  // model (a `memory` cost model, from the model's calibration). The batch's
  // bytes must not exceed memory_allowance, the anchor's included: when the
  // anchor alone needs more, nothing is dispatched (Decision::memory_needed)
  // rather than running out of memory. A batch the allowance cut short is
  // dispatched at once (kBudgetFull): waiting would not make it grow. Null: no
  // such limit. Read during the call only.
  const CostModel* memory_model = nullptr;
  std::int64_t memory_allowance = 0;
};

struct Decision {
  // Request ids of the batch to run now, anchor first; empty if none.
  std::vector<RequestId> batch;
  BatchShape shape;                // of `batch`
  std::int64_t cost = 0;           // of `batch`, in the cost model's unit
  DispatchReason reason = DispatchReason::kNone;
  // Requests removed because their deadline passed; the driver resolves them with
  // DeadlineExceeded.
  std::vector<RequestId> expired;
  // Only meaningful when `batch` is empty: call Next again at this time at the
  // latest (earlier on Enqueue/Remove). Unset: the queue is empty, or (with
  // memory_needed) nothing but more memory can make a batch.
  std::optional<TimePoint> wake_at;
  // With DecisionContext::memory_model: the batch's bytes under it (what the
  // driver holds of the shared memory while the batch runs); 0 without a batch.
  std::int64_t memory_bytes = 0;
  // With DecisionContext::memory_model and no batch: the bytes the anchor alone
  // needs when they exceed memory_allowance (ask again once that much is
  // allowed; wake_at is then only the next deadline's expiry); else 0.
  std::int64_t memory_needed = 0;
};

struct EnqueueOutcome {
  // True if the new request may make a batch ready or moves the next wake time
  // earlier: an idle worker should call Next now. False: the last wake_at stands.
  bool wake_worker = false;
};

class Scheduler {
 public:
  // Errors: InvalidArgument if Validate(options) fails.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Scheduler>> Create(const SchedulerOptions& options);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues one request (already admitted by PlanAdmission, so tokens <=
  // max_input_tokens). On error nothing is queued.
  // Errors: InvalidArgument (tokens < 1, duplicate id); Oversize (tokens >
  // max_input_tokens); QueueFull (max_queue_size or max_queued_tokens reached).
  [[nodiscard]] absl::StatusOr<EnqueueOutcome> Enqueue(const RequestSpec& spec);
  // Enqueue without the wake decision (about 200 instructions less per request),
  // for a driver that calls Next before it would sleep anyway: the Batcher's
  // worker moving its intake into the queue. Same checks and errors as Enqueue.
  [[nodiscard]] absl::Status Admit(const RequestSpec& spec);

  // Whether `requests` more requests with `tokens` tokens in all would fit the
  // queue limits now. Lets a driver queue the windows of a split request all or
  // nothing. Errors: QueueFull naming the limit.
  [[nodiscard]] absl::Status CheckCapacity(std::size_t requests, std::int64_t tokens) const;

  // `count` requests were answered at `now` (a dispatched batch finished and its
  // results go back to the clients). adaptive_wait learns from it when
  // closed-loop clients return (src/core/answered_returns.h); without
  // adaptive_wait it does nothing. A driver that never calls it gets the
  // arrival-rate rule alone. O(1) amortised, O(64) at worst.
  void OnAnswered(TimePoint now, std::int64_t count);

  // Removes a queued request (cancellation). Returns false if it is not queued
  // (already dispatched, expired or unknown).
  bool Remove(RequestId id);

  // The decision at `now`; see the overview. O(batch · log n) plus expiries.
  [[nodiscard]] Decision Next(TimePoint now, const DecisionContext& context);

  // A snapshot of the queue for a driver that buffers arrivals while its workers
  // sleep (see arrival_wake_rule.h): the rule tells, arrival by arrival, when
  // Enqueue would have said wake_worker. Valid until the next Enqueue, Remove or
  // Next; refers to this Scheduler's cost model. O(1).
  [[nodiscard]] ArrivalWakeRule WakeRuleForArrivals() const;

  [[nodiscard]] std::size_t queued_requests() const;
  [[nodiscard]] std::int64_t queued_tokens() const;
  [[nodiscard]] const SchedulerOptions& options() const;

 private:
  struct State;
  explicit Scheduler(std::unique_ptr<State> state);
  // Enqueue's checks: token count, max_input_tokens, queue limits.
  [[nodiscard]] absl::Status CheckAdmissible(const RequestSpec& spec) const;
  std::unique_ptr<State> state_;
};

}  // namespace tokenbatch
