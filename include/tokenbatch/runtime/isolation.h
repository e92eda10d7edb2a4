// Failure isolation: run a batch so that only the request that fails alone fails.
//
// RunIsolated calls the backend on the whole batch. If the call fails and the
// batch holds more than one request, it bisects: each half is retried on its own,
// recursively, so a poison request (or one too large for the memory left) gets the
// error and its batch-mates get results. An out-of-memory failure also calls
// `on_oom` so the caller can shrink its budget (AimdBudget). A backend that
// returns the wrong number of results broke its contract: every request of that
// call gets a Backend error, without retry. Exceptions thrown by the backend are
// caught: std::bad_alloc becomes OutOfMemory, anything else Backend.
//
// Cost: a batch with one deterministic poison request makes about 2·log2(B) extra
// backend calls. Blocks for as long as the backend calls take; thread-safe if the
// backend is.
#pragma once

#include <cstdint>
#include <exception>
#include <new>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch {

struct IsolationReport {
  std::uint64_t backend_calls = 0;  // including the first
  std::uint64_t retries = 0;        // calls made on halves after a failure
  std::uint64_t oom_events = 0;     // calls that failed with OutOfMemory
};

// Calls `backend(inputs)`, turning exceptions into typed errors.
template <typename Out, typename In, typename Backend>
absl::StatusOr<std::vector<Out>> CallBackendSafely(const Backend& backend, std::span<const In> inputs) {
  try {
    return backend(inputs);
  } catch (const std::bad_alloc& e) {
    return OutOfMemoryError(absl::StrCat("backend allocation failed: ", e.what()));
  } catch (const std::exception& e) {
    return BackendError(absl::StrCat("backend threw: ", e.what()));
  } catch (...) {
    return BackendError("backend threw a non-standard exception");
  }
}

// Runs `inputs` through `backend` with bisection on failure and writes one result
// per input to `results` (same size, same order). `on_oom(offset, count)` is called
// for each sub-batch [offset, offset + count) of `inputs` that ran out of memory,
// before its halves are retried. `offset` is added to the reported offsets.
template <typename Out, typename In, typename Backend, typename OnOom>
void RunIsolated(const Backend& backend, std::span<const In> inputs, std::span<absl::StatusOr<Out>> results,
                 const OnOom& on_oom, IsolationReport& report, std::size_t offset = 0) {
  ++report.backend_calls;
  absl::StatusOr<std::vector<Out>> out = CallBackendSafely<Out>(backend, inputs);
  if (out.ok()) {
    if (out->size() != inputs.size()) {
      const absl::Status broken = BackendError(absl::StrCat(
          "backend returned ", out->size(), " results for a batch of ", inputs.size(), " requests"));
      for (auto& r : results) r = broken;
      return;
    }
    for (std::size_t i = 0; i < inputs.size(); ++i) results[i] = std::move((*out)[i]);
    return;
  }
  if (IsOutOfMemory(out.status())) {
    ++report.oom_events;
    on_oom(offset, inputs.size());
  }
  if (inputs.size() == 1) {
    results[0] = out.status();
    return;
  }
  const std::size_t half = inputs.size() / 2;
  report.retries += 2;
  RunIsolated<Out>(backend, inputs.first(half), results.first(half), on_oom, report, offset);
  RunIsolated<Out>(backend, inputs.subspan(half), results.subspan(half), on_oom, report, offset + half);
}

}  // namespace tokenbatch
