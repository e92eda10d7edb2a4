#include "runtime/engine/record_table.h"

#include "tokenbatch/core/errors.h"

namespace tokenbatch::engine {

void RecordTable::Free(EngineRecord& record) {
  released_.push_back(record.id);
  client_.Clear(record.id);
  // Field by field: cheaper than assigning a fresh record on every request.
  record.id = 0;  // free
  record.parent = 0;
  record.deadline.reset();
  record.split.reset();
}

void RecordTable::TakeScheduled(EngineRecord& record) {
  if (record.stage == Stage::kInFlight) {
    record.stage = Stage::kAbandoned;
    return;
  }
  if (record.stage == Stage::kQueued) scheduler_.Remove(record.id);
  Free(record);
}

void RecordTable::Take(RequestId request) {
  EngineRecord& r = intake_.Get(request);
  if (r.deadline) deadlines_.erase({*r.deadline, request});
  if (!r.split) {
    TakeScheduled(r);
    return;
  }
  for (RequestId child : r.split->children) {
    if (child != 0) TakeScheduled(intake_.Get(child));
  }
  Free(r);
}

void RecordTable::Resolve(RequestId request, absl::Status error, EngineContext& context) {
  recorder_.OnResolved(error);
  context.Resolve(request, std::move(error));
  Take(request);
}

void RecordTable::CompleteBatch(std::span<const RequestId> ids, std::span<const absl::Status> statuses, TimePoint now,
                                EngineContext& context) {
  for (std::size_t i = 0; i < ids.size(); ++i) {
    EngineRecord& r = intake_.Get(ids[i]);  // in-flight records stay live until here
    if (r.stage == Stage::kAbandoned) {     // its request was resolved meanwhile: drop
      Free(r);
      continue;
    }
    r.stage = Stage::kDone;
    const RequestId request_id = r.request_id();
    EngineRecord& request = r.parent != 0 ? intake_.Get(r.parent) : r;
    if (!statuses[i].ok()) {
      Resolve(request_id, statuses[i], context);
      continue;
    }
    if (request.deadline && *request.deadline < now) {
      Resolve(request_id, DeadlineExceededError("deadline passed while the batch ran; result dropped"), context);
      continue;
    }
    if (r.parent == 0) {
      recorder_.OnResolved(absl::OkStatus());
      context.ResolveWithOutput(request_id, i);
      Take(request_id);
      continue;
    }
    SplitWindows& split = *request.split;
    context.StoreWindowOutput(request_id, r.index, i);
    split.children[r.index] = 0;
    Free(r);
    if (--split.remaining > 0) continue;
    // Counted when the merge has run (EngineContext::Fire), outside the lock.
    context.ResolveMerged(request_id, split.windows);
    Take(request_id);
  }
}

bool RecordTable::AddDeadline(TimePoint deadline, RequestId request) {
  const bool earliest = deadlines_.empty() || deadline < deadlines_.begin()->first;
  deadlines_.emplace(deadline, request);
  return earliest;
}

std::size_t RecordTable::ExpireDeadlines(TimePoint now, EngineContext& context) {
  std::size_t expired = 0;
  while (!deadlines_.empty() && deadlines_.begin()->first < now) {
    Resolve(deadlines_.begin()->second, DeadlineExceededError("deadline passed before the result (queued or running)"),
            context);
    ++expired;
  }
  return expired;
}

std::optional<TimePoint> RecordTable::next_deadline() const {
  if (deadlines_.empty()) return std::nullopt;
  return deadlines_.begin()->first;
}

}  // namespace tokenbatch::engine
