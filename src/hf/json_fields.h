// Reading typed fields of a model directory's JSON files, each error an
// InvalidArgumentError "<source>: <what>" naming the field and the value.
// Internal to src/hf (model_directory.cc, st_modules.cc). Pure, thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace tokenbatch::hf::json_fields {

// InvalidArgumentError "<source>: <what>".
[[nodiscard]] absl::Status Bad(std::string_view source, std::string_view what);

// The JSON object in `path`; a null json if the file is absent and `optional`.
// Errors: a missing required file, a file that is not a JSON object.
[[nodiscard]] absl::StatusOr<nlohmann::json> ReadJsonObject(const std::filesystem::path& path, bool optional);

// Each reads `key` of `j` into `out` when present and not null, leaving `out`
// as is otherwise; a value of the wrong type or range is an error naming both.
// Integers must be > 0 when `positive` (else >= 0).
[[nodiscard]] absl::Status ReadInt(const nlohmann::json& j, const char* key, int64_t& out, std::string_view source,
                                   bool positive = true);
// A finite number > 0.
[[nodiscard]] absl::Status ReadPositive(const nlohmann::json& j, const char* key, double& out,
                                        std::string_view source);
[[nodiscard]] absl::Status ReadBool(const nlohmann::json& j, const char* key, bool& out, std::string_view source);
[[nodiscard]] absl::Status ReadOptionalString(const nlohmann::json& j, const char* key, std::string& out,
                                              std::string_view source);

// The string `key` of `j`, or "" when absent or not a string.
[[nodiscard]] std::string ReadString(const nlohmann::json& j, const char* key);

}  // namespace tokenbatch::hf::json_fields
