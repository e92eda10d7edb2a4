// Typed errors: one kind per caller-visible cause.
//
// Every error tokenbatch returns is an absl::Status whose canonical code fits the
// cause and which carries an ErrorKind payload, so callers can tell apart causes
// that share a canonical code (QueueFull and OutOfMemory are both
// RESOURCE_EXHAUSTED). Servers map kinds to transport codes, for example
// QueueFull -> HTTP 429, Oversize -> 413, ShuttingDown -> 503, Backend -> 500.
//
// All functions here are pure and thread-safe; none blocks.
#pragma once

#include <string_view>

#include "absl/status/status.h"

namespace tokenbatch {

// The cause of a failed request.
enum class ErrorKind {
  kNone = 0,           // not an error (status is OK)
  kQueueFull,          // max_queue_size or max_queued_tokens reached; RESOURCE_EXHAUSTED
  kOversize,           // own cost > budget or tokens > max_input_tokens under `reject`; OUT_OF_RANGE
  kDeadlineExceeded,   // the request's deadline passed before its result; DEADLINE_EXCEEDED
  kCancelled,          // the caller cancelled the request; CANCELLED
  kShuttingDown,       // submitted after shutdown, or failed by a non-draining shutdown; UNAVAILABLE
  kOutOfMemory,        // the backend ran out of memory on this request alone; RESOURCE_EXHAUSTED
  kBackend,            // any other backend failure, with its message; INTERNAL
  kInvalidArgument,    // a malformed request or option (negative tokens, ...); INVALID_ARGUMENT
  kUnclassified,       // a non-OK status created outside tokenbatch (no payload)
};

// Builders. Each returns a non-OK status of the matching canonical code with the
// kind attached; `message` should name the cause and the numbers involved, e.g.
// "request of 5000 tokens exceeds max_input_tokens 4096".
[[nodiscard]] absl::Status QueueFullError(std::string_view message);
[[nodiscard]] absl::Status OversizeError(std::string_view message);
[[nodiscard]] absl::Status DeadlineExceededError(std::string_view message);
[[nodiscard]] absl::Status CancelledError(std::string_view message);
[[nodiscard]] absl::Status ShuttingDownError(std::string_view message);
[[nodiscard]] absl::Status OutOfMemoryError(std::string_view message);
[[nodiscard]] absl::Status BackendError(std::string_view message);
[[nodiscard]] absl::Status InvalidArgumentError(std::string_view message);

// `status` with `prefix` before its message ("input[3]: ", "loading DIR: "),
// keeping its code and payloads, so its ErrorKind survives. Pure.
[[nodiscard]] absl::Status WithMessagePrefix(const absl::Status& status, std::string_view prefix);

// The kind of `status`: kNone for OK, kUnclassified for a status without a kind.
[[nodiscard]] ErrorKind GetErrorKind(const absl::Status& status);

// A stable snake_case name for metrics labels and logs ("queue_full", "oversize", ...).
[[nodiscard]] std::string_view ErrorKindName(ErrorKind kind);

// Debian's abseil is built with its own absl::string_view (not std::string_view):
// absl::StrCat and Status take absl::string_view, so std::string_view arguments
// are passed through this adapter.
[[nodiscard]] inline absl::string_view ToAbsl(std::string_view s) { return {s.data(), s.size()}; }

// True for kinds a retry of a smaller batch may cure (kOutOfMemory only).
[[nodiscard]] inline bool IsOutOfMemory(const absl::Status& status) {
  return GetErrorKind(status) == ErrorKind::kOutOfMemory;
}

}  // namespace tokenbatch
