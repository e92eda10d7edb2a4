// AgedEntries: entries that come due one to two periods after they were added
// (internal to the server).
//
// Why: the server watches a connection whose request is in flight for the
// client leaving (to cancel its queued inputs). Starting that watch costs a
// syscall and a cancelled operation per request (visible in the noop server's
// profile, docs/benchmarks.md), while most requests are answered within a
// millisecond. So a request's watch starts only once it has been in flight for
// a period: the session adds itself here, and a timer rotates the list once a
// period; what a rotation returns was added at least one period earlier.
//
// The list is two generations: Rotate() hands out the older one and ages the
// newer one. Sans-IO: the caller owns the timer and the clock.
//
// Thread-safety: every member may be called from any thread (one mutex). Never
// blocks beyond that mutex.
#pragma once

#include <utility>
#include <vector>

#include "tokenbatch/runtime/mutex.h"

namespace tokenbatch::server {

template <typename Entry>
class AgedEntries {
 public:
  // Adds `entry` to the newer generation. Returns true when the list was idle
  // (no rotation pending): the caller then starts its once-a-period timer,
  // which calls Rotate until it returns false.
  [[nodiscard]] bool Add(Entry entry) {
    MutexLock lock(&mu_);
    newer_.push_back(std::move(entry));
    const bool was_idle = idle_;
    idle_ = false;
    return was_idle;
  }

  // Replaces `due` with the older generation (entries added before the previous
  // Rotate) and makes the newer generation the older one. Returns whether any
  // entry is still waiting: true, call again a period later; false, the list is
  // idle and the next Add returns true.
  [[nodiscard]] bool Rotate(std::vector<Entry>& due) {
    due.clear();
    MutexLock lock(&mu_);
    due.swap(older_);
    older_.swap(newer_);
    idle_ = older_.empty();
    return !idle_;
  }

 private:
  Mutex mu_;
  std::vector<Entry> newer_ ABSL_GUARDED_BY(mu_);
  std::vector<Entry> older_ ABSL_GUARDED_BY(mu_);
  bool idle_ ABSL_GUARDED_BY(mu_) = true;
};

}  // namespace tokenbatch::server
