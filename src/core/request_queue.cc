#include "core/request_queue.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::internal {
namespace {

template <typename Map>
void EraseKey(Map& map, const typename Map::key_type& key) {
  if (auto it = map.find(key); it != map.end()) map.erase(it);
}
void EraseKey(ArrivalOrder& order, const ArrivalKey& key) { order.erase(key); }


// Orders RunHead entries for std::push_heap/pop_heap as a min-heap.
bool LaterDeadline(const PriorityLevel::RunHead& a, const PriorityLevel::RunHead& b) {
  return b.virtual_deadline < a.virtual_deadline;
}
}  // namespace

ArrivalKey VirtualDeadlineKey(const LengthKey& key, Duration slack_per_token) {
  // tokens <= max_input_tokens, so the product only overflows for absurd slacks.
  const Duration::rep per_token = slack_per_token.count();
  if (per_token > 0 && key.tokens > std::numeric_limits<Duration::rep>::max() / per_token) {
    return {TimePoint::max(), key.seq};
  }
  const Duration slack(per_token * key.tokens);
  return {key.arrival > TimePoint::max() - slack ? TimePoint::max() : key.arrival + slack, key.seq};
}

std::pair<ArrivalKey, Slot> PriorityLevel::anchor() const {
  while (!run_heads.empty()) {
    RunHead& top = run_heads.front();
    const auto head = by_length.Head(top.head.tokens);
    if (head && head->first == top.head) {
      return {ArrivalKey{top.head.arrival, top.head.seq}, Slot{head->second, top.head.tokens}};
    }
    // Stale: re-key it to its run's current head (later, so it sinks), or drop
    // it if the run is gone.
    std::pop_heap(run_heads.begin(), run_heads.end(), LaterDeadline);
    if (head) {
      run_heads.back() = {VirtualDeadlineKey(head->first, slack_per_token), head->first};
      std::push_heap(run_heads.begin(), run_heads.end(), LaterDeadline);
    } else {
      run_heads.pop_back();
    }
  }
  return oldest();
}

RequestQueue::RequestQueue(std::vector<std::int64_t> bucket_bounds, bool index_buckets,
                           Duration slack_per_token)
    : bucket_bounds_(std::move(bucket_bounds)), index_buckets_(index_buckets),
      slack_per_token_(slack_per_token) {}

void RequestQueue::UpdateRunHeads(PriorityLevel& level, const LengthRuns::HeadChange& change) const {
  // Only a new run, or a late arrival that became its run's head, can lower a
  // run's key; a head that moves on is re-keyed lazily by anchor().
  if (slack_per_token_ <= Duration::zero() || !change.new_head) return;
  if (change.old_head && !(*change.new_head < *change.old_head)) return;
  std::vector<PriorityLevel::RunHead>& heap = level.run_heads;
  if (heap.size() >= 2 * level.by_length.runs() + 64) {
    // Mostly duplicates or gone runs: rebuild from the live heads.
    heap.clear();
    level.by_length.ForEachHead([&](const LengthKey& k) { heap.push_back({VirtualDeadlineKey(k, slack_per_token_), k}); });
    std::make_heap(heap.begin(), heap.end(), LaterDeadline);
    return;
  }
  heap.push_back({VirtualDeadlineKey(*change.new_head, slack_per_token_), *change.new_head});
  std::push_heap(heap.begin(), heap.end(), LaterDeadline);
}

int RequestQueue::BucketOf(std::int64_t tokens) const {
  // Bounds are inclusive upper bounds: tokens <= bound[i] lands in bucket i.
  return static_cast<int>(std::lower_bound(bucket_bounds_.begin(), bucket_bounds_.end(), tokens) -
                          bucket_bounds_.begin());
}

absl::Status RequestQueue::Add(const RequestSpec& spec) {
  QueuedRequest entry{spec, next_seq_, index_buckets_ ? BucketOf(spec.tokens) : 0};
  auto [it, inserted] = requests_.try_emplace(spec.id, entry);
  if (!inserted) {
    return InvalidArgumentError(absl::StrCat("request id ", spec.id, " is already queued"));
  }
  ++next_seq_;
  const QueuedRequest& r = it->second;
  auto [level_it, new_level] = levels_.try_emplace(spec.priority);
  PriorityLevel& level = level_it->second;
  if (new_level) level.slack_per_token = slack_per_token_;
  const Slot slot{spec.id, spec.tokens};
  level.by_arrival.emplace(ArrivalKeyOf(r), slot);
  UpdateRunHeads(level, level.by_length.emplace(LengthKeyOf(r), spec.id));
  if (index_buckets_) level.by_bucket[r.bucket].emplace(ArrivalKeyOf(r), slot);
  level.sum_tokens += spec.tokens;
  if (spec.deadline) deadlines_.emplace(ArrivalKey{*spec.deadline, r.seq}, spec.id);
  tokens_ += spec.tokens;
  return absl::OkStatus();
}

std::optional<RequestSpec> RequestQueue::Remove(RequestId id) {
  auto it = requests_.find(id);
  if (it == requests_.end()) return std::nullopt;
  const QueuedRequest& r = it->second;
  auto level_it = levels_.find(r.spec.priority);
  PriorityLevel& level = level_it->second;
  // find + erase(iterator): erase(key) on a btree map is equal_range + erase_range,
  // two descents instead of one.
  EraseKey(level.by_arrival, ArrivalKeyOf(r));
  LengthRuns::HeadChange heads;
  level.by_length.erase(LengthKeyOf(r), &heads);
  UpdateRunHeads(level, heads);
  if (index_buckets_) {
    auto bucket_it = level.by_bucket.find(r.bucket);
    EraseKey(bucket_it->second, ArrivalKeyOf(r));
    if (bucket_it->second.empty()) level.by_bucket.erase(bucket_it);
  }
  level.sum_tokens -= r.spec.tokens;
  if (level.empty()) levels_.erase(level_it);
  if (r.spec.deadline) EraseKey(deadlines_, ArrivalKey{*r.spec.deadline, r.seq});
  tokens_ -= r.spec.tokens;
  RequestSpec spec = r.spec;
  requests_.erase(it);
  return spec;
}

std::vector<RequestId> RequestQueue::PopExpired(TimePoint now) {
  std::vector<RequestId> expired;
  while (!deadlines_.empty() && deadlines_.begin()->first.arrival < now) {
    const RequestId id = deadlines_.begin()->second;
    Remove(id);  // also erases the deadline entry
    expired.push_back(id);
  }
  return expired;
}

const PriorityLevel* RequestQueue::TopLevel() const {
  return levels_.empty() ? nullptr : &levels_.begin()->second;
}

int RequestQueue::TopPriority() const { return levels_.begin()->first; }

std::optional<TimePoint> RequestQueue::EarliestDeadline() const {
  if (deadlines_.empty()) return std::nullopt;
  return deadlines_.begin()->first.arrival;
}

}  // namespace tokenbatch::internal
