// Mutex: std::mutex with clang thread-safety annotations.
//
// Why not absl::Mutex: Debian's libabsl is not built with ThreadSanitizer, so
// TSan cannot see absl::Mutex's synchronisation and reports false races in our
// TSan builds. std::mutex goes through pthread, which TSan intercepts. The
// annotations (ABSL_GUARDED_BY, ABSL_EXCLUSIVE_LOCKS_REQUIRED) still work with
// clang's -Wthread-safety because this class is marked as a capability.
// Waits take a std::condition_variable and a steady_clock deadline, so the
// runtime sleeps exactly until the policy core's wake_at.
#pragma once

#include <condition_variable>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "tokenbatch/core/request.h"

namespace tokenbatch {

class ABSL_LOCKABLE Mutex {
 public:
  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }

  // Atomically releases the mutex and blocks until `cv` is notified (or a spurious
  // wake-up); holds the mutex again on return.
  void Wait(std::condition_variable& cv) ABSL_EXCLUSIVE_LOCKS_REQUIRED(this) {
    std::unique_lock<std::mutex> lock(mu_, std::adopt_lock);
    cv.wait(lock);
    lock.release();
  }
  // As Wait, but returns by `deadline` at the latest.
  void WaitUntil(std::condition_variable& cv, TimePoint deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(this) {
    std::unique_lock<std::mutex> lock(mu_, std::adopt_lock);
    cv.wait_until(lock, deadline);
    lock.release();
  }

 private:
  std::mutex mu_;
};

// Holds a Mutex for its scope.
class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

}  // namespace tokenbatch
