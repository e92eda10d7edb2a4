// BERT and XLM-RoBERTa encoders (transformers' BertModel, XLMRobertaModel):
// embeddings (word + absolute position + token type, LayerNorm), then per layer
// self-attention and a GELU feed-forward, each followed by residual + LayerNorm
// (post-norm). XLM-R differs only in its position ids, which the batch carries
// already (hf_encoder.cc: they start at pad_token_id + 1).
#include <string>
#include <vector>

#include "hf/architectures.h"
#include "hf/linear.h"
#include "hf/transformer.h"
#include "hf/weights.h"

namespace tokenbatch::hf {
namespace {

struct Layer {
  Linear qkv;  // fused [3H, H], [3H]
  Linear out;
  Linear up, down;
  at::Tensor ln1_w, ln1_b, ln2_w, ln2_b;
};

class Bert final : public Transformer {
 public:
  Bert(const ArchitectureConfig& c, const Checkpoint& checkpoint, const std::string& prefix, at::ScalarType dtype,
       at::Device device, absl::Status& status)
      : config_(c) {
    const int64_t h = c.hidden_size;
    WeightReader w(checkpoint, prefix, dtype, device);
    word_ = w.Get("embeddings.word_embeddings.weight", {c.vocab_size, h});
    position_ = w.Get("embeddings.position_embeddings.weight", {c.max_position_embeddings, h});
    if (c.type_vocab_size > 0) type_ = w.Get("embeddings.token_type_embeddings.weight", {c.type_vocab_size, h});
    emb_ln_w_ = w.Get("embeddings.LayerNorm.weight", {h});
    emb_ln_b_ = w.Get("embeddings.LayerNorm.bias", {h});
    for (int64_t i = 0; i < c.num_hidden_layers && w.status().ok(); ++i) {
      const std::string p = "encoder.layer." + std::to_string(i) + ".";
      Layer l;
      std::vector<at::Tensor> ws, bs;
      for (const char* name : {"query", "key", "value"}) {
        ws.push_back(w.Get(p + "attention.self." + name + ".weight", {h, h}));
        bs.push_back(w.Get(p + "attention.self." + name + ".bias", {h}));
      }
      if (w.status().ok()) l.qkv = Linear(at::cat(ws, 0), at::cat(bs, 0));
      l.out = Linear(w.Get(p + "attention.output.dense.weight", {h, h}), w.Get(p + "attention.output.dense.bias", {h}));
      l.ln1_w = w.Get(p + "attention.output.LayerNorm.weight", {h});
      l.ln1_b = w.Get(p + "attention.output.LayerNorm.bias", {h});
      l.up = Linear(w.Get(p + "intermediate.dense.weight", {c.intermediate_size, h}),
                    w.Get(p + "intermediate.dense.bias", {c.intermediate_size}));
      l.down = Linear(w.Get(p + "output.dense.weight", {h, c.intermediate_size}), w.Get(p + "output.dense.bias", {h}));
      l.ln2_w = w.Get(p + "output.LayerNorm.weight", {h});
      l.ln2_b = w.Get(p + "output.LayerNorm.bias", {h});
      layers_.push_back(std::move(l));
    }
    status = w.status();
  }

  at::Tensor word_embeddings() const override { return word_; }

  std::vector<Linear*> linears() override {
    std::vector<Linear*> out;
    for (Layer& l : layers_) out.insert(out.end(), {&l.qkv, &l.out, &l.up, &l.down});
    return out;
  }

  at::Tensor Forward(const TokenBatch& batch) const override {
    const int64_t h = config_.hidden_size;
    const double eps = config_.layer_norm_eps;
    at::Tensor x = at::embedding(word_, batch.ids) + at::embedding(position_, batch.positions);
    if (type_.defined()) x = x + at::embedding(type_, batch.types);
    x = at::layer_norm(x, {h}, emb_ln_w_, emb_ln_b_, eps);
    std::vector<int64_t> head_shape(x.sizes().begin(), x.sizes().end() - 1);
    head_shape.push_back(config_.num_attention_heads);
    head_shape.push_back(config_.head_dim);
    for (const Layer& l : layers_) {
      std::vector<at::Tensor> qkv = l.qkv(x).chunk(3, -1);
      at::Tensor context = Attention(batch, qkv[0].reshape(head_shape), qkv[1].reshape(head_shape),
                                     qkv[2].reshape(head_shape), /*causal=*/false);
      x = at::layer_norm(l.out(context) + x, {h}, l.ln1_w, l.ln1_b, eps);
      at::Tensor up = HiddenActivation(config_.hidden_act, l.up(x));
      x = at::layer_norm(l.down(up) + x, {h}, l.ln2_w, l.ln2_b, eps);
    }
    return x;
  }

 private:
  ArchitectureConfig config_;
  at::Tensor word_, position_, type_, emb_ln_w_, emb_ln_b_;
  std::vector<Layer> layers_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Transformer>> LoadBert(const ArchitectureConfig& config, const Checkpoint& checkpoint,
                                                      at::ScalarType dtype, at::Device device) {
  absl::StatusOr<std::string> prefix =
      FindPrefix(checkpoint, "embeddings.word_embeddings.weight", {"bert.", "roberta.", "model."});
  if (!prefix.ok()) return prefix.status();
  absl::Status status;
  auto model = std::make_unique<Bert>(config, checkpoint, *prefix, dtype, device, status);
  if (!status.ok()) return status;
  return std::unique_ptr<Transformer>(std::move(model));
}

}  // namespace tokenbatch::hf
