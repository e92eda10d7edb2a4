// The blocking primitives under ResultFuture: a private futex on Linux, a short
// sleep elsewhere.
#include "tokenbatch/runtime/result_future.h"

#include <algorithm>
#include <climits>
#include <thread>

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#endif

namespace tokenbatch::internal {

void FutexWait(std::atomic<std::uint32_t>* word, std::uint32_t expected,
               std::optional<std::chrono::steady_clock::time_point> deadline) {
#if defined(__linux__)
  // std::atomic<uint32_t> is a plain 32-bit word on Linux targets.
  static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t));
  timespec relative{};
  timespec* timeout = nullptr;
  if (deadline) {
    const auto left = *deadline - std::chrono::steady_clock::now();
    if (left <= left.zero()) return;
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
    relative.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
    relative.tv_nsec = static_cast<long>(ns % 1'000'000'000);
    timeout = &relative;
  }
  // Returns at once (EAGAIN) if *word != expected; EINTR and spurious wakes are
  // handled by the caller's loop.
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, timeout, nullptr, 0);
#else
  (void)expected;
  auto nap = std::chrono::microseconds(50);
  if (deadline) nap = std::min(nap, std::chrono::duration_cast<std::chrono::microseconds>(
                                        *deadline - std::chrono::steady_clock::now()));
  if (nap > nap.zero()) std::this_thread::sleep_for(nap);
#endif
}

void FutexWakeAll(std::atomic<std::uint32_t>* word) {
#if defined(__linux__)
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
#else
  (void)word;  // waiters poll
#endif
}

}  // namespace tokenbatch::internal
