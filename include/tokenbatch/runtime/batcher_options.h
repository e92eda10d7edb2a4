// BatcherOptions: the threaded runtime's settings, around the core's options.
// Plain value type; every field documented with its unit and default.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>

#include "tokenbatch/core/enum_names.h"
#include "tokenbatch/core/intra_op_width.h"
#include "tokenbatch/core/request.h"
#include "tokenbatch/core/scheduler_options.h"
#include "tokenbatch/runtime/aimd_budget.h"

namespace tokenbatch {

// What Shutdown does with requests still queued (not yet dispatched).
enum class ShutdownMode {
  kDrain,         // dispatch them all (no max_wait), then stop
  kCancelQueued,  // resolve them with ShuttingDown; in-flight batches still finish
};
// "drain" | "cancel" (serve's --shutdown).
inline constexpr EnumNames<ShutdownMode, 2> kShutdownModeNames{
    "shutdown mode", {{{ShutdownMode::kDrain, "drain"}, {ShutdownMode::kCancelQueued, "cancel"}}}};

class SharedDeviceMemory;  // shared_device_memory.h

// One device's memory shared with other Batchers' batches (several models in
// one process): see BatcherOptions::device_memory.
struct DeviceMemoryShare {
  // Required; shared by every model's Batcher on the device.
  std::shared_ptr<SharedDeviceMemory> device;
  // This Batcher's model: its index in `device`.
  std::size_t model = 0;
  // A batch's bytes: a `memory` cost model (c0 + c1·B·Lmax + c2·B·Lmax², from
  // the model's `tokenbatch calibrate`). Its longest input alone must fit
  // device->MostBytesFor(model), or it could never run.
  CostModel memory_model = CostModel::Padded();
};

struct BatcherOptions {
  SchedulerOptions scheduler;
  // Worker threads, one per model instance; each runs one batch at a time. >= 1.
  int num_workers = 1;
  // false: Create starts the workers. true: no batch is formed until
  // Batcher::Start, so every request submitted before it is in the queue when
  // the first batch is chosen: a burst that arrives at one instant, as the
  // simulator and `tokenbatch bench` model it. Otherwise the first worker to
  // wake forms a batch from the requests submitted so far. Until Start, no
  // deadline expires (the deadline thread starts with the workers).
  bool defer_start = false;
  AimdOptions aimd;
  // What the destructor does if Shutdown was not called.
  ShutdownMode shutdown_on_destroy = ShutdownMode::kDrain;
  // Unset (the default): batches are bounded by the scheduler's budget alone.
  // Set: each batch also fits the bytes the shared device allows this model
  // when the batch is formed (DecisionContext::memory_model), holds them while
  // it runs, and a batch whose anchor does not fit waits for memory that other
  // batches give back; the batches in flight of every Batcher sharing the device
  // stay under its limit together (shared_device_memory.h).
  std::optional<DeviceMemoryShare> device_memory;
  // Unset (the default): each forward runs on the backend's own thread count.
  // Set: the CPU's cores are shared out per batch (core/intra_op_width.h): a
  // lone batch gets every core, and under load each batch gets one and
  // `intra_op->cores` batches run at once; a worker with a batch ready and no
  // free core waits for a forward to end. Needs num_workers == intra_op->cores
  // and set_forward_threads.
  std::optional<IntraOpOptions> intra_op;
  // With intra_op: called on the worker's thread right before each forward with
  // the threads it gets (1 or intra_op->cores); it sets the backend's thread
  // count for the calling thread (backend::SetForwardThreads for libtorch).
  // Must not block or throw.
  std::function<void(int threads)> set_forward_threads;
};

// Per-request options of Batcher::Submit.
struct SubmitOptions {
  // Higher levels are served first (see RequestSpec::priority).
  int priority = 0;
  // Unset: none. Set: resolved with DeadlineExceeded if not done by then (a result
  // that arrives later is dropped).
  std::optional<TimePoint> deadline;
};

}  // namespace tokenbatch
