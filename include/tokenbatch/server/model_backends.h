// The EmbeddingBackends over real models (libtorch): a TorchScript encoder, or a
// Hugging Face model directory. Part of the server library only when it is built
// with the backend component (CMake target tokenbatch_backend; the compile
// definition TOKENBATCH_SERVER_HAVE_TORCH says so to its users); the interface
// itself, embedding_backend.h, is the same in every build.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "tokenbatch/backend/encoder.h"
#include "tokenbatch/hf/hf_encoder.h"
#include "tokenbatch/server/embedding_backend.h"

namespace tokenbatch::server {

// Loads a TorchScript encoder (see backend::TorchEncoder::Load for the options and
// errors). vocab_size and max_positions come from `options`.
[[nodiscard]] absl::StatusOr<std::unique_ptr<EmbeddingBackend>> MakeTorchBackend(
    const backend::EncoderOptions& options);
// Loads a Hugging Face model directory (see hf::HfEncoder::Load for the options
// and errors). vocab_size is the config's; max_positions its max_seq_length. A
// cross-encoder directory gives a classifier backend (BackendInfo::classifier):
// its labels, CrossEncoder activation, and whether the model reads token types.
[[nodiscard]] absl::StatusOr<std::unique_ptr<EmbeddingBackend>> MakeHfBackend(
    const hf::HfEncoderOptions& options);

}  // namespace tokenbatch::server
