#include "backend/model_fingerprint.h"

#include <exception>
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
    {"attention", &ModelFingerprint::attention},
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
  const char* reading = "";
  try {
    for (const auto& field : kTextFields) {
      reading = field.name;
      f.*field.member = object.at(field.name).get<std::string>();
    }
    for (const auto& field : kCountFields) {
      reading = field.name;
      const std::int64_t v = object.at(field.name).get<std::int64_t>();
      if (v < 0) return InvalidArgumentError(absl::StrCat("fingerprint.", field.name, " must be >= 0, got ", v));
      f.*field.member = v;
    }
    reading = "threads";
    f.threads = object.at("threads").get<int>();
    if (f.threads < 0) return InvalidArgumentError(absl::StrCat("fingerprint.threads must be >= 0, got ", f.threads));
  } catch (const std::exception& e) {  // nlohmann's: a missing key or another type
    return InvalidArgumentError(absl::StrCat("fingerprint.", reading, ": ", e.what()));
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
