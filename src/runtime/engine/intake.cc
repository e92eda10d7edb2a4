#include "runtime/engine/intake.h"

#include <utility>

#include "tokenbatch/core/admission.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::engine {
namespace {

absl::Status ShuttingDown() { return ShuttingDownError("batcher is shutting down; request not accepted"); }

// Every slot of the slab is live: refused like a full queue.
absl::Status SlabFull() { return QueueFullError("queue full: 67,108,864 requests unresolved (the Batcher's limit)"); }

}  // namespace

absl::Status Intake::CheckAcceptingLocked(std::size_t requests, std::int64_t tokens) const {
  if (!accepting_) return ShuttingDown();
  return CheckQueueCapacity(options_, scheduled_requests_ + intake_.size(), scheduled_tokens_ + intake_tokens_,
                            requests, tokens);
}

std::optional<RequestId> Intake::AllocateLocked() {
  // The payload table covers a chunk before the slab hands out its first slot,
  // and a failure to grow it (bad_alloc) leaves the slab as it was.
  if (slab_.free_slots() == 0) client_.GrowTo(slab_.capacity() + RequestSlab<EngineRecord>::kChunkSize);
  return slab_.Allocate();
}

absl::StatusOr<RequestId> Intake::Submit(std::int64_t tokens, int priority, TimePoint now,
                                         absl::FunctionRef<void(RequestId)> fill, bool* wake) {
  MutexLock lock(&mu_);
  if (absl::Status s = CheckAcceptingLocked(1, tokens); !s.ok()) return s;
  const std::optional<RequestId> id = AllocateLocked();
  if (!id) return SlabFull();
  Stamp(slab_.Get(*id), priority, tokens, now);
  fill(*id);
  intake_.push_back(*id);
  intake_tokens_ += tokens;
  ++submitted_;
  *wake = sleeping_workers_ > 0 && !wake_signalled_ && wake_rule_.OnArrival(tokens, priority, now);
  if (*wake) wake_signalled_ = true;
  return *id;
}

absl::StatusOr<RequestId> Intake::AllocatePlannedLocked(Mutex& /*engine_mu*/, std::span<const TokenWindow> windows,
                                                        int priority, TimePoint now, std::vector<RequestId>& scheduled,
                                                        bool* wake) {
  MutexLock lock(&mu_);
  std::int64_t total_tokens = 0;
  for (const TokenWindow& w : windows) total_tokens += w.size();
  if (absl::Status s = CheckAcceptingLocked(windows.size(), total_tokens); !s.ok()) return s;
  const bool split = windows.size() > 1;
  scheduled.clear();
  RequestId request = 0;
  // Gives back what this call took: on a full slab, or if growing the payload
  // table throws.
  auto release_taken = [&] {
    if (request != 0 && split) scheduled.push_back(request);
    for (RequestId r : scheduled) slab_.Get(r).id = 0, slab_.Release(r);
    scheduled.clear();
  };
  try {
    for (std::size_t i = 0; i < windows.size() + (split ? 1 : 0); ++i) {
      const std::optional<RequestId> slot = AllocateLocked();
      if (!slot) {
        release_taken();
        return SlabFull();
      }
      if (request == 0) {
        request = *slot;
        if (!split) scheduled.push_back(request);
      } else {
        scheduled.push_back(*slot);
      }
    }
  } catch (...) {
    release_taken();
    throw;
  }
  scheduled_requests_ += windows.size();  // published now, before the Scheduler has them
  scheduled_tokens_ += total_tokens;
  ++submitted_;
  // A sleeping worker's rule must count these too, or a later intake arrival that
  // fills the batch together with them would not wake it.
  *wake = false;
  for (const TokenWindow& w : windows) {
    if (sleeping_workers_ > 0 && !wake_signalled_) *wake = wake_rule_.OnArrival(w.size(), priority, now) || *wake;
  }
  return request;
}

void Intake::PublishCountsLocked(const Scheduler& scheduler, std::size_t settling_requests,
                                 std::int64_t settling_tokens, std::vector<RequestId>& released) {
  scheduled_requests_ = scheduler.queued_requests() + settling_requests;
  scheduled_tokens_ = scheduler.queued_tokens() + settling_tokens;
  for (RequestId id : released) slab_.Release(id);
  released.clear();
}

void Intake::TakeAllLocked(Mutex& /*engine_mu*/, const Scheduler& scheduler, std::vector<RequestId>& released,
                           std::vector<RequestId>& out) {
  MutexLock lock(&mu_);
  out.swap(intake_);
  // The settling requests count as queued until the Scheduler has them.
  PublishCountsLocked(scheduler, out.size(), intake_tokens_, released);
  intake_tokens_ = 0;
}

bool Intake::PublishLocked(Mutex& /*engine_mu*/, const Scheduler& scheduler, std::vector<RequestId>& released) {
  MutexLock lock(&mu_);
  PublishCountsLocked(scheduler, 0, 0, released);
  if (sleeping_workers_ == 0 || wake_signalled_) return false;
  // The queue changed under the sleepers (a dispatch, cancel or expiry), so their
  // snapshot is stale: e.g. a worker asleep on an empty queue would otherwise
  // judge the next arrival against requests that are gone. Take a new one and
  // replay what is already in the intake against it.
  wake_rule_ = scheduler.WakeRuleForArrivals();
  bool wake = false;
  for (RequestId id : intake_) {
    const EngineRecord& r = slab_.Get(id);
    if (wake_rule_.OnArrival(r.tokens, r.priority, r.arrival)) {
      wake = true;
      break;
    }
  }
  wake_signalled_ = wake;
  return wake;
}

void Intake::SleepLocked(Mutex& engine_mu, const Scheduler& scheduler, std::optional<TimePoint> wake_at,
                         bool first_worker) {
  mu_.Lock();
  if (!intake_.empty() || wake_signalled_ || (first_worker && first_signalled_)) {
    wake_signalled_ = false;
    if (first_worker) first_signalled_ = false;
    mu_.Unlock();
    return;
  }
  // Arrivals from now on are judged against this snapshot (the core's own rule).
  wake_rule_ = scheduler.WakeRuleForArrivals();
  ++sleeping_workers_;
  if (first_worker) first_sleeping_ = true;
  engine_mu.Unlock();
  std::condition_variable& cv = first_worker ? first_cv_ : wake_cv_;
  if (wake_at) {
    mu_.WaitUntil(cv, *wake_at);
  } else {
    mu_.Wait(cv);
  }
  --sleeping_workers_;
  wake_signalled_ = false;
  if (first_worker) first_sleeping_ = first_signalled_ = false;
  mu_.Unlock();
  engine_mu.Lock();
}

std::condition_variable& Intake::ChooseSleeperLocked() {
  if (!first_sleeping_) return wake_cv_;
  first_sleeping_ = false;  // the next wake-up goes to another sleeper
  return first_cv_;
}

void Intake::NotifyOne() {
  std::condition_variable* cv = nullptr;
  {
    MutexLock lock(&mu_);
    cv = &ChooseSleeperLocked();
  }
  cv->notify_one();
}

void Intake::Signal() {
  std::condition_variable* cv = nullptr;
  {
    MutexLock lock(&mu_);
    wake_signalled_ = true;  // SleepLocked returns at once while it is set
    cv = &ChooseSleeperLocked();
  }
  cv->notify_one();
}

void Intake::WakeOne() {
  // Only a sleeping worker needs it: any other one decides again before it
  // sleeps, and the caller has already changed what it will see.
  std::condition_variable* cv = nullptr;
  {
    MutexLock lock(&mu_);
    if (sleeping_workers_ == 0) return;
    wake_signalled_ = true;
    cv = &ChooseSleeperLocked();
  }
  cv->notify_one();
}

void Intake::WakeFirst() {
  {
    MutexLock lock(&mu_);
    first_signalled_ = true;  // worker 0's next SleepLocked returns at once
    first_sleeping_ = false;
  }
  first_cv_.notify_one();
}

void Intake::WakeAll() {
  {
    MutexLock lock(&mu_);
    wake_signalled_ = true;
    first_signalled_ = true;
  }
  wake_cv_.notify_all();
  first_cv_.notify_all();
}

void Intake::Close() {
  MutexLock lock(&mu_);
  accepting_ = false;
}

bool Intake::IsLiveRequest(RequestId id) {
  MutexLock lock(&mu_);  // Find reads a slot a submit may be stamping
  const EngineRecord* r = slab_.Find(id);
  return r != nullptr && r->parent == 0 && r->stage != Stage::kAbandoned;
}

std::vector<RequestId> Intake::QueuedRequests() {
  std::vector<RequestId> queued;
  MutexLock lock(&mu_);
  slab_.ForEachLive([&](const EngineRecord& r) {
    if (r.stage == Stage::kQueued) queued.push_back(r.request_id());
  });
  return queued;
}

Intake::Counts Intake::counts() const {
  MutexLock lock(&mu_);
  return {intake_.size(), intake_tokens_, submitted_, sleeping_workers_};
}

}  // namespace tokenbatch::engine
