#include "tokenbatch/core/intra_op_width.h"

#include <algorithm>
#include <cassert>

#include "absl/strings/str_cat.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch {

absl::StatusOr<IntraOpWidth> IntraOpWidth::Create(const IntraOpOptions& options) {
  if (options.cores < 1) return InvalidArgumentError(absl::StrCat("intra-op cores must be >= 1, got ", options.cores));
  if (options.narrow_hold < Duration::zero()) return InvalidArgumentError("intra-op narrow_hold must be >= 0");
  return IntraOpWidth(options);
}

void IntraOpWidth::OnWaitingForCore(TimePoint now) {
  const TimePoint until = now + options_.narrow_hold;
  narrow_until_ = narrow_until_ ? std::max(*narrow_until_, until) : until;
}

int IntraOpWidth::Predict(TimePoint now) const {
  // A wide forward runs alone (the BLAS's thread count is process-wide).
  return in_use_ == 0 && !Loaded(now) ? options_.cores : 1;
}

int IntraOpWidth::Start(TimePoint now, bool more_queued, bool may_run_wide) {
  assert(CanStart());
  if (more_queued) OnWaitingForCore(now);
  const int width = more_queued || !may_run_wide ? 1 : Predict(now);
  in_use_ += width;
  return width;
}

void IntraOpWidth::Finish(int width) {
  assert(width >= 1 && width <= in_use_);
  in_use_ -= width;
}

}  // namespace tokenbatch
