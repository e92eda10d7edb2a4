// Test backends for Batcher tests. Inputs are token vectors (std::vector<int>);
// the output of an input is the sum of its tokens, so every result can be checked.
#pragma once

#include <numeric>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "tokenbatch/core/errors.h"
#include "tokenbatch/runtime/batcher.h"
#include "tokenbatch/runtime/mutex.h"

namespace tokenbatch::testing {

using Tokens = std::vector<int>;
using SumBatcher = Batcher<Tokens, long>;

inline Tokens MakeTokens(int count, int first = 1) {
  Tokens t(static_cast<size_t>(count));
  std::iota(t.begin(), t.end(), first);
  return t;
}
inline long SumOf(const Tokens& t) { return std::accumulate(t.begin(), t.end(), 0L); }

// A one-shot event (std-based, so ThreadSanitizer sees the synchronisation).
class Notification {
 public:
  void Notify() {
    MutexLock lock(&mu_);
    notified_ = true;
    cv_.notify_all();
  }
  void WaitForNotification() {
    MutexLock lock(&mu_);
    while (!notified_) mu_.Wait(cv_);
  }
  bool HasBeenNotified() {
    MutexLock lock(&mu_);
    return notified_;
  }

 private:
  Mutex mu_;
  std::condition_variable cv_;
  bool notified_ ABSL_GUARDED_BY(mu_) = false;
};

// Records every batch it runs; can hold the first call until released, fail
// batches containing a poison token (< 0) and run out of memory above a token sum.
class RecordingBackend {
 public:
  absl::StatusOr<std::vector<long>> Run(std::span<const Tokens> batch) {
    {
      MutexLock lock(&mu_);
      std::vector<long> sizes;
      for (const Tokens& t : batch) sizes.push_back(static_cast<long>(t.size()));
      batches_.push_back(sizes);
      for (const Tokens& t : batch) seen_.push_back(SumOf(t));
    }
    if (hold_first_ && !entered_.HasBeenNotified()) {
      entered_.Notify();
      release_.WaitForNotification();
    }
    long total = 0;
    std::vector<long> out;
    for (const Tokens& t : batch) {
      for (int v : t) {
        if (v < 0) return BackendError("poison token");
      }
      total += static_cast<long>(t.size());
      out.push_back(SumOf(t));
    }
    if (oom_above_ > 0 && total > oom_above_) return OutOfMemoryError("out of memory (test)");
    return out;
  }

  SumBatcher::Backend AsBackend() {
    return [this](std::span<const Tokens> b) { return Run(b); };
  }

  void HoldFirstCall() { hold_first_ = true; }
  void WaitUntilEntered() { entered_.WaitForNotification(); }
  void Release() { release_.Notify(); }
  void OomAboveTokens(long n) { oom_above_ = n; }

  std::vector<std::vector<long>> batches() const {
    MutexLock lock(&mu_);
    return batches_;
  }
  std::vector<long> seen_sums() const {
    MutexLock lock(&mu_);
    return seen_;
  }

 private:
  mutable Mutex mu_;
  std::vector<std::vector<long>> batches_ ABSL_GUARDED_BY(mu_);
  std::vector<long> seen_ ABSL_GUARDED_BY(mu_);
  bool hold_first_ = false;
  long oom_above_ = 0;
  Notification entered_, release_;
};

}  // namespace tokenbatch::testing
