// sentence-transformers' module folders and tokenizer_config.json, read as
// model_directory.h describes. Internal to src/hf. Pure (file reads only),
// thread-safe.
#pragma once

#include <filesystem>
#include <string_view>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "tokenbatch/hf/model_directory.h"

namespace tokenbatch::hf::st_modules {

// A Pooling module's config.json `j`: its mode, and include_prompt into
// `include_prompt`. Errors name `source` and the unsupported mode.
[[nodiscard]] absl::StatusOr<backend::Pooling> ReadPooling(const nlohmann::json& j, std::string_view source,
                                                         bool& include_prompt);

// The Dense module in `dir` (its config.json). Errors: missing sizes, an
// activation other than Identity or Tanh, each naming the file.
[[nodiscard]] absl::StatusOr<DenseLayer> ReadDense(const std::filesystem::path& dir);

// The fields of tokenizer_config.json `j` that change what transformers
// encodes, into `m` (m.config must be read already); model_max_length is the
// caller's. Errors name `source`, the field and the value.
[[nodiscard]] absl::Status ReadTokenizerConfig(const nlohmann::json& j, std::string_view source, ModelDirectory& m);

}  // namespace tokenbatch::hf::st_modules
