#include "tokenbatch/core/errors.h"

#include <array>
#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

namespace tokenbatch {
namespace {

// Payload key, following absl's convention of a URL-like type name.
constexpr std::string_view kKindPayload = "type.tokenbatch/ErrorKind";

absl::Status Make(absl::StatusCode code, ErrorKind kind, std::string_view message) {
  absl::Status status(code, ToAbsl(message));
  status.SetPayload(ToAbsl(kKindPayload), absl::Cord(ToAbsl(ErrorKindName(kind))));
  return status;
}

constexpr std::array<std::string_view, 10> kNames = {
    "none",     "queue_full",    "oversize", "deadline_exceeded", "cancelled",
    "shutting_down", "out_of_memory", "backend",  "invalid_argument",  "unclassified",
};

}  // namespace

absl::Status QueueFullError(std::string_view m) {
  return Make(absl::StatusCode::kResourceExhausted, ErrorKind::kQueueFull, m);
}
absl::Status OversizeError(std::string_view m) {
  return Make(absl::StatusCode::kOutOfRange, ErrorKind::kOversize, m);
}
absl::Status DeadlineExceededError(std::string_view m) {
  return Make(absl::StatusCode::kDeadlineExceeded, ErrorKind::kDeadlineExceeded, m);
}
absl::Status CancelledError(std::string_view m) {
  return Make(absl::StatusCode::kCancelled, ErrorKind::kCancelled, m);
}
absl::Status ShuttingDownError(std::string_view m) {
  return Make(absl::StatusCode::kUnavailable, ErrorKind::kShuttingDown, m);
}
absl::Status OutOfMemoryError(std::string_view m) {
  return Make(absl::StatusCode::kResourceExhausted, ErrorKind::kOutOfMemory, m);
}
absl::Status BackendError(std::string_view m) {
  return Make(absl::StatusCode::kInternal, ErrorKind::kBackend, m);
}
absl::Status InvalidArgumentError(std::string_view m) {
  return Make(absl::StatusCode::kInvalidArgument, ErrorKind::kInvalidArgument, m);
}

ErrorKind GetErrorKind(const absl::Status& status) {
  if (status.ok()) return ErrorKind::kNone;
  auto payload = status.GetPayload(ToAbsl(kKindPayload));
  if (!payload) return ErrorKind::kUnclassified;
  const std::string name(*payload);
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) return static_cast<ErrorKind>(i);
  }
  return ErrorKind::kUnclassified;
}

std::string_view ErrorKindName(ErrorKind kind) {
  const auto index = static_cast<size_t>(kind);
  return index < kNames.size() ? kNames[index] : "unclassified";
}

absl::Status WithMessagePrefix(const absl::Status& status, std::string_view prefix) {
  absl::Status out(status.code(), absl::StrCat(ToAbsl(prefix), status.message()));
  status.ForEachPayload([&](absl::string_view url, const absl::Cord& payload) { out.SetPayload(url, payload); });
  return out;
}

}  // namespace tokenbatch
