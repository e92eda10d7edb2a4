// Loading the model `calibrate` and `bench` measure: a Hugging Face / sentence-
// transformers directory (--model-id, hf::HfEncoder) or a TorchScript file
// (--model, backend::TorchEncoder with its gen_models.py sidecar). `serve` has
// the same two flags with its own defaults (serve_args.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "tokenbatch/backend/encoder.h"

namespace tokenbatch::cli {

struct ModelFlags {
  std::string model_id;             // Hugging Face model directory
  std::string model;                // TorchScript file (exclusive with model_id)
  std::string device = "cpu";
  std::string dtype = "float32";    // --model-id only
  std::string quantize = "none";    // --model-id only: none or int8 (hf::Quantization)
  std::string execution = "packed"; // --model-id only: packed or padded
  std::string attention = "auto";   // --model-id only: auto, sdpa or eager (hf::AttentionImplementation)
  std::string pooling;              // "" = the directory's Pooling module; `fallback_pooling` for --model
  int threads = 0;                  // CPU threads per forward, 0 = libtorch's default
  std::uint64_t cuda_memory_limit = 0;  // --model-id on CUDA: cap the allocator, bytes (0 = none)
};

struct LoadedModel {
  std::unique_ptr<backend::Encoder> encoder;
  std::string path;                // the directory or file loaded
  std::int64_t vocab_size = 0;     // ids must be below it; 0 = unknown
  std::int64_t max_positions = 0;  // longest input in tokens; 0 = unknown
  std::string tokenizer;           // the directory's tokenizer.json; "" for a TorchScript file
  std::string pooling;             // "cls" | "mean" | "last"
};

// The positions a TorchScript file's sidecar (`<file minus .pt>.json`, written
// by scripts/gen_models.py) gives as "max_positions"; 0 when there is no
// sidecar. Errors: InvalidArgument naming the sidecar when it is not a JSON
// object or its max_positions is not an integer >= 1. Blocks on the read.
[[nodiscard]] absl::StatusOr<std::int64_t> SidecarMaxPositions(const std::string& model_file);

// Loads what `flags` name. For a TorchScript file, `vocab_size` and
// `max_positions` are what the caller knows of it (its sidecar) and
// `fallback_pooling` applies when flags.pooling is empty. Blocks for the load.
// Errors: InvalidArgumentError (neither or both of model_id and model, bad flag
// values) and those of HfEncoder::Load / TorchEncoder::Load.
[[nodiscard]] absl::StatusOr<LoadedModel> LoadModel(const ModelFlags& flags, std::int64_t vocab_size,
                                                    std::int64_t max_positions, const std::string& fallback_pooling);

}  // namespace tokenbatch::cli
