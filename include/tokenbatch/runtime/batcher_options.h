// BatcherOptions: the threaded runtime's settings, around the core's options.
// Plain value type; every field documented with its unit and default.
#pragma once

#include <optional>

#include "tokenbatch/core/enum_names.h"
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
