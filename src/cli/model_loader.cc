#include "cli/model_loader.h"

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "tokenbatch/core/errors.h"
#include "tokenbatch/hf/hf_encoder.h"

namespace tokenbatch::cli {

absl::StatusOr<std::int64_t> SidecarMaxPositions(const std::string& model_file) {
  const std::filesystem::path sidecar = std::filesystem::path(model_file).replace_extension(".json");
  std::ifstream in(sidecar);
  if (!in) return 0;
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return InvalidArgumentError(absl::StrCat(sidecar.string(), ": not a JSON object"));
  }
  if (!j.contains("max_positions")) return 0;
  if (!j["max_positions"].is_number_integer() || j["max_positions"].get<std::int64_t>() < 1) {
    return InvalidArgumentError(absl::StrCat(sidecar.string(), ": max_positions must be an integer >= 1"));
  }
  return j["max_positions"].get<std::int64_t>();
}

absl::StatusOr<LoadedModel> LoadModel(const ModelFlags& flags, std::int64_t vocab_size, std::int64_t max_positions,
                                      const std::string& fallback_pooling) {
  if (flags.model_id.empty() == flags.model.empty()) {
    return InvalidArgumentError("pass --model-id DIR (a Hugging Face model directory) or --model FILE (TorchScript)");
  }
  LoadedModel out;
  if (!flags.model_id.empty()) {
    hf::HfEncoderOptions options{.model_dir = flags.model_id, .device = flags.device, .dtype = flags.dtype,
                                 .num_threads = flags.threads,
                                 .cuda_memory_limit_bytes = static_cast<std::int64_t>(flags.cuda_memory_limit)};
    absl::StatusOr<hf::Execution> execution = hf::ParseExecution(flags.execution);
    if (!execution.ok()) return execution.status();
    options.execution = *execution;
    absl::StatusOr<hf::AttentionImplementation> attention = hf::ParseAttentionImplementation(flags.attention);
    if (!attention.ok()) return attention.status();
    options.attention = *attention;
    absl::StatusOr<hf::Quantization> quantize = hf::kQuantizationNames.Parse(flags.quantize);
    if (!quantize.ok()) return quantize.status();
    options.quantize = *quantize;
    if (!flags.pooling.empty()) {
      absl::StatusOr<backend::Pooling> pooling = backend::ParsePooling(flags.pooling);
      if (!pooling.ok()) return pooling.status();
      options.pooling = *pooling;
    }
    absl::StatusOr<std::unique_ptr<hf::HfEncoder>> encoder = hf::HfEncoder::Load(options);
    if (!encoder.ok()) return encoder.status();
    out.path = flags.model_id;
    out.vocab_size = (*encoder)->model().config.vocab_size;
    out.max_positions = (*encoder)->model().max_seq_length;
    out.tokenizer = (*encoder)->model().tokenizer_path;
    out.pooling = std::string(backend::PoolingName((*encoder)->pooling()));
    out.encoder = *std::move(encoder);
    return out;
  }
  if (flags.cuda_memory_limit > 0) return InvalidArgumentError("--cuda-memory-limit applies to --model-id models");
  if (flags.quantize != "none") return InvalidArgumentError("--quantize applies to --model-id models");
  backend::EncoderOptions options{.model_path = flags.model, .device = flags.device, .num_threads = flags.threads,
                                  .max_positions = max_positions, .vocab_size = vocab_size};
  absl::StatusOr<backend::Pooling> pooling =
      backend::ParsePooling(flags.pooling.empty() ? fallback_pooling : flags.pooling);
  if (!pooling.ok()) return pooling.status();
  options.pooling = *pooling;
  absl::StatusOr<std::unique_ptr<backend::TorchEncoder>> encoder = backend::TorchEncoder::Load(options);
  if (!encoder.ok()) return encoder.status();
  out.path = flags.model;
  out.vocab_size = vocab_size;
  out.max_positions = max_positions;
  out.pooling = std::string(backend::PoolingName(*pooling));
  out.encoder = *std::move(encoder);
  return out;
}

}  // namespace tokenbatch::cli
