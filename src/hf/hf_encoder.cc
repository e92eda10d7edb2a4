// HfEncoder: batch assembly, pooling, Dense layers and post-processing around
// the transformer (transformer.h). One of the few translation units with ATen.
#include "tokenbatch/hf/hf_encoder.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "backend/postprocess.h"
#include "backend/torch_guard.h"
#include "hf/hf_encoder_impl.h"
#include "hf/weights.h"
#include "tokenbatch/core/errors.h"
#include "tokenbatch/hf/cpu_low_precision.h"

namespace tokenbatch::hf {

using backend::Embedding;
using backend::EmbeddingInput;
using backend::Guard;
using backend::Pooling;

absl::Status HfEncoder::Impl::LoadHead(const Checkpoint& checkpoint) {
  const ClassifierHead& c = *model.classifier;
  const int64_t h = model.config.hidden_size;
  const auto n = static_cast<int64_t>(c.labels.size());
  WeightReader reader(checkpoint, "", dtype, device);
  Head out;
  // BertForSequenceClassification: BertPooler, then `classifier`; the RoBERTa
  // family: RobertaClassificationHead (`classifier.dense`, `classifier.out_proj`).
  const bool bert = c.architecture_class == "BertForSequenceClassification";
  // The pooler sits beside the encoder ("bert.pooler", or "pooler" in a
  // checkpoint saved without the task model's prefix, as transformers loads it).
  std::string prefix;
  if (bert) {
    absl::StatusOr<std::string> found =
        FindPrefix(checkpoint, "embeddings.word_embeddings.weight", {"bert.", "roberta.", "model."});
    if (!found.ok()) return found.status();
    prefix = *found;
  }
  const std::string dense = bert ? prefix + "pooler.dense" : "classifier.dense";
  const std::string proj = bert ? "classifier" : "classifier.out_proj";
  out.dense_w = reader.Get(dense + ".weight", {h, h});
  out.dense_b = reader.Get(dense + ".bias", {h});
  out.out_w = reader.Get(proj + ".weight", {n, h});
  out.out_b = reader.Get(proj + ".bias", {n});
  if (!reader.status().ok()) return reader.status();
  head = std::move(out);
  return absl::OkStatus();
}

namespace {

absl::StatusOr<at::ScalarType> ParseDtype(std::string_view name) {
  if (name == "float32") return at::kFloat;
  if (name == "float16") return at::kHalf;
  if (name == "bfloat16") return at::kBFloat16;
  return InvalidArgumentError(absl::StrCat("dtype must be float32, float16 or bfloat16, got \"", std::string(name), "\""));
}

}  // namespace

TokenBatch HfEncoder::Impl::Assemble(std::span<const EmbeddingInput> inputs) const {
  TokenBatch batch;
  batch.packed = options.execution == Execution::kPacked;
  batch.attention = attention;
  const int64_t b = static_cast<int64_t>(inputs.size());
  batch.offsets.push_back(0);
  for (const EmbeddingInput& in : inputs) {
    const int64_t n = static_cast<int64_t>(in.input_ids.size());
    batch.offsets.push_back(batch.offsets.back() + n);
    batch.max_length = std::max(batch.max_length, n);
  }
  const int64_t total = batch.packed ? batch.offsets.back() : b * batch.max_length;
  const auto longs = at::TensorOptions().dtype(at::kLong);
  at::Tensor ids = at::full({total}, model.config.pad_token_id, longs);
  at::Tensor positions = at::zeros({total}, longs);
  at::Tensor types = at::zeros({total}, longs);
  at::Tensor mask = at::zeros({total}, at::TensorOptions().dtype(at::kBool));
  int64_t* ids_p = ids.data_ptr<int64_t>();
  int64_t* pos_p = positions.data_ptr<int64_t>();
  int64_t* types_p = types.data_ptr<int64_t>();
  bool* mask_p = mask.data_ptr<bool>();
  // XLM-R numbers positions from pad_token_id + 1 and gives pad tokens
  // pad_token_id itself (transformers' create_position_ids_from_input_ids).
  const bool xlmr = model.config.architecture == Architecture::kXlmRoberta;
  const int64_t pad = model.config.pad_token_id;
  for (int64_t i = 0; i < b; ++i) {
    const EmbeddingInput& in = inputs[i];
    const int64_t base = batch.packed ? batch.offsets[i] : i * batch.max_length;
    int64_t non_pad = 0;
    for (size_t j = 0; j < in.input_ids.size(); ++j) {
      ids_p[base + j] = in.input_ids[j];
      if (xlmr) {
        non_pad += in.input_ids[j] != pad ? 1 : 0;
        pos_p[base + j] = in.input_ids[j] != pad ? pad + non_pad : pad;
      } else {
        pos_p[base + j] = static_cast<int64_t>(j);
      }
      types_p[base + j] = in.token_type_ids.empty() ? 0 : in.token_type_ids[j];
      mask_p[base + j] = true;
    }
  }
  if (!batch.packed) {
    ids = ids.view({b, batch.max_length});
    positions = positions.view({b, batch.max_length});
    types = types.view({b, batch.max_length});
    batch.key_mask = mask.view({b, batch.max_length}).to(device);
  }
  if (attention == AttentionKernel::kFlashVarlen || attention == AttentionKernel::kEfficientVarlen) {
    std::vector<int32_t> cu(batch.offsets.begin(), batch.offsets.end());
    batch.cu_seqlens = at::tensor(cu, at::TensorOptions().dtype(at::kInt)).to(device);
  }
  batch.ids = ids.to(device);
  batch.positions = positions.to(device);
  batch.types = types.to(device);
  return batch;
}

at::Tensor HfEncoder::Impl::Run(std::span<const EmbeddingInput> inputs) const {
  c10::InferenceMode guard;
  const TokenBatch batch = Assemble(inputs);
  at::Tensor hidden = transformer->Forward(batch);
  const int64_t h = hidden.size(-1);
  // Both layouts keep a request's tokens in consecutive rows of [rows, H].
  at::Tensor rows = hidden.reshape({-1, h});
  if (splade) return splade->Weights(rows, batch);
  std::vector<at::Tensor> pooled;
  pooled.reserve(inputs.size());
  if (head) {  // the first token's hidden state, as the classifiers read it
    for (int64_t i = 0; i < batch.batch_size(); ++i)
      pooled.push_back(rows[batch.packed ? batch.offsets[i] : i * batch.max_length]);
    at::Tensor x = at::tanh(at::linear(at::stack(pooled, 0), head->dense_w, head->dense_b));
    return at::linear(x, head->out_w, head->out_b).to(at::kCPU, at::kFloat).contiguous();
  }
  for (int64_t i = 0; i < batch.batch_size(); ++i) {
    const int64_t base = batch.packed ? batch.offsets[i] : i * batch.max_length;
    const int64_t n = batch.offsets[i + 1] - batch.offsets[i];
    switch (pooling) {
      case Pooling::kCls: pooled.push_back(rows[base]); break;
      case Pooling::kLast: pooled.push_back(rows[base + n - 1]); break;
      case Pooling::kMean: {
        const int64_t skip = model.include_prompt ? 0 : inputs[i].prompt_tokens;
        pooled.push_back(rows.narrow(0, base + skip, n - skip).to(at::kFloat).mean(0).to(rows.scalar_type()));
        break;
      }
      case Pooling::kSplade:  // returned above
        break;
    }
  }
  at::Tensor x = at::stack(pooled, 0);
  for (const Dense& d : dense) {
    x = at::linear(x, d.weight, d.bias);
    if (d.tanh) x = at::tanh(x);
  }
  return x.to(at::kCPU, at::kFloat).contiguous();
}

HfEncoder::HfEncoder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HfEncoder::~HfEncoder() = default;

absl::StatusOr<std::unique_ptr<HfEncoder>> HfEncoder::Load(const HfEncoderOptions& options) {
  // On a thread that ends, so that the OpenMP team the load starts ends too.
  return backend::RunOnOwnThread([&] { return LoadOnThisThread(options); });
}

absl::StatusOr<std::unique_ptr<HfEncoder>> HfEncoder::LoadOnThisThread(const HfEncoderOptions& options) {
  if (options.num_threads < 0) return InvalidArgumentError("num_threads must be >= 0");
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  absl::StatusOr<at::ScalarType> dtype = ParseDtype(options.dtype);
  if (!dtype.ok()) return dtype.status();
  impl->dtype = *dtype;
  if (!Guard("device", [&] { impl->device = at::Device(options.device); }).ok() ||
      !(impl->device.is_cpu() || impl->device.is_cuda())) {
    return InvalidArgumentError(absl::StrCat("bad device \"", options.device, "\"; expected cpu or cuda:N"));
  }
  if (impl->device.is_cuda() && !at::hasCUDA()) {
    return InvalidArgumentError(absl::StrCat("device ", options.device, " requested but libtorch has no CUDA"));
  }
  impl->peak = backend::DevicePeakMemory(impl->device);
  if (options.quantize == Quantization::kInt8 && (impl->dtype != at::kFloat || !impl->device.is_cpu())) {
    return InvalidArgumentError("int8 quantization runs float32 weights on the CPU: --dtype float32 --device cpu");
  }
  if (impl->device.is_cpu()) {
    if (absl::Status s = CheckCpuLowPrecision(impl->dtype == at::kBFloat16, options.quantize == Quantization::kInt8,
                                              DetectCpuLowPrecision());
        !s.ok()) {
      return s;
    }
  }
  if (options.cuda_memory_limit_bytes > 0) {
    if (absl::Status s = backend::LimitCudaMemory(impl->device, options.cuda_memory_limit_bytes); !s.ok()) return s;
  }
  if (options.num_threads > 0) backend::ApplyForwardThreads(options.num_threads);

  absl::StatusOr<ModelDirectory> model = ReadModelDirectory(options.model_dir);
  if (!model.ok()) return model.status();
  impl->model = *std::move(model);
  const ModelDirectory& m = impl->model;
  absl::StatusOr<AttentionKernel> attention =
      ChooseAttentionKernel(options.attention, options.execution, impl->device, impl->dtype, m.config.head_dim);
  if (!attention.ok()) return attention.status();
  impl->attention = *attention;
  if (m.classifier && (options.pooling || options.normalize)) {
    return InvalidArgumentError(absl::StrCat(options.model_dir, " is a cross-encoder (",
                                             m.classifier->architecture_class,
                                             "): its head reads the first token and gives scores, so pooling and "
                                             "normalisation do not apply"));
  }
  if (options.pooling == Pooling::kSplade && !m.splade) {
    return InvalidArgumentError(absl::StrCat(options.model_dir, ": splade pooling needs a masked-LM head (BertForMaskedLM)"));
  }
  if (m.classifier) {
    impl->pooling = Pooling::kCls;  // the head reads the first token
  } else if (options.pooling) {
    impl->pooling = *options.pooling;
  } else if (m.splade) {
    impl->pooling = Pooling::kSplade;
  } else if (m.pooling) {
    impl->pooling = *m.pooling;
  } else {
    return InvalidArgumentError(absl::StrCat(options.model_dir,
                                             ": no sentence-transformers Pooling module (modules.json); "
                                             "say how to pool with --pooling cls|mean|last"));
  }
  const bool sparse = impl->pooling == Pooling::kSplade;
  if (sparse && options.normalize) return InvalidArgumentError("sparse (splade) embeddings are not normalised");
  // A classifier's logits are scores, never normalised by default; nor are sparse weights.
  impl->normalize = m.classifier || sparse ? false : options.normalize.value_or(m.normalize);

  absl::StatusOr<Checkpoint> checkpoint = Checkpoint::Open(m.transformer_dir);
  if (!checkpoint.ok()) return checkpoint.status();
  absl::Status loaded = Guard("loading weights", [&] {
    absl::StatusOr<std::unique_ptr<Transformer>> t =
        LoadTransformer(m.config, *checkpoint, impl->dtype, impl->device);
    if (!t.ok()) throw std::invalid_argument(std::string(t.status().message()));
    impl->transformer = *std::move(t);
    if (m.classifier) {
      if (absl::Status s = impl->LoadHead(*checkpoint); !s.ok()) throw std::invalid_argument(std::string(s.message()));
      impl->width = static_cast<int>(m.classifier->labels.size());
      return;
    }
    if (impl->pooling == Pooling::kSplade) {
      absl::StatusOr<std::unique_ptr<Splade>> head =
          Splade::Load(m, *checkpoint, *impl->transformer, impl->dtype, impl->device);
      if (!head.ok()) throw std::invalid_argument(std::string(head.status().message()));
      impl->splade = *std::move(head);
      impl->width = static_cast<int>(m.config.vocab_size);
      return;
    }
    int64_t width = m.config.hidden_size;
    for (const DenseLayer& layer : m.dense) {
      if (layer.in_features != width) {
        throw std::invalid_argument(absl::StrCat(layer.dir, "/config.json: in_features ", layer.in_features,
                                                 " does not match the width before it, ", width));
      }
      absl::StatusOr<Checkpoint> dense_weights = Checkpoint::Open(layer.dir);
      if (!dense_weights.ok()) throw std::invalid_argument(std::string(dense_weights.status().message()));
      WeightReader reader(*dense_weights, "", impl->dtype, impl->device);
      Impl::Dense d;
      d.weight = reader.Get("linear.weight", {layer.out_features, layer.in_features});
      if (layer.bias) d.bias = reader.Get("linear.bias", {layer.out_features});
      d.tanh = layer.activation == "tanh";
      if (!reader.status().ok()) throw std::invalid_argument(std::string(reader.status().message()));
      impl->dense.push_back(std::move(d));
      width = layer.out_features;
    }
    impl->width = static_cast<int>(width);
  });
  if (!loaded.ok()) {
    // Guard classified our own std::invalid_argument as a BackendError; a bad file is bad input.
    return loaded.code() == absl::StatusCode::kResourceExhausted ? loaded
                                                                  : InvalidArgumentError(loaded.message());
  }
  impl->limits = backend::EncoderOptions{.model_path = options.model_dir,
                                         .device = options.device,
                                         .pooling = impl->pooling,
                                         .normalize = impl->normalize,
                                         .pad_token_id = m.config.pad_token_id,
                                         .max_positions = m.max_seq_length,
                                         .vocab_size = m.config.vocab_size};
  std::unique_ptr<HfEncoder> encoder(new HfEncoder(std::move(impl)));
  // Probe: two requests of different lengths, so both layouts mask or split.
  std::vector<EmbeddingInput> probe(2);
  const int64_t probe_length = std::min<int64_t>(3, m.max_seq_length);
  probe[0].input_ids.assign(probe_length, 0);
  probe[1].input_ids.assign(std::max<int64_t>(1, probe_length - 1), 0);
  absl::StatusOr<std::vector<Embedding>> out = encoder->Embed(probe);
  if (!out.ok()) {
    const bool cpu_half = options.dtype == "float16" && !encoder->on_cuda();
    return absl::Status(out.status().code(),
                        absl::StrCat("probe forward with dtype ", options.dtype, " on ", options.device, ": ",
                                     out.status().message(),
                                     cpu_half ? " (libtorch lacks float16 CPU kernels for this model: use float32 "
                                                "or bfloat16 on the CPU)"
                                              : ""));
  }
  if (options.quantize == Quantization::kInt8) {
    if (absl::Status s = encoder->QuantizeInt8(); !s.ok()) return s;
  }
  return encoder;
}

absl::StatusOr<std::vector<Embedding>> HfEncoder::Embed(std::span<const EmbeddingInput> inputs) const {
  if (inputs.empty()) return std::vector<Embedding>{};
  const Impl& impl = *impl_;
  absl::Status valid = backend::ValidateInputs(inputs, impl.limits, impl.width,
                                               /*accepts_token_types=*/impl.model.config.type_vocab_size > 0);
  if (!valid.ok()) return valid;
  for (size_t i = 0; i < inputs.size(); ++i) {
    for (int32_t t : inputs[i].token_type_ids) {
      if (t >= impl.model.config.type_vocab_size) {
        return InvalidArgumentError(absl::StrCat("input ", i, ": token type ", t, " >= type_vocab_size ",
                                                 impl.model.config.type_vocab_size));
      }
    }
    if (inputs[i].prompt_tokens < 0 || inputs[i].prompt_tokens >= static_cast<int>(inputs[i].input_ids.size())) {
      return InvalidArgumentError(absl::StrCat("input ", i, ": prompt_tokens ", inputs[i].prompt_tokens,
                                               " must be in [0, ", inputs[i].input_ids.size(), ")"));
    }
  }
  at::Tensor pooled;
  absl::Status ran = Guard(absl::StrCat("forward of ", inputs.size(), " inputs"), [&] {
    // OpenMP's thread count is per calling thread, so apply it on each caller.
    if (impl.options.num_threads > 0) {
      const int operator_threads = backend::OperatorThreads(impl.options.num_threads);
      if (at::get_num_threads() != operator_threads) at::set_num_threads(operator_threads);
    }
    pooled = impl.Run(inputs);
  });
  if (!ran.ok()) return ran;
  std::vector<Embedding> out;
  out.reserve(inputs.size());
  const float* p = pooled.data_ptr<float>();
  for (size_t i = 0; i < inputs.size() && impl.splade; ++i) {
    out.push_back(backend::SparseEmbedding(std::span<const float>(p + i * impl.width, impl.width)));
  }
  for (size_t i = 0; i < inputs.size() && !impl.splade; ++i) {
    out.push_back(backend::FinishEmbedding(std::span<const float>(p + i * impl.width, impl.width),
                                           inputs[i].dimensions, inputs[i].normalize.value_or(impl.normalize)));
  }
  return out;
}

int HfEncoder::hidden_size() const { return impl_->width; }
bool HfEncoder::on_cuda() const { return impl_->device.is_cuda(); }
absl::Status HfEncoder::ResetPeakMemory() const { return impl_->peak.Reset(); }
absl::StatusOr<int64_t> HfEncoder::PeakMemoryBytes() const { return impl_->peak.Peak(); }
const ModelDirectory& HfEncoder::model() const { return impl_->model; }
const HfEncoderOptions& HfEncoder::options() const { return impl_->options; }
backend::Pooling HfEncoder::pooling() const { return impl_->pooling; }
bool HfEncoder::normalize() const { return impl_->normalize; }

backend::EncoderInfo HfEncoder::info() const {
  const ModelDirectory& m = impl_->model;
  backend::EncoderInfo info{.name = "hf",
                            .architecture = m.config.model_type,
                            .layer_width = m.config.hidden_size,
                            .num_layers = m.config.num_hidden_layers,
                            .num_heads = m.config.num_attention_heads,
                            .execution = std::string(kExecutionNames.Name(impl_->options.execution)),
                            .dtype = impl_->options.dtype,
                            .attention = std::string(AttentionKernelName(impl_->attention)),
                            .vocab_size = m.config.vocab_size,
                            .max_positions = m.max_seq_length,
                            .default_normalize = impl_->normalize,
                            .sparse = impl_->pooling == Pooling::kSplade,
                            .quantization = impl_->quality ? "int8" : "",
                            .quantization_quality = impl_->quality};
  if (m.classifier) {
    info.classifier = backend::ClassifierInfo{.labels = m.classifier->labels,
                                              .activation = m.classifier->activation,
                                              .label_scoring = m.classifier->label_scoring,
                                              .token_types = m.config.type_vocab_size > 1};
  } else {
    info.pooling = std::string(backend::PoolingName(impl_->pooling));
  }
  return info;
}

}  // namespace tokenbatch::hf
