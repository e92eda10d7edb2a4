// IntraOpWidth: how many CPU threads each forward gets, chosen per batch from
// the load the runtime sees (sans-IO: plain calls, `now` passed in).
//
// On a CPU one forward can use every core (libtorch's intra-op threads), or
// several forwards can run side by side on fewer threads each. The matrices of
// an embedding model's batch are small enough that an extra thread buys well
// under its share: one forward on C threads finishes sooner than on one, but C
// one-thread forwards side by side carry more (docs/benchmarks.md, "Threads per
// forward"). So the best width depends on the load:
//   * a lone batch gets every core (its latency is what matters);
//   * when more work is waiting, each batch gets one core, so that C batches run
//     at once.
// Widths are 1 or `cores`, never in between: the BLAS under libtorch (OpenBLAS)
// keeps one process-wide thread count, so forwards that run side by side must
// share one width, and a wide forward runs alone.
//
// The runtime keeps one worker per core. A worker with a batch ready asks
// CanStart; when no core is free it reports OnWaitingForCore and waits for a
// Finish (starting anyway would oversubscribe the cores, and a forward whose
// threads are descheduled waits for them). A sign of load (requests left queued
// when a batch starts, or a worker waiting for a core) keeps the following
// forwards narrow for `narrow_hold`, so that one quiet instant under steady load
// does not hand a small batch every core while the next batch forms behind it.
//
// Plain value type, no synchronisation: the runtime calls it under its lock.
#pragma once

#include <chrono>
#include <optional>

#include "absl/status/statusor.h"
#include "tokenbatch/core/request.h"

namespace tokenbatch {

struct IntraOpOptions {
  // Threads to hand out: the CPU's cores (or the share of them this process
  // may use). >= 1; 1 makes every forward one-thread.
  int cores = 1;
  // How long a sign of load keeps forwards narrow. >= 0; 0: only the instant's
  // load counts.
  Duration narrow_hold = std::chrono::milliseconds(20);
};

class IntraOpWidth {
 public:
  // Errors: InvalidArgument for cores < 1 or a negative narrow_hold.
  [[nodiscard]] static absl::StatusOr<IntraOpWidth> Create(const IntraOpOptions& options);

  // Whether a forward may start now: some core is free. O(1).
  [[nodiscard]] bool CanStart() const { return in_use_ < options_.cores; }
  // A worker has work queued and no free core at `now`: a sign of load.
  void OnWaitingForCore(TimePoint now);
  // The width a forward starting at `now` gets if nothing is left queued behind
  // it: what the worker's latency model should predict with. O(1).
  [[nodiscard]] int Predict(TimePoint now) const;
  // A forward starts at `now`; `more_queued`: requests are still queued after
  // its batch was taken; `may_run_wide`: false for a worker that must not run a
  // wide forward (the runtime runs them all on one worker), whose forward is then
  // narrow. Returns its width (threads) and counts its cores in use until
  // Finish(width). Precondition: CanStart().
  int Start(TimePoint now, bool more_queued, bool may_run_wide = true);
  // A forward of `width` threads (Start's result) ended.
  void Finish(int width);

  [[nodiscard]] int cores() const { return options_.cores; }
  [[nodiscard]] int cores_in_use() const { return in_use_; }

 private:
  explicit IntraOpWidth(const IntraOpOptions& options) : options_(options) {}
  [[nodiscard]] bool Loaded(TimePoint now) const { return narrow_until_ && now < *narrow_until_; }

  IntraOpOptions options_;
  int in_use_ = 0;
  std::optional<TimePoint> narrow_until_;  // set by the last sign of load
};

}  // namespace tokenbatch
