#include "backend/model_fingerprint.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::backend {
namespace {

// One field of the fingerprint: its JSON key and how to read and compare it.
template <typename T>
struct Field {
  const char* name;
  T ModelFingerprint::*member;
};

constexpr Field<std::string> kTextFields[] = {
    {"architecture", &ModelFingerprint::architecture}, {"dtype", &ModelFingerprint::dtype},
    {"quantization", &ModelFingerprint::quantization}, {"execution", &ModelFingerprint::execution},
    {"attention", &ModelFingerprint::attention}, {"pooling", &ModelFingerprint::pooling},
};
constexpr Field<std::int64_t> kCountFields[] = {
    {"hidden_size", &ModelFingerprint::hidden_size},
    {"num_layers", &ModelFingerprint::num_layers},
    {"num_heads", &ModelFingerprint::num_heads},
    {"vocab_size", &ModelFingerprint::vocab_size},
};

// A text field's value as a message shows it: "" reads as "none".
std::string Shown(const std::string& value) { return value.empty() ? "none" : value; }

}  // namespace

ModelFingerprint FingerprintOf(const EncoderInfo& info, std::int64_t output_width, int threads) {
  return {.architecture = info.architecture,
          .hidden_size = info.layer_width > 0 ? info.layer_width : output_width,
          .num_layers = info.num_layers,
          .num_heads = info.num_heads,
          .vocab_size = info.vocab_size,
          .dtype = info.dtype,
          .quantization = info.quantization,
          .execution = info.execution,
          .attention = info.attention,
          .pooling = info.pooling,
          .threads = threads};
}

nlohmann::json FingerprintJson(const ModelFingerprint& f) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& field : kTextFields) out[field.name] = f.*field.member;
  for (const auto& field : kCountFields) out[field.name] = f.*field.member;
  out["threads"] = f.threads;
  return out;
}

absl::StatusOr<ModelFingerprint> ParseFingerprint(const nlohmann::json& object) {
  if (!object.is_object()) return InvalidArgumentError("fingerprint: expected an object");
  ModelFingerprint f;
  std::size_t known = 0;
  for (const auto& field : kTextFields) {
    if (!object.contains(field.name)) return InvalidArgumentError(absl::StrCat("fingerprint.", field.name, " is missing"));
    const nlohmann::json& v = object.at(field.name);
    if (!v.is_string()) return InvalidArgumentError(absl::StrCat("fingerprint.", field.name, " must be a string"));
    f.*field.member = v.get<std::string>();
    ++known;
  }
  // Counts, threads last, as integers: 384.9 or true would otherwise be read as 384 or 1.
  const auto count = [&](const char* name, std::int64_t most) -> absl::StatusOr<std::int64_t> {
    if (!object.contains(name)) return InvalidArgumentError(absl::StrCat("fingerprint.", name, " is missing"));
    const nlohmann::json& v = object.at(name);
    if (!v.is_number_integer()) return InvalidArgumentError(absl::StrCat("fingerprint.", name, " must be an integer"));
    const std::int64_t n = v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(most)
                               ? most + 1
                               : v.get<std::int64_t>();
    if (n < 0 || n > most) {
      return InvalidArgumentError(absl::StrCat("fingerprint.", name, " must be in [0, ", most, "], got ", v.dump()));
    }
    ++known;
    return n;
  };
  for (const auto& field : kCountFields) {
    absl::StatusOr<std::int64_t> n = count(field.name, std::numeric_limits<std::int64_t>::max() - 1);
    if (!n.ok()) return n.status();
    f.*field.member = *n;
  }
  absl::StatusOr<std::int64_t> threads = count("threads", std::int64_t{1} << 20);
  if (!threads.ok()) return threads.status();
  f.threads = static_cast<int>(*threads);
  if (known != object.size()) {
    for (const auto& [key, value] : object.items()) {
      const bool text = std::any_of(std::begin(kTextFields), std::end(kTextFields),
                                    [&](const auto& field) { return key == field.name; });
      const bool number = std::any_of(std::begin(kCountFields), std::end(kCountFields),
                                      [&](const auto& field) { return key == field.name; });
      if (!text && !number && key != "threads") {
        return InvalidArgumentError(absl::StrCat("fingerprint: unknown field \"", key, "\""));
      }
    }
  }
  return f;
}

absl::Status CheckFingerprint(const ModelFingerprint& calibrated, const ModelFingerprint& served,
                              std::string_view what) {
  for (const auto& field : kTextFields) {
    const std::string& a = calibrated.*field.member;
    const std::string& b = served.*field.member;
    if (a != b) {
      return InvalidArgumentError(absl::StrCat(std::string(what), " was measured on ", field.name, " ", Shown(a),
                                               ", and the model served has ", Shown(b)));
    }
  }
  for (const auto& field : kCountFields) {
    const std::int64_t a = calibrated.*field.member;
    const std::int64_t b = served.*field.member;
    if (a != b) {
      return InvalidArgumentError(
          absl::StrCat(std::string(what), " was measured on ", field.name, " ", a, ", and the model served has ", b));
    }
  }
  if (calibrated.threads != served.threads) {
    return InvalidArgumentError(absl::StrCat(std::string(what), " was measured on threads ", calibrated.threads,
                                             ", and the model served has ", served.threads));
  }
  return absl::OkStatus();
}

}  // namespace tokenbatch::backend
