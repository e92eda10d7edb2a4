#include "tokenbatch/core/scheduler.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/adaptive_wait.h"
#include "core/answered_returns.h"
#include "core/packing.h"
#include "core/request_queue.h"
#include "tokenbatch/core/admission.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch {

struct Scheduler::State {
  explicit State(const SchedulerOptions& o)
      : options(o),
        max_input_tokens(EffectiveMaxInputTokens(o)),
        queue(o.bucket_bounds, o.policy == PackingPolicy::kBucketed,
              o.policy == PackingPolicy::kLengthAware ? o.anchor_slack_per_token : Duration::zero()),
        last_budget(o.max_batch_tokens),
        arrivals(o.arrival_rate_window),
        returns(o.max_wait) {}

  const SchedulerOptions options;
  const std::int64_t max_input_tokens;
  internal::RequestQueue queue;
  // The budget of the latest Next(); Enqueue's wake hint compares against it.
  std::int64_t last_budget;
  // adaptive_wait: the arrivals' rate, fed by Enqueue and Admit.
  internal::ArrivalRate arrivals;
  // adaptive_wait: the answered clients' returns, fed by OnAnswered and arrivals.
  internal::AnsweredReturns returns;
  // The adaptive window's hold decided by the latest Next(), if it held one:
  // the arrivals that may end it wake the worker.
  std::optional<AdaptiveHold> hold;
};

namespace {

using internal::PackResult;

// t + d, saturating at TimePoint::max() (callers use max() as "never").
TimePoint SaturatingAdd(TimePoint t, Duration d) {
  return t > TimePoint::max() - d ? TimePoint::max() : t + d;
}

// Why `pack` is ready to go without waiting for more requests (kNone: it is not).
DispatchReason FillReason(const PackResult& pack, const SchedulerOptions& o, std::int64_t budget) {
  if (pack.size_full) return DispatchReason::kMaxBatchSize;
  if (pack.budget_full) return DispatchReason::kBudgetFull;
  if (static_cast<double>(pack.cost) >= o.early_dispatch_fraction * static_cast<double>(budget)) {
    return DispatchReason::kEarlyDispatch;
  }
  return DispatchReason::kNone;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Scheduler>> Scheduler::Create(const SchedulerOptions& options) {
  if (absl::Status s = Validate(options); !s.ok()) return s;
  return std::unique_ptr<Scheduler>(new Scheduler(std::make_unique<State>(options)));
}

Scheduler::Scheduler(std::unique_ptr<State> state) : state_(std::move(state)) {}
Scheduler::~Scheduler() = default;

const SchedulerOptions& Scheduler::options() const { return state_->options; }
std::size_t Scheduler::queued_requests() const { return state_->queue.size(); }
std::int64_t Scheduler::queued_tokens() const { return state_->queue.tokens(); }

absl::Status Scheduler::CheckCapacity(std::size_t requests, std::int64_t tokens) const {
  return CheckQueueCapacity(state_->options, state_->queue.size(), state_->queue.tokens(), requests, tokens);
}

absl::Status Scheduler::CheckAdmissible(const RequestSpec& spec) const {
  const State& s = *state_;
  if (spec.tokens < 1) {
    return InvalidArgumentError(absl::StrCat("request must have >= 1 token, got ", spec.tokens));
  }
  if (spec.tokens > s.max_input_tokens) {
    return OversizeError(absl::StrCat("request of ", spec.tokens, " tokens exceeds max_input_tokens ",
                                      s.max_input_tokens));
  }
  return CheckCapacity(1, spec.tokens);
}

absl::Status Scheduler::Admit(const RequestSpec& spec) {
  if (absl::Status ok = CheckAdmissible(spec); !ok.ok()) return ok;
  if (absl::Status added = state_->queue.Add(spec); !added.ok()) return added;
  if (state_->options.adaptive_wait) {
    state_->arrivals.OnArrival(spec.arrival);
    state_->returns.OnArrival(spec.arrival);
  }
  return absl::OkStatus();
}

absl::StatusOr<EnqueueOutcome> Scheduler::Enqueue(const RequestSpec& spec) {
  State& s = *state_;
  const SchedulerOptions& o = s.options;
  if (absl::Status ok = CheckAdmissible(spec); !ok.ok()) return ok;

  const bool was_empty = s.queue.empty();
  const bool new_top = was_empty || spec.priority > s.queue.TopPriority();
  // An arrival older than the current anchor moves the max_wait wake time earlier.
  const bool new_anchor = !was_empty && spec.priority == s.queue.TopPriority() &&
                          spec.arrival < s.queue.TopLevel()->oldest().first.arrival;
  const auto old_deadline = s.queue.EarliestDeadline();
  if (absl::Status added = s.queue.Add(spec); !added.ok()) return added;
  if (o.adaptive_wait) {
    s.arrivals.OnArrival(spec.arrival);
    s.returns.OnArrival(spec.arrival);
  }

  EnqueueOutcome out;
  const bool earlier_deadline = spec.deadline && (!old_deadline || *spec.deadline < *old_deadline);
  // A batch can only become ready by filling if the whole level would reach the
  // early-dispatch threshold or max_batch_size: every batch of the level is a
  // subset of it and costs no more (costs are monotone in B, Lmax and Σ). A hold
  // of the adaptive window may end sooner (AdaptiveHold::MayEnd).
  const internal::PriorityLevel& level = *s.queue.TopLevel();
  const std::int64_t level_size = static_cast<std::int64_t>(level.by_arrival.size());
  const std::int64_t level_cost =
      o.cost_model.Cost(BatchShape{level_size, level.max_tokens(), level.sum_tokens});
  const bool may_fill =
      spec.priority == s.queue.TopPriority() &&
      (level_size >= o.max_batch_size ||
       static_cast<double>(level_cost) >= o.early_dispatch_fraction * static_cast<double>(s.last_budget) ||
       (s.hold && s.hold->MayEnd(level_size, level_cost)));
  out.wake_worker = new_top || new_anchor || earlier_deadline || may_fill || o.max_wait <= Duration::zero();
  return out;
}

ArrivalWakeRule Scheduler::WakeRuleForArrivals() const {
  const State& s = *state_;
  const SchedulerOptions& o = s.options;
  if (s.queue.empty() || o.max_wait <= Duration::zero()) return ArrivalWakeRule::EmptyQueue();
  const internal::PriorityLevel& level = *s.queue.TopLevel();
  const ArrivalWakeRule::TopLevel top{
      s.queue.TopPriority(),
      BatchShape{static_cast<std::int64_t>(level.by_arrival.size()), level.max_tokens(), level.sum_tokens},
      level.oldest().first.arrival};
  return ArrivalWakeRule(&o.cost_model, top, o.max_batch_size,
                         o.early_dispatch_fraction * static_cast<double>(s.last_budget), s.hold);
}

void Scheduler::OnAnswered(TimePoint now, std::int64_t count) {
  if (state_->options.adaptive_wait) state_->returns.OnAnswered(now, count);
}

bool Scheduler::Remove(RequestId id) { return state_->queue.Remove(id).has_value(); }

Decision Scheduler::Next(TimePoint now, const DecisionContext& context) {
  State& s = *state_;
  const SchedulerOptions& o = s.options;
  Decision d;
  // A hold lasts until the next decision: this one makes its own (or none, if
  // the queue has emptied), so that a stale level size never gates arrivals.
  s.hold.reset();
  d.expired = s.queue.PopExpired(now);
  const std::int64_t budget = std::max<std::int64_t>(1, context.budget);
  s.last_budget = budget;

  const internal::PriorityLevel* level = s.queue.TopLevel();
  if (level == nullptr) return d;
  // The oldest request sets the max_wait clock (and the bucket's anchor); the
  // length-aware anchor may instead be the earliest virtual deadline.
  const auto& [anchor_key, anchor] = level->oldest();
  const int anchor_bucket = s.queue.BucketOf(anchor.tokens);
  const internal::BatchLimits limits{&o.cost_model, budget, o.max_batch_size,
                                     o.length_aware_min_padding_efficiency, context.memory_model,
                                     std::max<std::int64_t>(0, context.memory_allowance)};
  const bool memory_limited = context.memory_model != nullptr;

  PackResult pack;
  switch (o.policy) {
    case PackingPolicy::kFifo:
      pack = internal::PackFifo(*level, limits);
      break;
    case PackingPolicy::kBucketed:
      pack = internal::PackBucket(level->by_bucket.at(anchor_bucket), limits);
      break;
    case PackingPolicy::kLengthAware:
      pack = internal::PackLengthAware(*level, limits, o.length_aware_lookahead);
      break;
  }
  if (memory_limited && pack.anchor_memory_bytes > limits.memory_allowance) {
    // Only memory another batch gives back can start this one: no waiting for
    // company or max_wait applies until then, only the deadlines.
    d.memory_needed = pack.anchor_memory_bytes;
    if (const auto deadline = s.queue.EarliestDeadline()) d.wake_at = SaturatingAdd(*deadline, Duration(1));
    return d;
  }
  const TimePoint anchor_due = SaturatingAdd(anchor_key.arrival, o.max_wait);
  DispatchReason reason = FillReason(pack, o, budget);
  if (reason == DispatchReason::kNone && now >= anchor_due) reason = DispatchReason::kMaxWait;
  if (reason == DispatchReason::kNone && context.drain) reason = DispatchReason::kDrain;
  std::optional<internal::HoldDecision> hold;
  if ((reason == DispatchReason::kNone || reason == DispatchReason::kMaxWait) && o.adaptive_wait &&
      context.latency_model != nullptr && internal::UsableModel(*context.latency_model)) {
    const BatchLatencyModel& model = *context.latency_model;
    const auto size = static_cast<std::int64_t>(pack.ids.size());
    // The rate rule only within max_wait; the returns rule also past it, until
    // the latest answer's max_wait (src/core/adaptive_wait.h).
    if (reason == DispatchReason::kNone) {
      hold = internal::DecideHold(model, s.arrivals, size, pack.cost, now, anchor_due);
    }
    if (!hold || !hold->hold) {
      if (const auto expected = s.returns.ExpectedAt(now)) {
        const TimePoint latest = std::max(anchor_due, SaturatingAdd(expected->answered, o.max_wait));
        hold = internal::DecideReturnHold(model, expected->requests, expected->by, size, now, latest);
      }
    }
    if (hold && hold->hold) {
      reason = DispatchReason::kNone;
    } else if (reason == DispatchReason::kNone) {
      reason = DispatchReason::kNoGainInWaiting;
    }
  }
  if (reason == DispatchReason::kNone && o.policy == PackingPolicy::kBucketed) {
    // The anchor's bucket waits for company; a full batch of another bucket may go.
    for (const auto& [bucket, order] : level->by_bucket) {
      if (bucket == anchor_bucket) continue;
      PackResult other = internal::PackBucket(order, limits);
      if (other.cost > budget) continue;  // only the anchor may exceed a shrunk budget
      if (memory_limited && other.anchor_memory_bytes > limits.memory_allowance) continue;
      if (DispatchReason r = FillReason(other, o, budget); r != DispatchReason::kNone) {
        pack = std::move(other);
        reason = r;
        break;
      }
    }
  }

  if (reason == DispatchReason::kNone) {
    d.wake_at = anchor_due;
    if (hold && hold->hold) {
      d.wake_at = hold->until;
      const std::int64_t level_size = static_cast<std::int64_t>(level->by_arrival.size());
      s.hold = AdaptiveHold{hold->rate_per_us,
                            context.latency_model->fixed_us,
                            context.latency_model->us_per_cost,
                            static_cast<std::int64_t>(pack.ids.size()),
                            pack.cost,
                            level_size,
                            o.cost_model.Cost(BatchShape{level_size, level->max_tokens(), level->sum_tokens}),
                            hold->awaited_arrivals};
    }
  } else {
    for (RequestId id : pack.ids) s.queue.Remove(id);
    d.batch = std::move(pack.ids);
    d.shape = pack.shape;
    d.cost = pack.cost;
    d.memory_bytes = pack.memory_bytes;
    d.reason = reason;
    if (!s.queue.empty()) d.wake_at = now;  // more may be ready: ask again at once
  }
  if (const auto deadline = s.queue.EarliestDeadline()) {
    // Deadlines expire strictly after they pass (PopExpired uses deadline < now).
    const TimePoint expiry = SaturatingAdd(*deadline, Duration(1));
    if (!d.wake_at || expiry < *d.wake_at) d.wake_at = expiry;
  }
  return d;
}

}  // namespace tokenbatch
