// ThreadsWithoutSignals: threads started while one lives block every signal.
//
// Linux delivers a process-wide signal (Ctrl-C's SIGINT, SIGTERM) to any
// thread that does not block it. Delivered to one of the runtime's threads,
// CPython only marks it pending: the main thread, asleep in its event loop's
// epoll_wait (asyncio.run's SIGINT handler sets no wake-up fd), neither wakes
// nor runs the handler, and Ctrl-C seems to do nothing. Threads inherit their
// creator's signal mask, so the runtime's threads are started inside one of
// these scopes and every signal goes to a Python thread that handles it.
#pragma once

#include <pthread.h>
#include <signal.h>

namespace tokenbatch::python {

class ThreadsWithoutSignals {
 public:
  ThreadsWithoutSignals() {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &previous_);
  }
  ~ThreadsWithoutSignals() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }
  ThreadsWithoutSignals(const ThreadsWithoutSignals&) = delete;
  ThreadsWithoutSignals& operator=(const ThreadsWithoutSignals&) = delete;

 private:
  sigset_t previous_;
};

}  // namespace tokenbatch::python
