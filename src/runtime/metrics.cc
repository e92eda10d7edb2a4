#include "tokenbatch/runtime/metrics.h"

namespace tokenbatch {

std::string_view DispatchReasonName(DispatchReason reason) {
  switch (reason) {
    case DispatchReason::kNone: return "none";
    case DispatchReason::kBudgetFull: return "budget_full";
    case DispatchReason::kMaxBatchSize: return "max_batch_size";
    case DispatchReason::kEarlyDispatch: return "early_dispatch";
    case DispatchReason::kMaxWait: return "max_wait";
    case DispatchReason::kNoGainInWaiting:
      return "no_gain_in_waiting";
    case DispatchReason::kDrain: return "drain";
  }
  return "none";
}

void MetricsRecorder::OnResolved(const absl::Status& status) {
  if (status.ok()) {
    ++m_.requests_succeeded;
  } else {
    OnRefused(GetErrorKind(status));
  }
}

void MetricsRecorder::OnDispatch(const Decision& d, std::int64_t budget) {
  ++m_.batches_dispatched;
  ++m_.dispatch_reasons[std::string(DispatchReasonName(d.reason))];
  m_.batch_size.Observe(static_cast<double>(d.shape.size));
  m_.batch_tokens.Observe(static_cast<double>(d.shape.sum_tokens));
  m_.batch_cost.Observe(static_cast<double>(d.cost));
  m_.fill_ratio.Observe(budget > 0 ? static_cast<double>(d.cost) / static_cast<double>(budget) : 0);
  m_.padding_efficiency.Observe(d.shape.padding_efficiency());
}

void MetricsRecorder::OnBatchDone(double exec_microseconds, std::uint64_t retries, std::uint64_t ooms) {
  m_.batch_exec_us.Observe(exec_microseconds);
  m_.isolation_retries += retries;
  m_.oom_events += ooms;
}

MetricsSnapshot MetricsRecorder::Snapshot(std::uint64_t queue_requests, std::int64_t queue_tokens,
                                          std::int64_t max_batch_tokens, std::int64_t effective_budget) const {
  MetricsSnapshot s = m_;
  s.queue_requests = queue_requests;
  s.queue_tokens = queue_tokens;
  s.max_batch_tokens = max_batch_tokens;
  s.effective_budget = effective_budget;
  return s;
}

}  // namespace tokenbatch
