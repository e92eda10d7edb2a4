// The libtorch backend: backend::TorchEncoder behind the server's interface.
// Only the encoder's public (torch-free) header is included here.
#include "tokenbatch/server/embedding_backend.h"

namespace tokenbatch::server {
namespace {

class TorchBackend final : public EmbeddingBackend {
 public:
  explicit TorchBackend(std::unique_ptr<backend::TorchEncoder> encoder) : encoder_(std::move(encoder)) {}

  absl::StatusOr<std::vector<backend::Embedding>> Embed(
      std::span<const backend::EmbeddingInput> inputs) const override {
    return encoder_->Embed(inputs);
  }
  int hidden_size() const override { return encoder_->hidden_size(); }
  std::int64_t vocab_size() const override { return encoder_->options().vocab_size; }
  std::int64_t max_positions() const override { return encoder_->options().max_positions; }
  bool default_normalize() const override { return encoder_->options().normalize; }
  std::string name() const override { return "torch"; }

 private:
  std::unique_ptr<backend::TorchEncoder> encoder_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<EmbeddingBackend>> MakeTorchBackend(const backend::EncoderOptions& options) {
  absl::StatusOr<std::unique_ptr<backend::TorchEncoder>> encoder = backend::TorchEncoder::Load(options);
  if (!encoder.ok()) return encoder.status();
  return std::unique_ptr<EmbeddingBackend>(std::make_unique<TorchBackend>(*std::move(encoder)));
}

}  // namespace tokenbatch::server
