// Property tests of DeviceMemoryBudget: random models (weights, guarantees,
// largest batches) and random sequences of batches starting, waiting and
// ending. Checked after every step: the bytes in flight never pass the limit,
// the guarantees stay covered (Σ max(in_flight, guaranteed) <= limit), a model
// can always start a batch within its unused guarantee; and once every batch has
// ended, some waiting model can start (no model waits forever).
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <vector>

#include "tokenbatch/core/device_memory_budget.h"

namespace tokenbatch {
namespace {

struct Step {
  int kind = 0;        // 0, 1: a model tries to start a batch; 2: a running batch ends
  std::size_t model = 0;
  std::int64_t permille = 0;  // the batch's size as a fraction of the model's largest batch
  std::size_t pick = 0;       // which running batch ends
};

void CheckInvariants(const DeviceMemoryBudget& b) {
  std::int64_t covered = 0;
  for (std::size_t m = 0; m < b.models(); ++m) {
    covered += std::max(b.in_flight(m), b.share(m).guaranteed_bytes);
    const std::int64_t unused = std::max<std::int64_t>(0, b.share(m).guaranteed_bytes - b.in_flight(m));
    RC_ASSERT(b.Allowance(m) >= unused);
  }
  RC_ASSERT(covered <= b.limit_bytes());
  RC_ASSERT(b.in_flight_total() <= b.limit_bytes());
}

RC_GTEST_PROP(DeviceMemoryBudgetProperty, NeverPassesTheLimitAndNoModelWaitsForever, ()) {
  const std::int64_t limit = *rc::gen::inRange<std::int64_t>(100, 10000);
  const auto models = *rc::gen::inRange<std::size_t>(1, 5);
  DeviceMemoryBudgetOptions options{.limit_bytes = limit};
  std::int64_t guaranteed_left = limit / 2;
  for (std::size_t m = 0; m < models; ++m) {
    ModelMemoryShare share{.name = "m" + std::to_string(m),
                           .weight = *rc::gen::inRange(1, 10) / 2.0,
                           .guaranteed_bytes = *rc::gen::inRange<std::int64_t>(0, guaranteed_left / 2 + 1)};
    guaranteed_left -= share.guaranteed_bytes;
    options.models.push_back(share);
  }
  std::int64_t guaranteed = 0;
  for (const ModelMemoryShare& s : options.models) guaranteed += s.guaranteed_bytes;
  for (ModelMemoryShare& s : options.models) {
    const std::int64_t room = limit - (guaranteed - s.guaranteed_bytes);
    s.largest_batch_bytes = *rc::gen::inRange<std::int64_t>(1, room + 1);
  }
  absl::StatusOr<DeviceMemoryBudget> created = DeviceMemoryBudget::Create(options);
  RC_ASSERT(created.ok());
  DeviceMemoryBudget& b = *created;

  const auto steps = *rc::gen::container<std::vector<Step>>(rc::gen::build<Step>(
      rc::gen::set(&Step::kind, rc::gen::inRange(0, 3)), rc::gen::set(&Step::model, rc::gen::inRange<std::size_t>(0, 5)),
      rc::gen::set(&Step::permille, rc::gen::inRange<std::int64_t>(1, 1001)),
      rc::gen::set(&Step::pick, rc::gen::inRange<std::size_t>(0, 64))));
  std::vector<std::pair<std::size_t, std::int64_t>> running;
  for (const Step& s : steps) {
    if (s.kind < 2) {
      const std::size_t m = s.model % models;
      const std::int64_t bytes = std::max<std::int64_t>(1, options.models[m].largest_batch_bytes * s.permille / 1000);
      if (bytes <= b.Allowance(m)) {
        b.Acquire(m, bytes);
        running.emplace_back(m, bytes);
      } else {
        b.Wait(m, bytes);
      }
    } else if (!running.empty()) {
      const auto [m, bytes] = running[s.pick % running.size()];
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(s.pick % running.size()));
      b.Release(m, bytes);
    }
    CheckInvariants(b);
  }
  for (const auto& [m, bytes] : running) b.Release(m, bytes);
  bool waiting = false;
  for (std::size_t m = 0; m < models; ++m) waiting = waiting || b.need(m).has_value();
  if (waiting) RC_ASSERT(!b.Satisfiable().empty());
  // And the waiters, served one at a time as they become satisfiable, all start.
  for (std::size_t served = 0; served < models; ++served) {
    const std::vector<std::size_t> ready = b.Satisfiable();
    if (ready.empty()) break;
    const std::size_t m = ready.front();
    const std::int64_t need = *b.need(m);
    b.Acquire(m, need);
    CheckInvariants(b);
    b.Release(m, need);
  }
  for (std::size_t m = 0; m < models; ++m) RC_ASSERT(!b.need(m).has_value());
}

}  // namespace
}  // namespace tokenbatch
