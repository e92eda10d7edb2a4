// Batcher metrics: what the runtime did, as one copyable snapshot.
//
// MetricsRecorder is filled by the Batcher under its mutex (not thread-safe on
// its own); Batcher::metrics() returns a MetricsSnapshot copy, which servers
// export (Prometheus text on /metrics) and benchmarks print. Units are in the
// field names: _us is microseconds, tokens are tokens, cost is the cost model's
// unit (tokens or bytes).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tokenbatch/core/batch_latency_model.h"
#include "tokenbatch/core/cost_model.h"
#include "tokenbatch/core/errors.h"
#include "tokenbatch/core/scheduler.h"
#include "tokenbatch/runtime/histogram.h"

namespace tokenbatch {

struct MetricsSnapshot {
  // Queue depth now (core requests: a split request counts once per window).
  std::uint64_t queue_requests = 0;
  std::int64_t queue_tokens = 0;
  // Budget in the cost model's unit: the configured one and the AIMD-effective one.
  std::int64_t max_batch_tokens = 0;
  std::int64_t effective_budget = 0;

  std::uint64_t requests_submitted = 0;  // user requests accepted by Submit
  std::uint64_t requests_succeeded = 0;  // user requests resolved with a result
  // User requests resolved with an error or refused at submit, by ErrorKindName:
  // "queue_full", "oversize", "invalid_argument", "shutting_down" (refused at submit
  // or failed by shutdown), "deadline_exceeded", "cancelled", "out_of_memory", "backend".
  std::map<std::string, std::uint64_t> failures_by_kind;

  std::uint64_t batches_dispatched = 0;
  // Batches by DispatchReason name ("budget_full", "max_batch_size", ...).
  std::map<std::string, std::uint64_t> dispatch_reasons;
  std::uint64_t isolation_retries = 0;  // backend calls made to bisect a failed batch
  std::uint64_t oom_events = 0;         // backend calls that failed with OutOfMemory
  // The learned batch latency (adaptive batching window): one per worker, or
  // with BatcherOptions::intra_op one per forward width (narrow, then wide; see
  // learned_latency_threads); all zeros until a few batches have run.
  std::vector<BatchLatencyModel> learned_latency;
  // With intra_op: the threads of each learned_latency entry's forwards (1, then
  // the cores); empty otherwise (the entries are the workers').
  std::vector<int> learned_latency_threads;

  Histogram batch_size = Histogram::PowersOfTwo(1024);            // requests per batch
  Histogram batch_tokens = Histogram::PowersOfTwo(1 << 20);       // real tokens per batch
  Histogram batch_cost = Histogram::PowersOfTwo(double(1LL << 40));  // cost units per batch
  Histogram fill_ratio = Histogram::Ratio();          // cost / effective budget
  Histogram padding_efficiency = Histogram::Ratio();  // real / padded tokens
  Histogram queue_wait_us = Histogram::Exponential(10, 2, 20);   // arrival -> dispatch
  Histogram batch_exec_us = Histogram::Exponential(10, 2, 24);   // backend time incl. retries
};

// "budget_full", "max_batch_size", "early_dispatch", "max_wait", "no_gain_in_waiting",
// "drain", "none".
[[nodiscard]] std::string_view DispatchReasonName(DispatchReason reason);

class MetricsRecorder {
 public:
  void OnSubmitted() { ++m_.requests_submitted; }
  void OnRefused(ErrorKind kind) { ++m_.failures_by_kind[std::string(ErrorKindName(kind))]; }
  void OnResolved(const absl::Status& status);
  // One batch dispatched with `budget` as the effective budget.
  void OnDispatch(const Decision& decision, std::int64_t budget);
  void OnQueueWait(double microseconds) { m_.queue_wait_us.Observe(microseconds); }
  void OnBatchDone(double exec_microseconds, std::uint64_t retries, std::uint64_t ooms);

  // A copy with the queue and budget gauges filled in.
  [[nodiscard]] MetricsSnapshot Snapshot(std::uint64_t queue_requests, std::int64_t queue_tokens,
                                         std::int64_t max_batch_tokens, std::int64_t effective_budget) const;

 private:
  MetricsSnapshot m_;
};

}  // namespace tokenbatch
