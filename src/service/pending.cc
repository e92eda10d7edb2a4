// The fan-in of one client request's inputs (see pending.h).
#include "service/pending.h"

#include <algorithm>
#include <chrono>

namespace tokenbatch::server {

void Pending::Answer() {
  absl::Status failure;
  std::vector<ItemOut> resolved;
  std::vector<TimePoint> submitted;
  {
    // A client's disconnect can still call Fail (from an I/O thread) now.
    MutexLock lock(&mu);
    failure = error;
    resolved.swap(outs);
    submitted.swap(queued);
  }
  if (!failure.ok()) {
    done(std::move(failure));
    return;
  }
  for (std::size_t i = 0; i < resolved.size(); ++i) {
    ItemOut& o = resolved[i];
    const double queue_us = std::chrono::duration<double, std::micro>(o.batch_start - submitted[i]).count();
    result.queue_us = std::max(result.queue_us, queue_us);
    result.inference_us = std::max(result.inference_us, o.inference_us);
    result.embeddings.push_back(std::move(o.values));
    result.indices.push_back(std::move(o.indices));
  }
  done(std::move(result));
}

void Pending::Fail(absl::Status status) {
  std::vector<RequestId> to_cancel;
  {
    MutexLock lock(&mu);
    if (!error.ok()) return;
    error = std::move(status);
    to_cancel = ids;
  }
  for (RequestId id : to_cancel) cancel(id);  // may call back here: lock released
}

}  // namespace tokenbatch::server
