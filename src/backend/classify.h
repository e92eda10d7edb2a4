// Maps a failure seen while running a model to a typed tokenbatch error.
//
// libtorch reports most allocation failures as a plain c10::Error whose message
// says so (the CPU allocator's "DefaultCPUAllocator: can't allocate memory", the
// CUDA allocator's "CUDA out of memory", TorchScript wrapping either in a
// traceback), so the message is the signal; the exception's type decides only
// when it is an allocation type already (c10::OutOfMemoryError, std::bad_alloc).
// Pure and thread-safe.
#pragma once

#include <string_view>

#include "absl/status/status.h"

namespace tokenbatch::backend {

// True if `message` describes a failed allocation.
[[nodiscard]] bool LooksLikeOutOfMemory(std::string_view message);

// OutOfMemoryError if `allocation_failure` or LooksLikeOutOfMemory(message),
// else BackendError. `context` (e.g. "forward of batch [8, 512]") prefixes the
// message; messages longer than 4,000 characters are cut (tracebacks can be huge).
[[nodiscard]] absl::Status ClassifyFailure(std::string_view context, std::string_view message,
                                           bool allocation_failure);

}  // namespace tokenbatch::backend
