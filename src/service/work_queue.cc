// WorkQueue: threads drain the queue without sleeping in between; wake-ups only
// when needed (see work_queue.h).
#include "service/work_queue.h"

#include <algorithm>
#include <mutex>
#include <utility>

namespace tokenbatch::server {

WorkQueue::WorkQueue(int threads) {
  const int n = std::max(threads, 1);
  {
    MutexLock lock(&mu_);
    awake_ = n;  // each thread counts as awake until it first waits
    running_since_.assign(static_cast<std::size_t>(n), std::nullopt);
  }
  for (int i = 0; i < n; ++i) threads_.emplace_back([this, i] { Loop(static_cast<std::size_t>(i)); });
}

WorkQueue::~WorkQueue() { Join(); }

bool WorkQueue::AnyStalledLocked(TimePoint now) const {
  return std::any_of(running_since_.begin(), running_since_.end(),
                     [&](const std::optional<TimePoint>& t) { return t.has_value() && now - *t > kStall; });
}

bool WorkQueue::ShouldWakeLocked() const {
  return sleeping_ > 0 && !tasks_.empty() &&
         (awake_ == 0 || tasks_.size() > kBacklogPerThread * static_cast<std::size_t>(awake_) ||
          AnyStalledLocked(SteadyClock::now()));
}

bool WorkQueue::Post(Task task, bool wake) {
  bool notify = false;
  {
    MutexLock lock(&mu_);
    if (stopping_) return false;
    tasks_.push_back(std::move(task));
    notify = wake && ShouldWakeLocked();
  }
  if (notify) cv_.notify_one();
  return true;
}

void WorkQueue::Wake() {
  bool notify = false;
  {
    MutexLock lock(&mu_);
    notify = ShouldWakeLocked();
  }
  if (notify) cv_.notify_one();
}

void WorkQueue::Join() {
  std::call_once(join_once_, [this] {
    {
      MutexLock lock(&mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) t.join();
  });
}

void WorkQueue::Loop(std::size_t index) {
  mu_.Lock();
  for (;;) {
    while (tasks_.empty() && !stopping_) {
      running_since_[index].reset();
      --awake_;
      ++sleeping_;
      mu_.Wait(cv_);
      --sleeping_;
      ++awake_;
    }
    if (tasks_.empty()) break;  // stopping, and nothing left to run
    // One task at a time (an uncontended lock costs tens of ns), so that tasks
    // queued behind a long one stay available to a thread woken for them.
    Task task = std::move(tasks_.front());
    tasks_.pop_front();
    running_since_[index] = SteadyClock::now();
    mu_.Unlock();
    task();
    task = nullptr;  // destroy captures outside the lock
    mu_.Lock();
  }
  running_since_[index].reset();
  mu_.Unlock();
}

}  // namespace tokenbatch::server
