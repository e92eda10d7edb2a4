// Helpers shared by the batch engine's step tests: an engine in manual mode (no
// threads) and submits that tell the FakeRunner each record's token count.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "runtime/engine/batch_engine_impl.h"
#include "runtime/engine/fake_runner.h"

namespace tokenbatch::engine::testing {

// Sum cost, fifo, a budget of 100 tokens, at most 4 per batch, a 4 ms window,
// dispatch early only when full.
inline BatcherOptions SmallOptions() {
  BatcherOptions o;
  o.scheduler.cost_model = CostModel::Sum();
  o.scheduler.policy = PackingPolicy::kFifo;
  o.scheduler.max_batch_tokens = 100;
  o.scheduler.max_batch_size = 4;
  o.scheduler.max_wait = std::chrono::milliseconds(4);
  o.scheduler.early_dispatch_fraction = 1.0;
  return o;
}

inline std::unique_ptr<BatchEngineImpl> MakeEngine(const BatcherOptions& options, FakeClient& client) {
  auto engine = BatchEngineImpl::Make(options, client);
  EXPECT_TRUE(engine.ok()) << engine.status();
  return engine.ok() ? std::move(*engine) : nullptr;
}

// Submits through the intake at `now`; the id, or 0 if refused.
inline RequestId SubmitAt(BatchEngineImpl& engine, FakeRunner& runner, TimePoint now, std::int64_t tokens,
                          int priority = 0) {
  absl::StatusOr<RequestId> id = engine.SubmitAt(now, tokens, {priority, std::nullopt}, [](RequestId) {});
  if (!id.ok()) return 0;
  runner.tokens_of[*id] = tokens;
  return *id;
}

// Submits a planned request (a deadline, or windows from PlanWindows) at `now`;
// `scheduled` gets its scheduled ids. 0 if refused.
inline RequestId SubmitPlannedAt(BatchEngineImpl& engine, FakeRunner& runner, TimePoint now,
                                 const std::vector<TokenWindow>& windows, const SubmitOptions& options,
                                 std::vector<RequestId>* scheduled = nullptr) {
  absl::StatusOr<RequestId> id =
      engine.SubmitPlannedAt(now, windows, options, runner, [&](RequestId, std::span<const RequestId> ids) {
        for (std::size_t i = 0; i < ids.size(); ++i) runner.tokens_of[ids[i]] = windows[i].size();
        if (scheduled != nullptr) scheduled->assign(ids.begin(), ids.end());
      });
  return id.ok() ? *id : 0;
}

inline TimePoint T0() { return TimePoint{} + std::chrono::hours(1); }
inline TimePoint Ms(double ms) {
  return T0() + std::chrono::duration_cast<Duration>(std::chrono::duration<double, std::milli>(ms));
}

}  // namespace tokenbatch::engine::testing
