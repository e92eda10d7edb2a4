#include "python/completion_channel.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace tokenbatch::python {

absl::StatusOr<std::unique_ptr<CompletionChannel>> CompletionChannel::Create() {
  const int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd < 0) return absl::InternalError(absl::StrCat("eventfd failed: ", std::strerror(errno)));
  return std::unique_ptr<CompletionChannel>(new CompletionChannel(fd));
}

CompletionChannel::~CompletionChannel() { close(fd_); }

void CompletionChannel::Push(PyRef future, absl::StatusOr<Outcome> result) {
  bool was_empty = false;
  {
    MutexLock lock(&mutex_);
    was_empty = queue_.empty();
    queue_.push_back(Completion{std::move(future), std::move(result)});
  }
  if (was_empty) {
    wakeups_.fetch_add(1, std::memory_order_relaxed);
    const std::uint64_t one = 1;
    // Cannot fail but for EAGAIN at a counter near 2^64, which one write per
    // empty queue never reaches; a failed wake-up would only delay the reader
    // to the next Push.
    [[maybe_unused]] const ssize_t written = write(fd_, &one, sizeof(one));
  }
}

std::vector<CompletionChannel::Completion> CompletionChannel::Take() {
  std::uint64_t counter = 0;
  // EAGAIN when nothing was written since the last read: fine, the queue says.
  [[maybe_unused]] const ssize_t read_bytes = read(fd_, &counter, sizeof(counter));
  std::vector<Completion> taken;
  MutexLock lock(&mutex_);
  taken.swap(queue_);
  return taken;
}

}  // namespace tokenbatch::python
