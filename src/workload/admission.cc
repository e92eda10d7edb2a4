#include "tokenbatch/workload/admission.h"

#include "absl/strings/str_cat.h"
#include "tokenbatch/core/admission.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::workload {

absl::StatusOr<AdmittedWorkload> Admit(const std::vector<WorkloadRequest>& requests, const InputLimit& limit) {
  if (limit.max_input_tokens < 1) {
    return InvalidArgumentError(absl::StrCat("max_input_tokens must be >= 1, got ", limit.max_input_tokens));
  }
  if (limit.oversize == OversizePolicy::kSplit) {
    return InvalidArgumentError("bench and simulate model --oversize truncate and reject, not split");
  }
  // The limit alone decides: the sum cost model with a budget of the limit makes
  // EffectiveMaxInputTokens exactly max_input_tokens, whatever the policies' budgets.
  SchedulerOptions options;
  options.cost_model = CostModel::Sum();
  options.max_batch_tokens = limit.max_input_tokens;
  options.max_input_tokens = limit.max_input_tokens;
  options.oversize = limit.oversize;
  AdmittedWorkload out;
  out.tokens.reserve(requests.size());
  for (const WorkloadRequest& r : requests) {
    if (r.tokens < 1) return InvalidArgumentError(absl::StrCat("request ", r.id, " has tokens < 1"));
    absl::StatusOr<AdmissionPlan> plan = PlanAdmission(r.tokens, options);
    if (!plan.ok()) {
      if (GetErrorKind(plan.status()) != ErrorKind::kOversize) return plan.status();
      out.tokens.push_back(0);
      ++out.rejected;
      continue;
    }
    const TokenWindow& w = plan->windows.front();
    out.tokens.push_back(w.size());
    out.truncated += plan->action == AdmissionPlan::Action::kTruncate ? 1 : 0;
  }
  return out;
}

std::vector<WorkloadRequest> AdmittedRequests(const std::vector<WorkloadRequest>& requests,
                                              const AdmittedWorkload& admitted) {
  std::vector<WorkloadRequest> out;
  for (std::size_t i = 0; i < requests.size() && i < admitted.tokens.size(); ++i) {
    if (admitted.tokens[i] == 0) continue;
    out.push_back(requests[i]);
    out.back().tokens = admitted.tokens[i];
  }
  return out;
}

}  // namespace tokenbatch::workload
