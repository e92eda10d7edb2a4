// SPLADE weights from a masked-LM head (see splade.h).
#include "hf/splade.h"

#include <vector>

#include "hf/weights.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::hf {

absl::StatusOr<std::unique_ptr<Splade>> Splade::Load(const ModelDirectory& model, const Checkpoint& checkpoint,
                                                     const Transformer& transformer, at::ScalarType dtype,
                                                     at::Device device) {
  const int64_t h = model.config.hidden_size, v = model.config.vocab_size;
  WeightReader reader(checkpoint, "", dtype, device);
  std::unique_ptr<Splade> out(new Splade());
  out->how_ = *model.splade;
  out->activation_ = model.config.hidden_act;
  out->eps_ = model.config.layer_norm_eps;
  out->dense_w_ = reader.Get("cls.predictions.transform.dense.weight", {h, h});
  out->dense_b_ = reader.Get("cls.predictions.transform.dense.bias", {h});
  out->ln_w_ = reader.Get("cls.predictions.transform.LayerNorm.weight", {h});
  out->ln_b_ = reader.Get("cls.predictions.transform.LayerNorm.bias", {h});
  out->decoder_w_ = reader.GetOptional("cls.predictions.decoder.weight", {v, h});
  if (!out->decoder_w_.defined()) out->decoder_w_ = transformer.word_embeddings();
  // transformers saves the decoder's bias as cls.predictions.bias (older
  // checkpoints also as cls.predictions.decoder.bias).
  out->decoder_b_ = reader.GetOptional("cls.predictions.bias", {v});
  if (!out->decoder_b_.defined()) out->decoder_b_ = reader.Get("cls.predictions.decoder.bias", {v});
  if (!reader.status().ok()) return reader.status();
  if (!out->decoder_w_.defined()) return InvalidArgumentError("the masked-LM head has no decoder weight");
  return out;
}

at::Tensor Splade::Weights(const at::Tensor& rows, const TokenBatch& batch) const {
  std::vector<at::Tensor> pooled;
  pooled.reserve(batch.batch_size());
  // One input at a time: its [tokens, vocab] logits are the largest tensor of
  // the forward, and are reduced at once.
  for (int64_t i = 0; i < batch.batch_size(); ++i) {
    const int64_t base = batch.packed ? batch.offsets[i] : i * batch.max_length;
    const int64_t n = batch.offsets[i + 1] - batch.offsets[i];
    at::Tensor x = at::linear(rows.narrow(0, base, n), dense_w_, dense_b_);
    x = HiddenActivation(activation_, x);
    x = at::layer_norm(x, {x.size(-1)}, ln_w_, ln_b_, eps_);
    at::Tensor w = at::linear(x, decoder_w_, decoder_b_).to(at::kFloat).relu_().log1p_();
    if (how_.log1p_twice) w.log1p_();
    pooled.push_back(how_.max_pooling ? std::get<0>(w.max(0)) : w.sum(0));
  }
  return at::stack(pooled, 0).to(at::kCPU).contiguous();
}

}  // namespace tokenbatch::hf
