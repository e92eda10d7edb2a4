// Uses the installed tokenbatch: the policy core stepped with a manual clock,
// then a Batcher whose backend doubles its inputs. Exits 0 only if both give the
// answers checked below.
#include <cstdio>
#include <span>
#include <vector>

#include "tokenbatch/core/scheduler.h"
#include "tokenbatch/runtime/batcher.h"

namespace {

int Check(bool ok, const char* what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAILED", what);
  return ok ? 0 : 1;
}

}  // namespace

int main() {
  int failures = 0;
  // The sans-IO core: two requests of 3 and 4 tokens fit one padded batch of 8.
  tokenbatch::SchedulerOptions options;
  options.max_batch_tokens = 8;
  options.max_wait = std::chrono::milliseconds(0);
  auto scheduler = tokenbatch::Scheduler::Create(options);
  failures += Check(scheduler.ok(), "Scheduler::Create");
  if (!scheduler.ok()) return 1;
  const tokenbatch::TimePoint now{};
  failures += Check((*scheduler)->Admit({.id = 1, .tokens = 3, .arrival = now}).ok(), "admit 3 tokens");
  failures += Check((*scheduler)->Admit({.id = 2, .tokens = 4, .arrival = now}).ok(), "admit 4 tokens");
  const tokenbatch::Decision d = (*scheduler)->Next(now, {.budget = 8});
  failures += Check(d.batch.size() == 2, "one batch of both");

  // The runtime: a Batcher over a backend that doubles each input.
  tokenbatch::BatcherOptions batcher_options;
  batcher_options.scheduler.max_batch_tokens = 64;
  auto batcher = tokenbatch::Batcher<int, int>::Create(
      batcher_options, [](std::span<const int> in) -> absl::StatusOr<std::vector<int>> {
        std::vector<int> out;
        for (int x : in) out.push_back(2 * x);
        return out;
      });
  failures += Check(batcher.ok(), "Batcher::Create");
  if (!batcher.ok()) return 1;
  auto ticket = (*batcher)->Submit(21, 5);
  failures += Check(ticket.ok(), "Submit");
  if (ticket.ok()) {
    absl::StatusOr<int> result = ticket->result.get();
    failures += Check(result.ok() && *result == 42, "result 42");
  }
  return failures == 0 ? 0 : 1;
}
