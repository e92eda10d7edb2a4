// Whole numbers read from tokenizer.json, checked before conversion.
//
// nlohmann's get<unsigned>() converts with a C++ cast: a negative number wraps
// silently and a float out of the target's range is undefined behaviour (found
// by fuzzing, fuzz/tokenizer_json_fuzz.cc). Every id, index or length a
// tokenizer file gives goes through JsonWhole instead.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::tokenizer::internal {

// `value` as an unsigned T when it is a JSON integer in [0, max] (max capped
// at T's largest value); else InvalidArgument naming `what` (e.g. "BPE vocab
// id of hello") and the value as written.
template <typename T>
absl::StatusOr<T> JsonWhole(const nlohmann::json& value, const std::string& what,
                            std::uint64_t max = std::numeric_limits<T>::max()) {
  static_assert(std::is_unsigned_v<T>, "ids, indexes and lengths are unsigned");
  max = std::min<std::uint64_t>(max, std::numeric_limits<T>::max());
  if (value.is_number_unsigned() && value.get<std::uint64_t>() <= max) {
    return static_cast<T>(value.get<std::uint64_t>());
  }
  if (value.is_number_integer() && value.get<std::int64_t>() >= 0 &&
      static_cast<std::uint64_t>(value.get<std::int64_t>()) <= max) {
    return static_cast<T>(value.get<std::int64_t>());
  }
  return InvalidArgumentError(absl::StrCat(what, " must be a whole number in [0, ", max, "], got ", value.dump()));
}

}  // namespace tokenbatch::tokenizer::internal
