// SchedulerOptions: the limits and policies of the token-budget scheduler.
//
// One options struct, every field documented with its unit and default. The
// defaults fit a padded encoder backend (libtorch/TorchScript) serving mixed
// embedding traffic. Validate() checks a struct before use; the Scheduler refuses
// invalid options. Plain value type: copy freely, no thread-safety concerns.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tokenbatch/core/cost_model.h"
#include "tokenbatch/core/enum_names.h"
#include "tokenbatch/core/request.h"

namespace tokenbatch {

// How queued requests are chosen for the next batch. Every policy puts the oldest
// request of the highest non-empty priority level into the next batch it forms
// (the anchor), so no request starves within its level.
enum class PackingPolicy {
  // The seed's greedy packing: take requests in arrival order until the next one
  // would exceed the budget or max_batch_size. The baseline.
  // Waiting bound: a request is in one of the first k+1 batches dispatched after
  // it arrives, k = requests of its level queued before it.
  kFifo,
  // Length buckets (bucket_bounds): a batch holds one bucket's requests, in
  // arrival order. When the anchor's bucket cannot fill a batch yet, a full batch
  // of another bucket may go first.
  // Waiting bound: once a request is the oldest of its level, it is dispatched by
  // the first decision at or after arrival + max_wait that finds a worker free.
  kBucketed,
  // The default: the anchor plus the queued requests of its level whose lengths
  // are closest to the anchor's, nearest first, while the cost fits. Similar
  // lengths keep padding low under the padded and memory cost models. The anchor
  // is the request with the earliest virtual deadline, arrival +
  // anchor_slack_per_token × tokens (with slack 0: the oldest request).
  // Waiting bound: a request r is in one of the first k+1 batches dispatched
  // after it arrives, k = the requests of its level queued before it plus those
  // arriving later with an earlier virtual deadline, which all arrive before
  // arrival_r + slack × tokens_r. With slack 0 this is kFifo's bound.
  kLengthAware,
};

// What to do with a request whose own cost exceeds the budget, or whose tokens
// exceed max_input_tokens.
enum class OversizePolicy {
  kReject,    // fail at submit with Oversize, naming the token count and the limit
  kTruncate,  // keep the first max_input_tokens tokens
  kSplit,     // sliding windows of max_input_tokens with split_overlap_tokens overlap;
              // the windows are scheduled as independent requests and merged
};

struct SchedulerOptions {
  // The unit of max_batch_tokens. Default: padded (B × Lmax), the cost a padded
  // backend really pays.
  CostModel cost_model = CostModel::Padded();
  // The batch budget in the cost model's unit (tokens; bytes for `memory`).
  // Boundary inclusive: a batch whose cost == budget fits. The seed's value.
  std::int64_t max_batch_tokens = 4096;
  // Most requests in one batch (the seed's 64).
  std::int64_t max_batch_size = 64;
  // Longest time the oldest request of a forming batch waits for company before
  // the batch is dispatched anyway (the seed's 4 ms); with adaptive_wait, a
  // batch awaiting the returns of clients answered after its oldest request
  // arrived may wait until max_wait after that answer. 0 = never wait.
  Duration max_wait = std::chrono::milliseconds(4);
  // The adaptive batching window: with a learned latency model passed to Next
  // (DecisionContext::latency_model), a batch that is not full waits only while
  // the requests expected to arrive gain more from sharing its per-batch time
  // than its queued requests lose by waiting (rule and derivation in
  // src/core/adaptive_wait.h). The requests expected are those of the recent
  // arrival rate, and the returns of closed-loop clients the driver reports
  // answered (Scheduler::OnAnswered). Never longer than max_wait after the
  // oldest request's arrival or, for those returns, after their answer. Without a model,
  // or when false, a batch that is not full waits max_wait (the seed's fixed
  // window).
  bool adaptive_wait = true;
  // adaptive_wait only: the arrival rate is measured over a sliding exponential
  // window of this length. > 0. Long enough to span many batches of a loaded
  // server, short enough to follow a change of load within a fraction of a
  // second.
  Duration arrival_rate_window = std::chrono::milliseconds(100);
  // Dispatch without waiting once cost >= fraction × budget (the seed's 0.9).
  // In (0, 1].
  double early_dispatch_fraction = 0.9;
  PackingPolicy policy = PackingPolicy::kLengthAware;
  // kBucketed only: ascending upper bounds (inclusive, tokens) of the length
  // buckets; lengths above the last bound share one last bucket.
  std::vector<std::int64_t> bucket_bounds = {16, 32, 64, 128, 256, 512, 1024, 2048, 4096};
  // kLengthAware only: at most this many candidates are examined per batch beyond
  // the anchor, which bounds a decision's work at O(lookahead · log n).
  std::int64_t length_aware_lookahead = 512;
  // kLengthAware only: "shortest first with aging". The anchor of the next batch
  // is the request with the earliest virtual deadline arrival + this × tokens
  // (ties: the earlier enqueued), not the oldest. A short query that arrives
  // behind queued long passages then anchors the next batch (and the length-aware
  // packing fills it with other short requests) instead of waiting for every
  // older passage; a long request's priority still grows with age, so it is
  // never starved.
  // Waiting bound (PackingPolicy::kLengthAware; proved by
  // SchedulerPropertyTest): a request can only be passed over, as an anchor, by
  // requests queued before it or arriving before its own virtual deadline, so it
  // waits at most as many batches as a FIFO request arriving at arrival +
  // slack × tokens would, i.e. the FIFO bound plus its own slack.
  // max_wait still counts from the oldest request: when it has waited max_wait,
  // a worker that is free dispatches the anchor's batch at once.
  // >= 0; 0 = the oldest request is the anchor (kFifo's order). Default 100 µs
  // per token: a 20-token query may overtake a 300-token passage that arrived up
  // to 28 ms before it (about half a 4,096-token batch on an A10G); the window
  // in which later arrivals may overtake a request is at most 100 µs ×
  // max_input_tokens (0.41 s at 4,096). Measured in docs/benchmarks.md ("Short
  // requests under mixed load"). Cost: while > 0 the queue keeps one more
  // ordered index (one more O(log n) insert and erase per request).
  Duration anchor_slack_per_token = std::chrono::microseconds(100);
  // kLengthAware only: a candidate is not added if the batch's padding efficiency
  // (Σ tokens / B·Lmax) would fall below this, so every length-aware batch keeps
  // at least this efficiency. Why: without it a batch anchored by a short query
  // is topped up with long passages while the budget allows, and the query then
  // takes as long as a full batch of passages (and pads to their length).
  // In [0, 1); 0 = no floor. Default 0.85 (measured in docs/benchmarks.md).
  double length_aware_min_padding_efficiency = 0.85;
  // Longest request accepted as is, in tokens. 0 = derived: the largest length
  // whose single-request cost fits max_batch_tokens.
  std::int64_t max_input_tokens = 0;
  OversizePolicy oversize = OversizePolicy::kReject;
  // kSplit only: tokens shared by consecutive windows (< the window size).
  std::int64_t split_overlap_tokens = 32;
  // Backpressure: most requests queued at once (after splitting). 0 = unlimited.
  std::size_t max_queue_size = 65536;
  // Backpressure: most tokens queued at once. 0 = unlimited.
  std::int64_t max_queued_tokens = 0;
};

// Checks every field. Errors: InvalidArgument naming the first bad field and value.
[[nodiscard]] absl::Status Validate(const SchedulerOptions& options);

// The effective max_input_tokens: the option if set, else the largest length whose
// single-request cost fits max_batch_tokens, and never more than that length.
[[nodiscard]] std::int64_t EffectiveMaxInputTokens(const SchedulerOptions& options);

// The names of flags, logs and JSON.
inline constexpr EnumNames<PackingPolicy, 4> kPackingPolicyNames{
    "packing policy",
    {{{PackingPolicy::kFifo, "fifo"},
      {PackingPolicy::kBucketed, "bucketed"},
      {PackingPolicy::kLengthAware, "length_aware"},
      {PackingPolicy::kLengthAware, "length-aware", /*alias=*/true}}}};
inline constexpr EnumNames<OversizePolicy, 3> kOversizePolicyNames{
    "oversize policy",
    {{{OversizePolicy::kReject, "reject"}, {OversizePolicy::kTruncate, "truncate"}, {OversizePolicy::kSplit, "split"}}}};

// How long a batch that is not full waits for company: SchedulerOptions::
// adaptive_wait true (kAdaptive) or false (kFixed: always max_wait). The
// command line's --batch-window.
enum class BatchWindow { kAdaptive, kFixed };
inline constexpr EnumNames<BatchWindow, 2> kBatchWindowNames{
    "batch window", {{{BatchWindow::kAdaptive, "adaptive"}, {BatchWindow::kFixed, "fixed"}}}};

// The tables' Name and Parse (Parse's errors: InvalidArgument listing the
// accepted names).
[[nodiscard]] constexpr std::string_view PackingPolicyName(PackingPolicy policy) {
  return kPackingPolicyNames.Name(policy);
}
[[nodiscard]] constexpr std::string_view OversizePolicyName(OversizePolicy policy) {
  return kOversizePolicyNames.Name(policy);
}
[[nodiscard]] inline absl::StatusOr<PackingPolicy> ParsePackingPolicy(std::string_view name) {
  return kPackingPolicyNames.Parse(name);
}
[[nodiscard]] inline absl::StatusOr<OversizePolicy> ParseOversizePolicy(std::string_view name) {
  return kOversizePolicyNames.Parse(name);
}

}  // namespace tokenbatch
