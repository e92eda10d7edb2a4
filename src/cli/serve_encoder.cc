// Loading the encoder `tokenbatch serve` runs (see serve_config.h).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cli/serve_config.h"
#include "tokenbatch/backend/noop_encoder.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::cli {

absl::StatusOr<std::unique_ptr<backend::Encoder>> LoadServeEncoder(const ServeConfig& config,
                                                                   const tokenizer::Tokenizer& tokenizer) {
  const EncoderChoice& e = config.encoder;
  if (e.kind == EncoderChoice::Kind::kNoop) return backend::MakeNoopEncoder(e.noop);
#ifdef TOKENBATCH_HAVE_BACKEND
  const auto tokenizer_ids = static_cast<std::int64_t>(tokenizer.VocabSize());
  if (e.kind == EncoderChoice::Kind::kHfDirectory) {
    absl::StatusOr<std::unique_ptr<hf::HfEncoder>> encoder = hf::HfEncoder::Load(e.hf);
    if (!encoder.ok()) return WithMessagePrefix(encoder.status(), "loading " + e.hf.model_dir + ": ");
    // Ids the tokenizer can produce must all index the embedding table.
    const std::int64_t rows = (*encoder)->info().vocab_size;
    if (tokenizer_ids > rows) {
      return InvalidArgumentError(fmt::format(
          "tokenizer {} has {} ids but {}'s embedding table only {} rows (config.json vocab_size): the tokenizer "
          "does not belong to this model",
          config.tokenizer, tokenizer_ids, e.hf.model_dir, rows));
    }
    return std::unique_ptr<backend::Encoder>(*std::move(encoder));
  }
  // A smaller model vocabulary still serves token-id inputs below it (e.g. the
  // tiny test model); texts whose ids fall outside get 422 naming the mismatch.
  if (e.torchscript.vocab_size > 0 && tokenizer_ids > e.torchscript.vocab_size) {
    spdlog::warn("tokenizer {} has {} ids but model {} only {}: texts may be refused (422)", config.tokenizer,
                 tokenizer_ids, e.torchscript.model_path, e.torchscript.vocab_size);
  }
  absl::StatusOr<std::unique_ptr<backend::TorchEncoder>> encoder = backend::TorchEncoder::Load(e.torchscript);
  if (!encoder.ok()) return WithMessagePrefix(encoder.status(), "loading " + e.torchscript.model_path + ": ");
  return std::unique_ptr<backend::Encoder>(*std::move(encoder));
#else
  (void)tokenizer;
  return absl::UnimplementedError("this build has no libtorch backend; use --backend noop");
#endif
}

}  // namespace tokenbatch::cli
