// ResultFuture / ResultPromise: a one-shot channel carrying one absl::StatusOr<T>
// from the Batcher's worker to the thread that submitted the request.
//
// Why not std::promise/std::future: per request, libstdc++'s pair costs two heap
// allocations (the shared state and the result holder), a std::call_once on set,
// and a futex wait the moment the consumer finds the value not ready yet. This
// channel is one allocation and one atomic word; set is one atomic OR (plus a
// futex wake only if the consumer is already asleep), and wait spins briefly
// before it sleeps, because a batch usually completes within microseconds. See
// docs/benchmarks.md (#2) for the measured difference.
//
// The API is the subset of std::future that Batcher users need: valid, ready,
// wait, wait_for/wait_until (returning std::future_status), get.
//
// Lifetime: the state is shared by one promise and one future and freed by
// whichever releases it last; either side may go first. A promise destroyed
// without Set delivers Internal("result never delivered") so a future never
// waits forever (the Batcher always sets; this is a backstop).
//
// Thread-safety: a promise and its future may be used from two different threads
// concurrently. Each object by itself is not thread-safe (like std::future).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <optional>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tokenbatch {
namespace internal {

// Blocks while *word == expected, until woken, a spurious wake, or `deadline`
// (steady clock; nullopt: no deadline). Linux: a private futex; elsewhere a
// bounded sleep. Thread-safe.
void FutexWait(std::atomic<std::uint32_t>* word, std::uint32_t expected,
               std::optional<std::chrono::steady_clock::time_point> deadline);
// Wakes every thread blocked in FutexWait on `word`. Thread-safe.
void FutexWakeAll(std::atomic<std::uint32_t>* word);

// A hint to the CPU that this thread is spinning (x86 pause, Arm yield).
inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Shared state of one promise/future pair. Bits of `state`:
inline constexpr std::uint32_t kResultReady = 1;   // value holds the result
inline constexpr std::uint32_t kResultWaiter = 2;  // a consumer may be asleep on state
inline constexpr std::uint32_t kPromiseRef = 4;    // the promise still holds the state
inline constexpr std::uint32_t kFutureRef = 8;     // the future still holds the state

template <typename T>
struct ResultState {
  std::atomic<std::uint32_t> state{kPromiseRef | kFutureRef};
  std::optional<absl::StatusOr<T>> value;

  // Drops one side's reference; the last one frees the state.
  static void Release(ResultState* s, std::uint32_t ref) {
    const std::uint32_t old = s->state.fetch_and(~ref, std::memory_order_acq_rel);
    if ((old & (kPromiseRef | kFutureRef)) == ref) delete s;
  }
};

}  // namespace internal

template <typename T>
class ResultFuture;

// The producing side: Set once. Move-only.
template <typename T>
class ResultPromise {
 public:
  // An empty promise (valid() false); Make creates a connected pair.
  ResultPromise() = default;
  // A connected promise and its future. Allocates once (may throw bad_alloc).
  static std::pair<ResultPromise, ResultFuture<T>> Make();

  ResultPromise(ResultPromise&& o) noexcept : state_(std::exchange(o.state_, nullptr)) {}
  ResultPromise& operator=(ResultPromise&& o) noexcept {
    if (this != &o) {
      Abandon();
      state_ = std::exchange(o.state_, nullptr);
    }
    return *this;
  }
  // A promise still valid here delivers Internal (see the overview).
  ~ResultPromise() { Abandon(); }

  // Whether this promise is connected to a future and not yet set.
  [[nodiscard]] bool valid() const { return state_ != nullptr; }

  // Publishes `result` and wakes the future's waiter if there is one; the promise
  // becomes empty. Requires valid(). Never blocks.
  void Set(absl::StatusOr<T> result) {
    internal::ResultState<T>* s = std::exchange(state_, nullptr);
    s->value.emplace(std::move(result));
    const std::uint32_t old = s->state.fetch_or(internal::kResultReady, std::memory_order_acq_rel);
    if (old & internal::kResultWaiter) internal::FutexWakeAll(&s->state);
    internal::ResultState<T>::Release(s, internal::kPromiseRef);
  }

 private:
  friend class ResultFuture<T>;
  explicit ResultPromise(internal::ResultState<T>* s) : state_(s) {}
  void Abandon() {
    if (state_) Set(absl::InternalError("result never delivered (promise destroyed unset)"));
  }
  internal::ResultState<T>* state_ = nullptr;
};

// The consuming side. Move-only; get() may be called once.
template <typename T>
class ResultFuture {
 public:
  ResultFuture() = default;
  ResultFuture(ResultFuture&& o) noexcept : state_(std::exchange(o.state_, nullptr)) {}
  ResultFuture& operator=(ResultFuture&& o) noexcept {
    if (this != &o) {
      Drop();
      state_ = std::exchange(o.state_, nullptr);
    }
    return *this;
  }
  ~ResultFuture() { Drop(); }

  // Whether this future refers to a result (false after get() or when empty).
  [[nodiscard]] bool valid() const { return state_ != nullptr; }
  // Whether the result is available now. Never blocks. Requires valid().
  [[nodiscard]] bool ready() const {
    return state_->state.load(std::memory_order_acquire) & internal::kResultReady;
  }
  // Blocks until the result is available. Requires valid().
  void wait() const { WaitUntil(std::nullopt); }
  // Blocks until the result is available or `timeout` passes. Requires valid().
  // A timeout too long to represent waits without a deadline.
  template <typename Rep, typename Period>
  std::future_status wait_for(const std::chrono::duration<Rep, Period>& timeout) const {
    using Steady = std::chrono::steady_clock;
    const Steady::time_point now = Steady::now();
    // Compared in double seconds so that no duration conversion can overflow.
    const double left_s = std::chrono::duration<double>(timeout).count();
    const double room_s = std::chrono::duration<double>(Steady::time_point::max() - now).count();
    if (left_s <= 0) return ready() ? std::future_status::ready : std::future_status::timeout;
    if (left_s >= room_s) {
      WaitUntil(std::nullopt);
      return std::future_status::ready;
    }
    return WaitUntil(now + std::chrono::duration_cast<Steady::duration>(timeout)) ? std::future_status::ready
                                                                                   : std::future_status::timeout;
  }
  // Blocks until the result is available or `deadline` (any clock) passes.
  template <typename Clock, typename Duration>
  std::future_status wait_until(const std::chrono::time_point<Clock, Duration>& deadline) const {
    // In double seconds: time_point::min() or max() must not overflow.
    using Seconds = std::chrono::duration<double>;
    return wait_for(Seconds(deadline.time_since_epoch()) - Seconds(Clock::now().time_since_epoch()));
  }
  // Blocks until the result is available and moves it out; valid() is false
  // afterwards. Requires valid().
  absl::StatusOr<T> get() {
    wait();
    absl::StatusOr<T> result = std::move(*state_->value);
    Drop();
    return result;
  }

 private:
  friend class ResultPromise<T>;
  explicit ResultFuture(internal::ResultState<T>* s) : state_(s) {}
  void Drop() {
    if (state_) internal::ResultState<T>::Release(std::exchange(state_, nullptr), internal::kFutureRef);
  }
  // Before sleeping, a waiter polls: kSpins pause-loads (a few microseconds on
  // current x86), then yields the CPU between polls for up to kYieldFor. A batch
  // usually completes within that time, and a sleeping waiter costs the setter a
  // futex wake (a system call on the worker's time) per batch.
  static constexpr int kSpins = 256;
  static constexpr std::chrono::microseconds kYieldFor{50};
  // Spins briefly (the common case: the batch is about to complete), then sleeps
  // on the state word. Returns whether the result is ready.
  bool WaitUntil(std::optional<std::chrono::steady_clock::time_point> deadline) const {
    std::atomic<std::uint32_t>& word = state_->state;
    for (int spin = 0; spin < kSpins; ++spin) {
      if (word.load(std::memory_order_acquire) & internal::kResultReady) return true;
      internal::CpuRelax();
    }
    const auto yield_until = std::chrono::steady_clock::now() + kYieldFor;
    do {
      std::this_thread::yield();
      if (word.load(std::memory_order_acquire) & internal::kResultReady) return true;
    } while (std::chrono::steady_clock::now() < std::min(yield_until, deadline.value_or(yield_until)));
    for (;;) {
      std::uint32_t s = word.load(std::memory_order_acquire);
      if (s & internal::kResultReady) return true;
      if (deadline && std::chrono::steady_clock::now() >= *deadline) return false;
      if (!(s & internal::kResultWaiter)) {
        if (!word.compare_exchange_weak(s, s | internal::kResultWaiter, std::memory_order_acq_rel)) continue;
        s |= internal::kResultWaiter;
      }
      internal::FutexWait(&word, s, deadline);
    }
  }
  internal::ResultState<T>* state_ = nullptr;
};

template <typename T>
std::pair<ResultPromise<T>, ResultFuture<T>> ResultPromise<T>::Make() {
  auto* s = new internal::ResultState<T>();
  return {ResultPromise(s), ResultFuture<T>(s)};
}

}  // namespace tokenbatch
