#include "src/core/request_queue.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::internal {

RequestQueue::RequestQueue(std::vector<std::int64_t> bucket_bounds, bool index_buckets)
    : bucket_bounds_(std::move(bucket_bounds)), index_buckets_(index_buckets) {}

int RequestQueue::BucketOf(std::int64_t tokens) const {
  // Bounds are inclusive upper bounds: tokens <= bound[i] lands in bucket i.
  return static_cast<int>(std::lower_bound(bucket_bounds_.begin(), bucket_bounds_.end(), tokens) -
                          bucket_bounds_.begin());
}

absl::Status RequestQueue::Add(const RequestSpec& spec) {
  QueuedRequest entry{spec, next_seq_, BucketOf(spec.tokens)};
  auto [it, inserted] = requests_.try_emplace(spec.id, entry);
  if (!inserted) {
    return InvalidArgumentError(absl::StrCat("request id ", spec.id, " is already queued"));
  }
  ++next_seq_;
  const QueuedRequest& r = it->second;
  PriorityLevel& level = levels_[spec.priority];
  const Slot slot{spec.id, spec.tokens};
  level.by_arrival.emplace(ArrivalKeyOf(r), slot);
  level.by_length.emplace(LengthKeyOf(r), spec.id);
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
  level.by_arrival.erase(ArrivalKeyOf(r));
  level.by_length.erase(LengthKeyOf(r));
  if (index_buckets_) {
    auto bucket_it = level.by_bucket.find(r.bucket);
    bucket_it->second.erase(ArrivalKeyOf(r));
    if (bucket_it->second.empty()) level.by_bucket.erase(bucket_it);
  }
  level.sum_tokens -= r.spec.tokens;
  if (level.empty()) levels_.erase(level_it);
  if (r.spec.deadline) deadlines_.erase(ArrivalKey{*r.spec.deadline, r.seq});
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
