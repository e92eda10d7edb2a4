// WorkQueue: a task queue that a fixed set of threads drain in bulk.
//
// Why not boost::asio::thread_pool: under load the server's tokenizer hand-off was
// dominated by wake-ups (each post signalled a sleeping pool thread, a futex
// syscall and a context switch per request; perf showed ~2.4 context switches per
// HTTP request). Here a thread that wakes keeps taking tasks until the queue is
// empty, and Post wakes a sleeping thread only when
//   * no thread is awake, or
//   * the queue holds more than kBacklogPerThread tasks per awake thread, or
//   * an awake thread has been running one task for longer than kStall (a long
//     text), so that short requests do not wait behind it.
// So an awake consumer absorbs a burst without any syscall, and a second thread
// joins only when one cannot keep up. Residual cost: a task posted while every
// awake thread has just begun a long task, with no later post, waits for one of
// those tasks to finish.
//
// Thread-safety: Post and Join may be called from any thread (Join not from a
// task). Tasks run on the queue's threads, in the order posted per thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <optional>
#include <functional>
#include <thread>
#include <vector>

#include "tokenbatch/runtime/mutex.h"

namespace tokenbatch::server {

class WorkQueue {
 public:
  using Task = std::function<void()>;
  // A sleeping thread is woken when the queue holds more than this many tasks per
  // awake thread: a burst this small is cheaper to run on one thread than to pay
  // a wake-up (a few µs) for.
  static constexpr std::size_t kBacklogPerThread = 4;
  // An awake thread that has run one task this long counts as stalled: a sleeping
  // thread is woken for the next post. About the tokenisation time of a few
  // thousand tokens; short requests tokenise in a few µs.
  static constexpr std::chrono::microseconds kStall{200};

  // Starts `threads` (>= 1) threads.
  explicit WorkQueue(int threads);
  // Join().
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Queues `task`; returns false (and drops it) once Join has begun. Never blocks
  // on a task. With wake = false no thread is woken for it: the caller promises a
  // later Wake() (a producer handing over a burst wakes once, at its end).
  [[nodiscard]] bool Post(Task task, bool wake = true);

  // Wakes a sleeping thread if queued tasks need one (the rules above).
  void Wake();

  // Stops accepting, runs every task already posted, joins the threads. Blocks.
  // Idempotent.
  void Join();

 private:
  void Loop(std::size_t index);
  bool AnyStalledLocked(TimePoint now) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool ShouldWakeLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> tasks_ ABSL_GUARDED_BY(mu_);
  // Per thread: when its current task started; unset while it waits for work.
  std::vector<std::optional<TimePoint>> running_since_ ABSL_GUARDED_BY(mu_);
  int awake_ ABSL_GUARDED_BY(mu_) = 0;     // threads not waiting for work
  int sleeping_ ABSL_GUARDED_BY(mu_) = 0;  // threads waiting on cv_
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
  std::once_flag join_once_;
};

}  // namespace tokenbatch::server
