// The libtorch backends: backend::TorchEncoder (TorchScript files) and
// hf::HfEncoder (Hugging Face directories) behind the server's interface.
// Only the encoders' public (torch-free) headers are included here.
#include "tokenbatch/server/model_backends.h"

namespace tokenbatch::server {
namespace {

// Any backend::Encoder, with the limits and defaults the server needs to know.
class EncoderBackend final : public EmbeddingBackend {
 public:
  struct Limits {
    std::int64_t vocab_size = 0;
    std::int64_t max_positions = 0;
    bool normalize = false;
    std::string name;
    BackendInfo info;
  };
  EncoderBackend(std::unique_ptr<backend::Encoder> encoder, Limits limits)
      : encoder_(std::move(encoder)), limits_(std::move(limits)) {}

  absl::StatusOr<std::vector<backend::Embedding>> Embed(
      std::span<const backend::EmbeddingInput> inputs) const override {
    return encoder_->Embed(inputs);
  }
  int hidden_size() const override { return encoder_->hidden_size(); }
  std::int64_t vocab_size() const override { return limits_.vocab_size; }
  std::int64_t max_positions() const override { return limits_.max_positions; }
  bool default_normalize() const override { return limits_.normalize; }
  std::string name() const override { return limits_.name; }
  BackendInfo info() const override { return limits_.info; }

 private:
  std::unique_ptr<backend::Encoder> encoder_;
  Limits limits_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<EmbeddingBackend>> MakeTorchBackend(const backend::EncoderOptions& options) {
  absl::StatusOr<std::unique_ptr<backend::TorchEncoder>> encoder = backend::TorchEncoder::Load(options);
  if (!encoder.ok()) return encoder.status();
  EncoderBackend::Limits limits{.vocab_size = options.vocab_size,
                                .max_positions = options.max_positions,
                                .normalize = options.normalize,
                                .name = "torch",
                                .info = {.pooling = std::string(backend::PoolingName(options.pooling))}};
  return std::unique_ptr<EmbeddingBackend>(std::make_unique<EncoderBackend>(*std::move(encoder), std::move(limits)));
}

absl::StatusOr<std::unique_ptr<EmbeddingBackend>> MakeHfBackend(const hf::HfEncoderOptions& options) {
  absl::StatusOr<std::unique_ptr<hf::HfEncoder>> encoder = hf::HfEncoder::Load(options);
  if (!encoder.ok()) return encoder.status();
  const hf::ModelDirectory& m = (*encoder)->model();
  std::optional<ClassifierInfo> classifier;
  if (m.classifier) {
    classifier = ClassifierInfo{.labels = m.classifier->labels, .token_types = m.config.type_vocab_size > 1};
    switch (m.classifier->activation) {
      case hf::ScoreActivation::kIdentity:
        classifier->activation = ScoreActivation::kIdentity;
        break;
      case hf::ScoreActivation::kSigmoid:
        classifier->activation = ScoreActivation::kSigmoid;
        break;
      case hf::ScoreActivation::kTanh:
        classifier->activation = ScoreActivation::kTanh;
        break;
    }
  }
  EncoderBackend::Limits limits{
      .vocab_size = m.config.vocab_size,
      .max_positions = m.max_seq_length,
      .normalize = (*encoder)->normalize(),
      .name = "hf",
      .info = {.architecture = m.config.model_type,
               .dtype = options.dtype,
               .pooling = m.classifier ? std::string() : std::string(backend::PoolingName((*encoder)->pooling())),
               .classifier = std::move(classifier)}};
  return std::unique_ptr<EmbeddingBackend>(std::make_unique<EncoderBackend>(*std::move(encoder), std::move(limits)));
}

}  // namespace tokenbatch::server
