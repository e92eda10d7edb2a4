// Test doubles for the batch engine's parts: a payload table that counts what
// the engine asks of it, and an EngineContext that runs batches through a
// test-chosen rule and records every resolution, so tests check the batches and
// the outcomes step by step with a manual clock, without threads or types.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tokenbatch/core/errors.h"
#include "tokenbatch/runtime/batch_engine.h"

namespace tokenbatch::engine::testing {

// What the engine asked of the payload table.
struct FakeClient final : EngineClient {
  void GrowTo(std::size_t slots) override { grown_to.push_back(slots); }
  void Clear(RequestId id) override { cleared.push_back(id); }
  std::unique_ptr<EngineContext> NewContext() override { return nullptr; }  // tests pass their own

  std::vector<std::size_t> grown_to;
  std::vector<RequestId> cleared;
};

// How a request ended, as the facade would have delivered it.
struct Outcome {
  absl::Status status;               // OK: an output (or a merge) was delivered
  std::int64_t output = 0;           // the output: the tokens of the record that ran (sum, for a merge)
  std::vector<TokenWindow> windows;  // a merge: its windows
  bool fired = false;                // delivered by Fire (not only owed)
  bool fired_before_batch = false;   // ...while CallbackDelaysNextBatch() was true
};

// Runs each batch with `rule` (default: every input succeeds); an input's output
// is its record's token count, looked up in `tokens_of`.
class FakeRunner final : public EngineContext {
 public:
  using Rule = std::function<void(std::span<const RequestId> batch, std::span<absl::Status> statuses,
                                  absl::FunctionRef<void(std::size_t, std::size_t)> on_oom, IsolationReport& report)>;

  // The token count the engine was given for each scheduled id (tests fill it).
  std::map<RequestId, std::int64_t> tokens_of;
  Rule rule;
  std::vector<std::vector<RequestId>> batches;  // every batch loaded, in order
  std::map<RequestId, Outcome> outcomes;        // by request id
  int resolutions = 0;                          // must equal outcomes.size(): exactly once

  void LoadBatch(std::span<const RequestId> ids) override { batches.emplace_back(ids.begin(), ids.end()); }
  void RunBatch(std::span<absl::Status> statuses, absl::FunctionRef<void(std::size_t, std::size_t)> on_oom,
                IsolationReport& report) override {
    ++report.backend_calls;
    if (rule) rule(batches.back(), statuses, on_oom, report);
  }
  void Resolve(RequestId request, absl::Status error) override { Owe(request, {std::move(error)}); }
  void ResolveWithOutput(RequestId request, std::size_t batch_index) override {
    Owe(request, {absl::OkStatus(), tokens_of[batches.back()[batch_index]]});
  }
  void StoreWindowOutput(RequestId request, std::uint32_t window, std::size_t batch_index) override {
    window_outputs_[request][window] = tokens_of[batches.back()[batch_index]];
  }
  void ResolveMerged(RequestId request, std::span<const TokenWindow> windows) override {
    std::int64_t sum = 0;
    for (const auto& [w, out] : window_outputs_[request]) sum += out;
    Owe(request, {absl::OkStatus(), sum, {windows.begin(), windows.end()}});
  }
  bool HasCompletions() const override { return !owed_.empty(); }
  void Fire() override {
    for (RequestId id : owed_) {
      outcomes[id].fired = true;
      outcomes[id].fired_before_batch = CallbackDelaysNextBatch();
    }
    owed_.clear();
  }

  // The status a request ended with (Unknown "unresolved" if it has not).
  absl::Status StatusOf(RequestId id) const {
    auto it = outcomes.find(id);
    return it == outcomes.end() ? absl::UnknownError("unresolved") : it->second.status;
  }

 private:
  void Owe(RequestId request, Outcome outcome) {
    ++resolutions;
    outcomes[request] = std::move(outcome);
    owed_.push_back(request);
  }
  std::vector<RequestId> owed_;
  std::map<RequestId, std::map<std::uint32_t, std::int64_t>> window_outputs_;
};

}  // namespace tokenbatch::engine::testing
