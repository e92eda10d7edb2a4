// CompletionChannel: hands resolved requests from the runtime's threads to one
// asyncio event loop, with one wake-up per burst of completions.
//
// A Batcher worker resolves a batch's requests one after another (Batcher's
// Fire). Each Push appends under a small lock and, only when the queue was
// empty, writes the channel's eventfd; the loop watches the fd with
// loop.add_reader and its reader (Drain in the bindings) takes the whole queue
// at once. So a batch of B requests costs the loop one wake-up, not B
// call_soon_threadsafe calls, and futures are only ever resolved on their
// loop's thread. Linux only (eventfd).
//
// Thread-safety: Push from any thread, without the GIL; Take and fd from the
// loop's thread. Push never blocks beyond the lock (the eventfd is
// non-blocking and its counter cannot overflow at one write per empty queue).
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "python/py_item.h"
#include "tokenbatch/runtime/mutex.h"

namespace tokenbatch::python {

class CompletionChannel {
 public:
  // One request's end: the future to resolve (an owned reference) and its result.
  struct Completion {
    PyRef future;
    absl::StatusOr<Outcome> result;
  };

  // Errors: InternalError when no eventfd can be created (the process is out
  // of file descriptors).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<CompletionChannel>> Create();
  ~CompletionChannel();
  CompletionChannel(const CompletionChannel&) = delete;
  CompletionChannel& operator=(const CompletionChannel&) = delete;

  // The eventfd to watch for reading.
  [[nodiscard]] int fd() const { return fd_; }
  // Queues one completion and wakes the loop if the queue was empty.
  void Push(PyRef future, absl::StatusOr<Outcome> result);
  // Resets the eventfd and returns everything queued, oldest first.
  [[nodiscard]] std::vector<Completion> Take();
  // How many times Push has woken the loop (written the eventfd).
  [[nodiscard]] std::uint64_t wakeups() const { return wakeups_.load(std::memory_order_relaxed); }

 private:
  explicit CompletionChannel(int fd) : fd_(fd) {}
  const int fd_;
  std::atomic<std::uint64_t> wakeups_{0};
  Mutex mutex_;
  std::vector<Completion> queue_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace tokenbatch::python
