// EngineRecord: the batch engine's type-independent state of one request, or of
// one window of a split request, kept in a RequestSlab slot. What the request
// carries (its input, output and callback) lives in the typed facade's payload
// table under the same id (include/tokenbatch/runtime/batch_engine.h).
//
// Thread-safety: written by the submitter under the intake lock while its slot is
// not yet published, then only under the engine lock.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "tokenbatch/core/admission.h"
#include "tokenbatch/core/request.h"

namespace tokenbatch::engine {

// Where a record is in its life (a free slot has id 0).
enum class Stage : std::uint8_t {
  kQueued,       // in the intake or the Scheduler's queue
  kInFlight,     // in a running batch
  kAbandoned,    // in a running batch, but its request was resolved: drop the result
  kDone,         // its batch returned; being resolved or merged now
  kSplitParent,  // a split request; its windows are the scheduled records
};

// The windows of a split request, and which of them are still outstanding.
struct SplitWindows {
  std::vector<TokenWindow> windows;
  std::vector<RequestId> children;  // window ids; 0 once that window is done
  std::size_t remaining = 0;
};

struct EngineRecord {
  RequestId id = 0;         // 0: free
  RequestId parent = 0;     // a window: its request's id; a request: 0
  std::uint32_t index = 0;  // a window: its index
  Stage stage = Stage::kQueued;
  int priority = 0;
  std::int64_t tokens = 0;  // scheduled records: exact token count
  TimePoint arrival{};
  std::optional<TimePoint> deadline;    // requests only
  std::unique_ptr<SplitWindows> split;  // split requests only

  // The id of the request this record belongs to (itself, or its parent).
  [[nodiscard]] RequestId request_id() const { return parent != 0 ? parent : id; }
};

// Fills a newly allocated record that will be scheduled (a request, or a window
// of a split one) as queued. Called by whoever owns the slot.
inline void Stamp(EngineRecord& r, int priority, std::int64_t tokens, TimePoint now) {
  r.stage = Stage::kQueued;
  r.priority = priority;
  r.tokens = tokens;
  r.arrival = now;
}

}  // namespace tokenbatch::engine
