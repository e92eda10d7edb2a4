// What a calibration was measured on: the fields of a model and its execution
// that change a forward's latency or peak memory. `tokenbatch calibrate` writes
// the fingerprint of the model it measured into its file ("fingerprint"), and
// `serve --calibration` compares it with the model it loads, so that a file
// measured on one model, layout or attention kernel never sizes the batches of
// another.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tokenbatch/backend/encoder_info.h"

namespace tokenbatch::backend {

// Plain data. Strings are "" and counts 0 where the encoder does not say (a
// TorchScript module has no config.json); such a field is still compared, so
// a TorchScript calibration never passes for a model directory.
struct ModelFingerprint {
  std::string architecture;  // config.json model_type ("bert", "qwen3", ...)
  std::int64_t hidden_size = 0;  // the encoder layers' width (config.json hidden_size)
  std::int64_t num_layers = 0;
  std::int64_t num_heads = 0;
  std::int64_t vocab_size = 0;  // the embedding table's rows
  std::string dtype;            // "float32", "bfloat16", "float16"
  std::string quantization;     // "int8", or "" for none
  std::string execution;        // "packed", "padded", or ""
  std::string attention;        // the attention kernel: "sdpa", "eager", ...
  // What the head computes: "cls", "mean", "last" or "splade" pooling (splade
  // holds B x L x vocabulary logits), or "" for a classifier.
  std::string pooling;
  int threads = 0;              // the --threads the forwards ran with (0 = the default)

  friend bool operator==(const ModelFingerprint&, const ModelFingerprint&) = default;
};

// The fingerprint of a loaded encoder: its info() and the thread count it was
// loaded with. `output_width` (Encoder::hidden_size()) stands for the layers'
// width where the info does not give it (a TorchScript module).
[[nodiscard]] ModelFingerprint FingerprintOf(const EncoderInfo& info, std::int64_t output_width, int threads);

// The JSON object a calibration file holds under "fingerprint", one key per
// field, named as above.
[[nodiscard]] nlohmann::json FingerprintJson(const ModelFingerprint& fingerprint);

// Reads that object back. Errors: InvalidArgumentError naming the first field
// that is missing, of another JSON type (a count must be an integer), a count
// that is negative, threads above 2^20, or a key that is not a field.
[[nodiscard]] absl::StatusOr<ModelFingerprint> ParseFingerprint(const nlohmann::json& object);

// OkStatus when `served` equals `calibrated`; else InvalidArgumentError naming
// the first field that differs and both values, in the form
// "<what> was measured on hidden_size 384, and the model served has 64". Pure.
[[nodiscard]] absl::Status CheckFingerprint(const ModelFingerprint& calibrated, const ModelFingerprint& served,
                                            std::string_view what);

}  // namespace tokenbatch::backend
