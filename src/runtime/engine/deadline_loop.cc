// The batch engine's deadline thread: resolves requests whose deadline passes
// while they wait behind busy workers or run (their late results are dropped).
// Workers expire queued requests themselves when they decide; this thread covers
// the time in between, sleeping until the earliest deadline.
#include "runtime/engine/batch_engine_impl.h"

namespace tokenbatch::engine {

void BatchEngineImpl::DeadlineLoop(EngineContext& context) {
  mu_.Lock();
  while (true) {
    if (context.HasCompletions()) {
      PublishLocked();
      FireUnlocked(context);
      continue;
    }
    if (workers_joined_) break;  // every request is resolved by then
    if (records_.ExpireDeadlines(SteadyClock::now(), context) > 0) continue;
    const std::optional<TimePoint> first = records_.next_deadline();
    if (!first) {
      mu_.Wait(deadline_cv_);
    } else {
      // Deadlines expire strictly after they pass, as in the policy core.
      mu_.WaitUntil(deadline_cv_, *first == TimePoint::max() ? *first : *first + Duration(1));
    }
  }
  mu_.Unlock();
}

std::size_t BatchEngineImpl::StepDeadlines(EngineContext& context, TimePoint now) {
  MutexLock lock(&mu_);
  const std::size_t expired = records_.ExpireDeadlines(now, context);
  PublishLocked();
  FireUnlocked(context);
  return expired;
}

}  // namespace tokenbatch::engine
