#include "backend/classify.h"

#include <array>
#include <cctype>
#include <string>

#include "tokenbatch/core/errors.h"

namespace tokenbatch::backend {
namespace {

// Substrings (lower case) that allocators put in their failure messages:
// c10's alloc_cpu.cpp ("DefaultCPUAllocator: can't allocate memory",
// "DefaultCPUAllocator: not enough memory"), CUDACachingAllocator ("CUDA out of
// memory"), std::bad_alloc::what() ("std::bad_alloc"), and strerror(ENOMEM)
// ("cannot allocate memory").
constexpr std::array<std::string_view, 5> kOomMarkers = {
    "out of memory", "not enough memory", "can't allocate", "cannot allocate memory",
    "bad_alloc"};

constexpr size_t kMaxMessage = 4000;

}  // namespace

bool LooksLikeOutOfMemory(std::string_view message) {
  std::string lower(message);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (std::string_view marker : kOomMarkers) {
    if (lower.find(marker) != std::string::npos) return true;
  }
  return false;
}

absl::Status ClassifyFailure(std::string_view context, std::string_view message,
                             bool allocation_failure) {
  // std::string, not absl::StrCat: Debian's abseil has its own string_view type.
  std::string text = std::string(context) + ": " + std::string(message.substr(0, kMaxMessage)) +
                     (message.size() > kMaxMessage ? " [...]" : "");
  if (allocation_failure || LooksLikeOutOfMemory(message)) return OutOfMemoryError(text);
  return BackendError(text);
}

}  // namespace tokenbatch::backend
