// RecordTable: the life of the batch engine's records after submit, under the
// engine lock: resolving a request exactly once, taking its records out of the
// queue (or abandoning those in a running batch), completing a batch's records
// with their statuses, merging split requests' windows, and the deadline index.
//
// A request is resolved exactly once: whoever resolves it (a completed batch, a
// cancel, an expired deadline, shutdown) tells the EngineContext, which takes the
// callback out of the payload table, and then frees the request's records, so no
// later path finds it live. Freed slots are released to the intake at its next
// publish (released()), so an id is never reused while the lock is held.
//
// Thread-safety: none inside; the engine calls every method under its lock.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "runtime/engine/engine_record.h"
#include "runtime/engine/intake.h"
#include "tokenbatch/core/scheduler.h"
#include "tokenbatch/runtime/batch_engine.h"
#include "tokenbatch/runtime/metrics.h"

namespace tokenbatch::engine {

class RecordTable {
 public:
  // All four must outlive the table.
  RecordTable(Intake& intake, Scheduler& scheduler, MetricsRecorder& recorder, EngineClient& client)
      : intake_(intake), scheduler_(scheduler), recorder_(recorder), client_(client) {}

  // Resolves live request `request` with `error` into `context` and frees it.
  void Resolve(RequestId request, absl::Status error, EngineContext& context);

  // Resolves the records of a batch that ran: `ids[i]` with `statuses[i]`, the
  // outputs held by `context` (EngineContext::RunBatch). A record whose request
  // was resolved meanwhile is freed and its output dropped; a request whose
  // deadline passed before `now` gets DeadlineExceeded; a split request is merged
  // when its last window completes.
  void CompleteBatch(std::span<const RequestId> ids, std::span<const absl::Status> statuses, TimePoint now,
                     EngineContext& context);

  // Tracks request `request`'s deadline; true if it is now the earliest.
  bool AddDeadline(TimePoint deadline, RequestId request);
  // Resolves with DeadlineExceeded every request whose deadline is before `now`;
  // returns how many.
  std::size_t ExpireDeadlines(TimePoint now, EngineContext& context);
  // The earliest tracked deadline, if any.
  [[nodiscard]] std::optional<TimePoint> next_deadline() const;

  // Slots freed since the last publish (the intake releases and clears them).
  [[nodiscard]] std::vector<RequestId>& released() { return released_; }

 private:
  // Takes live request `request` out of the queue and frees it (its in-flight
  // records are abandoned instead).
  void Take(RequestId request);
  // A scheduled record of a request being taken: out of the queue and freed, or
  // abandoned if it is running (freed when its batch completes).
  void TakeScheduled(EngineRecord& record);
  void Free(EngineRecord& record);

  Intake& intake_;
  Scheduler& scheduler_;
  MetricsRecorder& recorder_;
  EngineClient& client_;
  // (deadline, request id) of unresolved requests with a deadline, earliest first.
  std::set<std::pair<TimePoint, RequestId>> deadlines_;
  std::vector<RequestId> released_;
};

}  // namespace tokenbatch::engine
