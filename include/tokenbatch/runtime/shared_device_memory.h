// SharedDeviceMemory: one device's memory for batches, shared by several
// Batchers (one per model) in one process: the thread-safe runtime around the
// policy core's DeviceMemoryBudget (core/device_memory_budget.h has the rule).
//
// Each Batcher given one (BatcherOptions::device_memory) decides its batches
// through Decide: under this object's lock its worker learns the bytes its
// model may take now, asks its own Scheduler for a batch within them
// (DecisionContext::memory_model) and takes the batch's bytes, or, when its
// anchor alone does not fit, waits for them. When a batch ends its bytes come
// back through Release, which wakes the waiting models that now fit. So the
// bytes of the batches in flight, all models together, stay under the limit.
//
// Locking: one mutex. Decide runs the caller's function under it, so that
// deciding and taking the bytes are one step for every model; a Batcher calls
// it with its engine lock held (lock order: engine lock, then this lock, then a
// waker's intake lock, which takes no other lock). Wakers run under the lock
// too, so Detach returning means that model's waker is not running and will
// not run again.
//
// Thread-safety: every method may be called from any thread; none blocks
// beyond the lock (Decide's function and the wakers must not block either).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "tokenbatch/core/device_memory_budget.h"
#include "tokenbatch/runtime/mutex.h"

namespace tokenbatch {

class SharedDeviceMemory {
 public:
  // Errors: DeviceMemoryBudget::Create's (InvalidArgument naming the model and
  // the numbers).
  [[nodiscard]] static absl::StatusOr<std::shared_ptr<SharedDeviceMemory>> Create(
      DeviceMemoryBudgetOptions options);

  // What one decision of a model does with the memory.
  struct Take {
    std::int64_t acquire = 0;  // > 0: a batch of these bytes starts (<= the allowance)
    std::int64_t need = 0;     // acquire == 0 and > 0: its anchor needs these bytes
  };
  // Under the lock: calls decide(allowance), allowance = the bytes `model` may
  // take now, and applies its answer: takes `acquire` bytes, or waits for `need`
  // bytes, or (both 0) stops waiting.
  void Decide(std::size_t model, absl::FunctionRef<Take(std::int64_t allowance)> decide)
      ABSL_LOCKS_EXCLUDED(mu_);
  // A batch of `bytes` that Decide took for `model` ends: the bytes come back,
  // and every waiting model whose need now fits has its waker called.
  void Release(std::size_t model, std::int64_t bytes) ABSL_LOCKS_EXCLUDED(mu_);
  // `model` gets a Batcher: `wake` (non-empty) is called, under the lock, when
  // `model` waits and memory given back, or a reserve that shrank, now covers
  // its need. Errors: InvalidArgument for a model out of range or one that
  // already has a Batcher (two would share one account).
  [[nodiscard]] absl::Status Attach(std::size_t model, std::function<void()> wake) ABSL_LOCKS_EXCLUDED(mu_);
  // `model`'s Batcher leaves: it waits no more and its waker is cleared, so
  // that another may attach. Its batches in flight must have been released.
  void Detach(std::size_t model) ABSL_LOCKS_EXCLUDED(mu_);

  // The bytes `model`'s largest batch may ever take: the limit less the other
  // models' guarantees (what the core reserves for a waiting model's need).
  [[nodiscard]] std::int64_t MostBytesFor(std::size_t model) const ABSL_LOCKS_EXCLUDED(mu_);
  [[nodiscard]] std::size_t models() const { return models_; }

  struct ModelState {
    std::string name;
    double weight = 1;
    std::int64_t guaranteed_bytes = 0;
    std::int64_t in_flight_bytes = 0;
    std::int64_t waiting_for_bytes = 0;  // 0: not waiting
    std::uint64_t waits = 0;             // times it began to wait
  };
  struct Snapshot {
    std::int64_t limit_bytes = 0;
    std::int64_t in_flight_bytes = 0;
    std::int64_t peak_in_flight_bytes = 0;  // since Create
    std::vector<ModelState> models;          // by index
  };
  [[nodiscard]] Snapshot snapshot() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  explicit SharedDeviceMemory(DeviceMemoryBudget budget);
  // Calls the wakers of the models that wait and now fit.
  void WakeSatisfiedLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::size_t models_;
  mutable Mutex mu_;
  DeviceMemoryBudget budget_ ABSL_GUARDED_BY(mu_);
  std::vector<std::function<void()>> wakers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tokenbatch
