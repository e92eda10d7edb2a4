// RequestQueue: the Scheduler's indexes over queued request metadata (internal).
//
// Requests are grouped by priority level. Each level keeps these orderings:
//   by arrival (oldest first)           -> the anchor, fifo packing, max_wait
//                                          (ArrivalOrder: a ring plus late btree)
//   by length (tokens, then arrival)    -> length-aware packing, nearest first
//                                          (LengthRuns: a btree of per-length runs)
//   per length bucket, by arrival       -> bucketed packing (ArrivalOrder each)
//   by virtual deadline, run heads only -> the length-aware anchor when
//     (arrival + slack_per_token·tokens)   anchor_slack_per_token > 0 (a heap)
// plus a global deadline index (a btree) and an id -> request hash map. Add,
// remove and "find neighbours" are O(log n) or better. Not thread-safe (the
// Scheduler's driver serialises access).
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "core/arrival_order.h"
#include "core/length_runs.h"
#include "core/request_keys.h"
#include "tokenbatch/core/request.h"

namespace tokenbatch::internal {

struct QueuedRequest {
  RequestSpec spec;
  std::uint64_t seq = 0;  // enqueue order, breaks ties between equal arrivals
  int bucket = 0;         // index into bucket_bounds (last + 1 = overflow); 0 unless index_buckets
};

using ArrivalIndex = ArrivalOrder;
using LengthIndex = LengthRuns;

inline ArrivalKey ArrivalKeyOf(const QueuedRequest& r) { return {r.spec.arrival, r.seq}; }
inline LengthKey LengthKeyOf(const QueuedRequest& r) { return {r.spec.tokens, r.spec.arrival, r.seq}; }

// The queued requests of one priority level.
struct PriorityLevel {
  ArrivalIndex by_arrival;
  LengthIndex by_length;
  std::map<int, ArrivalIndex> by_bucket;  // bucket -> arrival order; no empty entries; kBucketed only
  // The length-aware anchor's index: a min-heap of (virtual deadline, seq) with
  // an entry per run of by_length (requests of one length). Within one length,
  // virtual-deadline order is arrival order, so the earliest virtual deadline is
  // always some run's head (its oldest request). Entries are updated lazily: a
  // run gets an entry when it is created or when a late arrival becomes its
  // head; when dispatch or cancel moves its head on, its entry keeps the old
  // key, which is a lower bound of the run's true one (heads only get later).
  // anchor() fixes the top until it is exact (re-keys it to the run's current
  // head, or drops it if the run is gone), so a batch that takes 17 requests
  // off a run costs one re-key, not 17 index updates. Rebuilt from the runs
  // (O(d)) once entries outnumber twice the runs, so its size stays under
  // 2 × (peak distinct lengths) + 65. Only with a virtual-deadline anchor
  // (RequestQueue's slack_per_token > 0), else empty. Mutable: anchor() fixes
  // it up, which changes no observable state.
  struct RunHead {
    ArrivalKey virtual_deadline;  // (arrival + slack × tokens, seq) of `head`
    LengthKey head;               // the run's head when this key was computed
  };
  Duration slack_per_token{};  // for re-keying in anchor(); set by RequestQueue
  mutable std::vector<RunHead> run_heads;
  std::int64_t sum_tokens = 0;

  [[nodiscard]] bool empty() const { return by_arrival.empty(); }
  // The oldest request: its arrival key and slot.
  [[nodiscard]] const ArrivalIndex::value_type& oldest() const { return *by_arrival.begin(); }
  // The request a length-aware batch is formed around: the earliest virtual
  // deadline when that index is kept (ties: the earlier enqueued), else the
  // oldest. Its arrival key and slot. Requires !empty().
  [[nodiscard]] std::pair<ArrivalKey, Slot> anchor() const;
  [[nodiscard]] std::int64_t max_tokens() const { return by_length.max_tokens(); }
};

// run_heads' key for a request: (arrival + slack_per_token × tokens, saturating
// at TimePoint::max(); seq).
[[nodiscard]] ArrivalKey VirtualDeadlineKey(const LengthKey& key, Duration slack_per_token);

class RequestQueue {
 public:
  // `index_buckets`: keep the per-bucket orderings (only kBucketed reads them).
  // `slack_per_token` > 0: keep the virtual-deadline ordering (the length-aware
  // anchor, see SchedulerOptions::anchor_slack_per_token).
  RequestQueue(std::vector<std::int64_t> bucket_bounds, bool index_buckets,
               Duration slack_per_token = Duration::zero());

  // Adds a request. Errors: InvalidArgument for a duplicate id.
  [[nodiscard]] absl::Status Add(const RequestSpec& spec);
  // Removes a request; nullopt if it is not queued.
  std::optional<RequestSpec> Remove(RequestId id);
  // Removes and returns every request whose deadline is < now.
  std::vector<RequestId> PopExpired(TimePoint now);

  // The highest non-empty priority level; nullptr if the queue is empty.
  [[nodiscard]] const PriorityLevel* TopLevel() const;
  [[nodiscard]] int TopPriority() const;  // requires !empty()
  [[nodiscard]] std::optional<TimePoint> EarliestDeadline() const;
  [[nodiscard]] int BucketOf(std::int64_t tokens) const;

  [[nodiscard]] bool empty() const { return requests_.empty(); }
  [[nodiscard]] std::size_t size() const { return requests_.size(); }
  [[nodiscard]] std::int64_t tokens() const { return tokens_; }

 private:
  // Keeps level.run_heads on the runs' heads after a change to by_length.
  void UpdateRunHeads(PriorityLevel& level, const LengthRuns::HeadChange& change) const;

  std::vector<std::int64_t> bucket_bounds_;
  bool index_buckets_;
  Duration slack_per_token_;
  absl::flat_hash_map<RequestId, QueuedRequest> requests_;
  std::map<int, PriorityLevel, std::greater<int>> levels_;  // highest first; no empty levels
  absl::btree_map<ArrivalKey, RequestId> deadlines_;        // (deadline, seq) -> id
  std::uint64_t next_seq_ = 0;
  std::int64_t tokens_ = 0;
};

}  // namespace tokenbatch::internal
