#include "tokenbatch/runtime/shared_device_memory.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch {

absl::StatusOr<std::shared_ptr<SharedDeviceMemory>> SharedDeviceMemory::Create(DeviceMemoryBudgetOptions options) {
  absl::StatusOr<DeviceMemoryBudget> budget = DeviceMemoryBudget::Create(std::move(options));
  if (!budget.ok()) return budget.status();
  return std::shared_ptr<SharedDeviceMemory>(new SharedDeviceMemory(*std::move(budget)));
}

SharedDeviceMemory::SharedDeviceMemory(DeviceMemoryBudget budget)
    : models_(budget.models()), budget_(std::move(budget)), wakers_(models_) {}

void SharedDeviceMemory::Decide(std::size_t model, absl::FunctionRef<Take(std::int64_t allowance)> decide) {
  MutexLock lock(&mu_);
  const std::int64_t reserved = budget_.need(model).value_or(0);
  const Take take = decide(budget_.Allowance(model));
  if (take.acquire > 0) {
    budget_.Acquire(model, take.acquire);
  } else if (take.need > 0) {
    budget_.Wait(model, take.need);
  } else {
    budget_.StopWaiting(model);
  }
  // A reserve that shrank (a smaller anchor, or a batch smaller than the need
  // it waited with) may let the models behind it fit now.
  if (reserved > 0 && (take.acquire > 0 || take.need < reserved)) WakeSatisfiedLocked();
}

void SharedDeviceMemory::Release(std::size_t model, std::int64_t bytes) {
  MutexLock lock(&mu_);
  budget_.Release(model, bytes);
  WakeSatisfiedLocked();
}

void SharedDeviceMemory::Detach(std::size_t model) {
  MutexLock lock(&mu_);
  wakers_[model] = nullptr;
  if (budget_.need(model)) {
    budget_.StopWaiting(model);
    WakeSatisfiedLocked();
  }
}

absl::Status SharedDeviceMemory::Attach(std::size_t model, std::function<void()> wake) {
  MutexLock lock(&mu_);
  if (model >= models_) {
    return InvalidArgumentError(absl::StrCat("device_memory.model ", model, " is not one of the device's ", models_,
                                             " models"));
  }
  if (wakers_[model]) {
    return InvalidArgumentError(absl::StrCat("model ", budget_.share(model).name,
                                             " of the shared device memory already has a Batcher"));
  }
  wakers_[model] = std::move(wake);
  return absl::OkStatus();
}

void SharedDeviceMemory::WakeSatisfiedLocked() {
  for (std::size_t m : budget_.Satisfiable()) {
    if (wakers_[m]) wakers_[m]();
  }
}

std::int64_t SharedDeviceMemory::MostBytesFor(std::size_t model) const {
  MutexLock lock(&mu_);
  std::int64_t others = 0;
  for (std::size_t m = 0; m < models_; ++m) {
    if (m != model) others += budget_.share(m).guaranteed_bytes;
  }
  return budget_.limit_bytes() - others;
}

SharedDeviceMemory::Snapshot SharedDeviceMemory::snapshot() const {
  MutexLock lock(&mu_);
  Snapshot s{.limit_bytes = budget_.limit_bytes(),
             .in_flight_bytes = budget_.in_flight_total(),
             .peak_in_flight_bytes = budget_.peak_in_flight_total()};
  for (std::size_t m = 0; m < models_; ++m) {
    const ModelMemoryShare& share = budget_.share(m);
    s.models.push_back(ModelState{.name = share.name,
                                  .weight = share.weight,
                                  .guaranteed_bytes = share.guaranteed_bytes,
                                  .in_flight_bytes = budget_.in_flight(m),
                                  .waiting_for_bytes = budget_.need(m).value_or(0),
                                  .waits = budget_.waits(m)});
  }
  return s;
}

}  // namespace tokenbatch
