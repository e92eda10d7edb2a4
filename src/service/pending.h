// Pending: one client request in flight in the embedding service, the fan-in
// of its inputs' Batcher results into one answer, and its cancellation.
//
// Shared (std::shared_ptr) by the tokenizer thread that submits the inputs,
// the Batcher threads that resolve them and the I/O thread of a client that
// disconnects. `remaining` counts the inputs not resolved yet plus the
// submitter's hold, so the answer is made exactly once, by whichever thread
// resolves the last of them, and never while inputs are still being
// submitted. Internal to the service.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "service/batcher_adapter.h"
#include "tokenbatch/core/request.h"
#include "tokenbatch/runtime/mutex.h"
#include "tokenbatch/service/embed_types.h"

namespace tokenbatch::server {

struct Pending {
  using Done = std::function<void(absl::StatusOr<EmbedResult>)>;

  // `inputs` results to gather; `cancel` removes a submitted input from the
  // Batcher (it may resolve that input on this thread, with Cancelled).
  Pending(std::size_t inputs, Done done, std::function<void(RequestId)> cancel)
      : outs(inputs), queued(inputs), remaining(inputs + 1), done(std::move(done)), cancel(std::move(cancel)) {}

  Mutex mu;
  std::vector<ItemOut> outs ABSL_GUARDED_BY(mu);
  std::vector<TimePoint> queued ABSL_GUARDED_BY(mu);  // when each input was submitted
  std::vector<RequestId> ids ABSL_GUARDED_BY(mu);     // submitted so far
  absl::Status error ABSL_GUARDED_BY(mu);             // the first failure
  std::atomic<std::size_t> remaining;
  const Done done;
  const std::function<void(RequestId)> cancel;
  // Counts and times written by the submitter before it releases its hold,
  // then read (and the embeddings added) by Answer: `remaining` orders the two.
  EmbedResult result;

  // Counts `k` inputs as resolved; true for the call that counted the last one,
  // which must then call Answer (once).
  bool CountDown(std::size_t k) { return remaining.fetch_sub(k) == k; }
  // Counts `k` inputs as resolved; the last one answers on this thread.
  void Release(std::size_t k) {
    if (CountDown(k)) Answer();
  }
  // Calls `done` with the first failure, or with every input's embedding and
  // the longest queue wait and batch run of an input.
  void Answer() ABSL_LOCKS_EXCLUDED(mu);
  // Records `status` as the request's failure (if first) and cancels the
  // inputs submitted so far.
  void Fail(absl::Status status) ABSL_LOCKS_EXCLUDED(mu);
};

}  // namespace tokenbatch::server
