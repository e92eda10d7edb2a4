// The typed JSON field readers of json_fields.h.
#include "hf/json_fields.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::hf::json_fields {

namespace fs = std::filesystem;
using nlohmann::json;

absl::Status Bad(std::string_view source, std::string_view what) {
  return InvalidArgumentError(absl::StrCat(std::string(source), ": ", std::string(what)));
}

// The JSON object in `path`; a null json if the file is absent and `optional`.
absl::StatusOr<json> ReadJsonObject(const fs::path& path, bool optional) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    if (optional) return json();
    return Bad(path.string(), "missing");
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  json j = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Bad(path.string(), "not a JSON object");
  return j;
}

// Reads `key` of `j` into `out` if present. Integers must be > 0 when `positive`
// (else >= 0); numbers must be finite and > 0.
absl::Status ReadInt(const json& j, const char* key, int64_t& out, std::string_view source, bool positive) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return absl::OkStatus();
  if (!it->is_number_integer() || it->get<int64_t>() < (positive ? 1 : 0)) {
    return Bad(source, absl::StrCat(key, " must be an integer ", positive ? "> 0" : ">= 0", ", got ", it->dump()));
  }
  out = it->get<int64_t>();
  return absl::OkStatus();
}

absl::Status ReadPositive(const json& j, const char* key, double& out, std::string_view source) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return absl::OkStatus();
  if (!it->is_number() || !(it->get<double>() > 0) || it->get<double>() > 1e300) {
    return Bad(source, absl::StrCat(key, " must be a positive number, got ", it->dump()));
  }
  out = it->get<double>();
  return absl::OkStatus();
}

// Reads boolean `key` into `out` if present and not null; a non-boolean is an error.
absl::Status ReadBool(const json& j, const char* key, bool& out, std::string_view source) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return absl::OkStatus();
  if (!it->is_boolean()) return Bad(source, absl::StrCat(key, " must be true or false, got ", it->dump()));
  out = it->get<bool>();
  return absl::OkStatus();
}

// Reads string `key` into `out` if present and not null; a non-string is an error.
absl::Status ReadOptionalString(const json& j, const char* key, std::string& out, std::string_view source) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return absl::OkStatus();
  if (!it->is_string()) return Bad(source, absl::StrCat(key, " must be a string, got ", it->dump()));
  out = it->get<std::string>();
  return absl::OkStatus();
}

std::string ReadString(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace tokenbatch::hf::json_fields
