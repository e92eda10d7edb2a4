// Property tests: random workloads (sizes, arrival gaps, priorities, deadlines,
// cancellations, worker counts, shrinking budgets) are run through the Scheduler
// by a single-threaded discrete-event loop on a manual clock. After every
// decision the loop checks the batch against its own shadow copy of the queue.
// With kLengthAware and anchor_slack_per_token > 0 the shadow's anchor is the
// earliest virtual deadline (arrival + slack × tokens), and the batch-count bound
// counts, besides the requests queued ahead, those arriving later with an earlier
// virtual deadline (the documented "FIFO bound plus the request's own slack").
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "tokenbatch/core/errors.h"
#include "tokenbatch/core/scheduler.h"

namespace tokenbatch {
namespace {

using std::chrono::microseconds;

struct Arrival {
  RequestSpec spec;
  std::optional<TimePoint> cancel_at;
};

struct Outcome {
  int dispatched = 0, expired = 0, cancelled = 0, rejected = 0;
  [[nodiscard]] int total() const { return dispatched + expired + cancelled + rejected; }
};

void RunWorkload(const SchedulerOptions& o, const std::vector<Arrival>& arrivals, int workers,
                 const std::vector<int>& budget_percent) {
  auto created = Scheduler::Create(o);
  RC_ASSERT(created.ok());
  Scheduler& s = **created;
  std::map<RequestId, Outcome> outcomes;
  std::map<RequestId, std::pair<RequestSpec, std::uint64_t>> shadow;  // queued: spec, seq
  // For the batch-count bound: requests queued ahead at arrival, batches so far.
  std::map<RequestId, std::pair<std::size_t, std::size_t>> ahead_at_arrival;
  // The anchor order: (virtual deadline, seq); the virtual deadline is the
  // arrival unless the length-aware anchor has a slack.
  const Duration slack = o.policy == PackingPolicy::kLengthAware ? o.anchor_slack_per_token : Duration::zero();
  auto anchor_key = [&](const RequestSpec& spec, std::uint64_t seq) {
    return std::pair(spec.arrival + slack * spec.tokens, seq);
  };
  std::vector<std::pair<RequestId, std::pair<TimePoint, std::uint64_t>>> accepted;  // enqueue order
  std::size_t batches = 0;
  bool one_level = true;
  for (const Arrival& a : arrivals) one_level = one_level && a.spec.priority == arrivals.front().spec.priority;
  std::uint64_t seq = 0;
  std::vector<TimePoint> busy_until(workers, TimePoint{});
  std::multimap<TimePoint, RequestId> cancels;
  size_t next_arrival = 0, decisions = 0;
  TimePoint now = arrivals.front().spec.arrival;
  TimePoint wake_at = TimePoint::max();  // earliest wake_at of the idle workers

  for (int guard = 0; guard < 100000; ++guard) {
    for (; next_arrival < arrivals.size() && arrivals[next_arrival].spec.arrival <= now; ++next_arrival) {
      const Arrival& a = arrivals[next_arrival];
      auto out = s.Enqueue(a.spec);
      if (!out.ok()) {
        RC_ASSERT(GetErrorKind(out.status()) == ErrorKind::kQueueFull);
        outcomes[a.spec.id].rejected++;
        continue;
      }
      ahead_at_arrival[a.spec.id] = {shadow.size(), batches};
      accepted.emplace_back(a.spec.id, anchor_key(a.spec, seq));
      shadow[a.spec.id] = {a.spec, seq++};
      if (a.cancel_at) cancels.emplace(*a.cancel_at, a.spec.id);
    }
    while (!cancels.empty() && cancels.begin()->first <= now) {
      const RequestId id = cancels.begin()->second;
      cancels.erase(cancels.begin());
      const bool removed = s.Remove(id);
      RC_ASSERT(removed == (shadow.count(id) == 1));
      if (removed) outcomes[id].cancelled++, shadow.erase(id);
    }
    wake_at = TimePoint::max();
    for (int w = 0; w < workers; ++w) {
      if (busy_until[w] > now) continue;
      const std::int64_t budget =
          std::max<std::int64_t>(1, o.max_batch_tokens * budget_percent[decisions++ % budget_percent.size()] / 100);
      Decision d = s.Next(now, {budget});
      for (RequestId id : d.expired) {
        RC_ASSERT(shadow.count(id) == 1);
        RC_ASSERT(shadow[id].first.deadline.has_value() && *shadow[id].first.deadline < now);
        outcomes[id].expired++;
        shadow.erase(id);
      }
      // The oldest request of the highest priority level still queued (its
      // arrival starts the max_wait clock) and the anchor (the same, or the
      // earliest virtual deadline).
      const std::pair<RequestSpec, std::uint64_t>* oldest = nullptr;
      const std::pair<RequestSpec, std::uint64_t>* anchor = nullptr;
      for (const auto& [id, entry] : shadow) {
        const bool higher = oldest && entry.first.priority > oldest->first.priority;
        const bool same = oldest && entry.first.priority == oldest->first.priority;
        if (!oldest || higher ||
            (same && std::tie(entry.first.arrival, entry.second) < std::tie(oldest->first.arrival, oldest->second))) {
          oldest = &entry;
        }
        if (!anchor || higher ||
            (same && anchor_key(entry.first, entry.second) < anchor_key(anchor->first, anchor->second))) {
          anchor = &entry;
        }
      }
      const bool anchor_due = oldest && now >= oldest->first.arrival + o.max_wait;
      if (d.batch.empty()) {
        RC_ASSERT(!anchor_due);  // no request waits past max_wait while a worker is free
        RC_ASSERT(!anchor || (d.wake_at && *d.wake_at > now));
        if (d.wake_at && *d.wake_at < wake_at) wake_at = *d.wake_at;
        break;
      }
      const bool has_anchor = std::count(d.batch.begin(), d.batch.end(), anchor->first.id) == 1;
      if (o.policy != PackingPolicy::kBucketed || anchor_due) RC_ASSERT(has_anchor);
      RC_ASSERT(static_cast<std::int64_t>(d.batch.size()) <= o.max_batch_size);
      ++batches;
      BatchShape shape;
      for (RequestId id : d.batch) {
        // fifo and length_aware: dispatched within k+1 batches of arrival, k = the
        // requests queued ahead of it plus those enqueued after it with an earlier
        // virtual deadline (none when the slack is 0). One priority level;
        // expiries and cancellations only help.
        if (one_level && o.policy != PackingPolicy::kBucketed) {
          const auto [ahead, batches_before] = ahead_at_arrival[id];
          std::size_t overtaking = 0;
          const auto self = std::find_if(accepted.begin(), accepted.end(), [id](const auto& e) { return e.first == id; });
          RC_ASSERT(self != accepted.end());
          for (auto later = std::next(self); later != accepted.end(); ++later) {
            if (later->second < self->second) ++overtaking;
          }
          RC_ASSERT(batches - batches_before <= ahead + overtaking + 1);
          if (slack == Duration::zero()) RC_ASSERT(overtaking == 0u);
        }
        RC_ASSERT(shadow.count(id) == 1);  // queued, not yet dispatched, cancelled or expired
        const RequestSpec& spec = shadow[id].first;
        RC_ASSERT(!spec.deadline || *spec.deadline >= now);
        shape = shape.With(spec.tokens);
        outcomes[id].dispatched++;
        shadow.erase(id);
      }
      RC_ASSERT(d.cost == o.cost_model.Cost(shape));
      if (o.policy == PackingPolicy::kLengthAware) {
        RC_ASSERT(shape.padding_efficiency() >= o.length_aware_min_padding_efficiency || d.batch.size() == 1);
      }
      RC_ASSERT(d.cost <= budget || d.batch.size() == 1);
      busy_until[w] = now + microseconds(1 + d.cost / 16);
    }
    // Advance to the next event.
    std::optional<TimePoint> next;
    auto consider = [&](TimePoint t) { if (t > now && (!next || t < *next)) next = t; };
    if (next_arrival < arrivals.size()) consider(arrivals[next_arrival].spec.arrival);
    if (!cancels.empty()) consider(cancels.begin()->first);
    for (TimePoint t : busy_until) consider(t);
    if (wake_at != TimePoint::max()) consider(wake_at);
    if (!next) break;
    now = *next;
  }
  RC_ASSERT(shadow.empty());
  RC_ASSERT(s.queued_requests() == 0u);
  RC_ASSERT(outcomes.size() == arrivals.size());
  for (const auto& [id, outcome] : outcomes) RC_ASSERT(outcome.total() == 1);
}

void RandomWorkload(int priorities) {
  SchedulerOptions o;
  o.policy = *rc::gen::element(PackingPolicy::kFifo, PackingPolicy::kBucketed, PackingPolicy::kLengthAware);
  o.cost_model = *rc::gen::element(CostModel::Sum(), CostModel::Padded());
  o.max_batch_tokens = *rc::gen::inRange<std::int64_t>(64, 5000);
  o.max_batch_size = *rc::gen::inRange<std::int64_t>(1, 65);
  o.max_wait = microseconds(*rc::gen::inRange(0, 5000));
  o.early_dispatch_fraction = *rc::gen::element(0.5, 0.9, 1.0);
  o.max_queue_size = *rc::gen::element<std::size_t>(0, 8, 64);
  o.length_aware_lookahead = *rc::gen::inRange<std::int64_t>(1, 600);
  // 0 (the FIFO anchor) or a slack that lets short requests overtake long ones
  // within the generated arrival gaps (0-800 µs) and lengths (1-5000 tokens).
  o.anchor_slack_per_token = std::chrono::nanoseconds(*rc::gen::element(0, 0, 100, 1000, 10000, 100000));
  o.length_aware_min_padding_efficiency = *rc::gen::element(0.0, 0.5, 0.85, 0.95);
  const int workers = *rc::gen::inRange(1, 4);
  const auto budget_percent = *rc::gen::nonEmpty(rc::gen::container<std::vector<int>>(rc::gen::inRange(10, 101)));
  const int n = *rc::gen::inRange(1, 250);
  std::vector<Arrival> arrivals;
  TimePoint t = TimePoint{} + std::chrono::seconds(1);
  for (int i = 0; i < n; ++i) {
    t += microseconds(*rc::gen::inRange(0, 800));
    Arrival a;
    a.spec.id = static_cast<RequestId>(i + 1);
    a.spec.tokens = *rc::gen::inRange<std::int64_t>(1, o.cost_model.MaxTokensWithin(o.max_batch_tokens) + 1);
    a.spec.arrival = t;
    a.spec.priority = *rc::gen::inRange(0, priorities);
    if (*rc::gen::inRange(0, 5) == 0) a.spec.deadline = t + microseconds(*rc::gen::inRange(0, 3000));
    if (*rc::gen::inRange(0, 8) == 0) a.cancel_at = t + microseconds(*rc::gen::inRange(0, 3000));
    arrivals.push_back(a);
  }
  RunWorkload(o, arrivals, workers, budget_percent);
}

RC_GTEST_PROP(SchedulerPropertyTest, EveryRequestResolvedOnceWithinLimitsAndBounds, ()) { RandomWorkload(3); }

RC_GTEST_PROP(SchedulerPropertyTest, OneLevelMeetsTheBatchCountBound, ()) { RandomWorkload(1); }

}  // namespace
}  // namespace tokenbatch
