// TorchEncoder: the only translation unit that includes the TorchScript headers
// (they take tens of seconds to compile). Validation and post-processing live in
// postprocess.cc, error mapping in classify.cc.
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <torch/cuda.h>
#include <torch/script.h>


#include <filesystem>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "backend/classify.h"
#include "backend/device_peak_memory.h"
#include "backend/postprocess.h"
#include "backend/torch_guard.h"
#include "tokenbatch/backend/encoder.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::backend {

struct TorchEncoder::Impl {
  EncoderOptions options;
  torch::jit::Module module;
  torch::Device device{torch::kCPU};
  bool accepts_token_types = false;
  int hidden_size = 0;
  // Calibration state; see ResetPeakMemory (not thread-safe by contract).
  mutable DevicePeakMemory peak{torch::kCPU};

  // Runs forward on a [B, L] batch and returns the last hidden state, checked to
  // be a floating tensor [B, L, H]. Throws on any failure (callers classify).
  torch::Tensor Forward(const torch::Tensor& ids, const torch::Tensor& mask,
                        const std::optional<torch::Tensor>& types);
};

namespace {

// A short description of an IValue's type for error messages.
std::string Describe(const torch::IValue& v) {
  if (v.isTensor()) {
    const torch::Tensor& t = v.toTensor();
    return absl::StrCat("tensor of shape ", c10::str(t.sizes()), " and dtype ",
                        std::string(c10::toString(t.scalar_type())));
  }
  return v.tagKind();
}

// The module's output is not a float [B, L, H] tensor where the options say it is.
struct BadOutput : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// Pulls the hidden-state tensor out of the module's output (a tensor, a dict or a
// tuple/list). Throws BadOutput if it is not there.
torch::Tensor SelectOutput(const torch::IValue& out, const EncoderOptions& options) {
  if (out.isTensor()) return out.toTensor();
  if (out.isGenericDict()) {
    c10::Dict<torch::IValue, torch::IValue> dict = out.toGenericDict();
    auto it = dict.find(torch::IValue(options.output_name));
    if (it == dict.end() || !it->value().isTensor()) {
      throw BadOutput(
          absl::StrCat("model output dict has no tensor \"", options.output_name, "\""));
    }
    return it->value().toTensor();
  }
  if (out.isTuple() || out.isList()) {
    std::vector<torch::IValue> items = out.isTuple() ? out.toTupleRef().elements().vec()
                                                     : out.toListRef().vec();
    if (options.output_index < 0 || options.output_index >= static_cast<int>(items.size()) ||
        !items[options.output_index].isTensor()) {
      throw BadOutput(absl::StrCat("model output has ", items.size(),
                                               " elements; element ", options.output_index,
                                               " is not a tensor"));
    }
    return items[options.output_index].toTensor();
  }
  throw BadOutput(absl::StrCat("model output is a ", Describe(out),
                                           ", not a tensor, dict or tuple"));
}

}  // namespace

torch::Tensor TorchEncoder::Impl::Forward(const torch::Tensor& ids, const torch::Tensor& mask,
                                          const std::optional<torch::Tensor>& types) {
  std::vector<torch::IValue> args{ids, mask};
  if (accepts_token_types) args.emplace_back(types ? *types : torch::zeros_like(ids));
  torch::Tensor h = SelectOutput(module.forward(std::move(args)), options);
  if (h.dim() != 3 || h.size(0) != ids.size(0) || h.size(1) != ids.size(1) ||
      !h.is_floating_point() || h.size(2) <= 0) {
    throw BadOutput(absl::StrCat(
        "model output must be a float tensor [B, L, H] = [", ids.size(0), ", ", ids.size(1),
        ", H]; got ", Describe(torch::IValue(h))));
  }
  return h;
}

TorchEncoder::TorchEncoder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TorchEncoder::~TorchEncoder() = default;

int TorchEncoder::hidden_size() const { return impl_->hidden_size; }
EncoderInfo TorchEncoder::info() const {
  const EncoderOptions& o = impl_->options;
  return EncoderInfo{.name = "torch",
                     .pooling = std::string(PoolingName(o.pooling)),
                     .vocab_size = o.vocab_size,
                     .max_positions = o.max_positions,
                     .default_normalize = o.normalize};
}
const EncoderOptions& TorchEncoder::options() const { return impl_->options; }
bool TorchEncoder::on_cuda() const { return impl_->device.is_cuda(); }

void SetForwardThreads(int threads) {
  if (threads >= 1) ApplyForwardThreads(threads);
}

absl::StatusOr<std::unique_ptr<TorchEncoder>> TorchEncoder::Load(const EncoderOptions& options) {
  // On a thread that ends, so that the OpenMP team the load starts ends too.
  return RunOnOwnThread([&] { return LoadOnThisThread(options); });
}

absl::StatusOr<std::unique_ptr<TorchEncoder>> TorchEncoder::LoadOnThisThread(const EncoderOptions& options) {
  if (options.model_path.empty()) return InvalidArgumentError("model_path is empty");
  std::error_code ec;
  if (!std::filesystem::is_regular_file(options.model_path, ec)) {
    return InvalidArgumentError(absl::StrCat("no model file at ", options.model_path));
  }
  if (options.num_threads < 0 || options.max_positions < 0 || options.vocab_size < 0 ||
      options.pad_token_id < 0 ||
      (options.vocab_size > 0 && options.pad_token_id >= options.vocab_size)) {
    return InvalidArgumentError(absl::StrCat(
        "bad encoder options: num_threads ", options.num_threads, ", max_positions ",
        options.max_positions, ", vocab_size ", options.vocab_size, ", pad_token_id ",
        options.pad_token_id, " (all must be >= 0 and pad_token_id < vocab_size)"));
  }
  if (options.pooling == Pooling::kSplade) {
    return InvalidArgumentError(
        "splade pooling reads a masked-LM head, which a TorchScript encoder does not have: serve a BertForMaskedLM "
        "directory with --model-id");
  }
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  absl::Status device_ok = Guard("device", [&] { impl->device = torch::Device(options.device); });
  if (!device_ok.ok()) {
    return InvalidArgumentError(absl::StrCat("bad device \"", options.device,
                                             "\"; expected cpu or cuda:N"));
  }
  if (impl->device.is_cuda() && !torch::cuda::is_available()) {
    return InvalidArgumentError(absl::StrCat("device ", options.device,
                                             " requested but libtorch sees no CUDA device"));
  }
  if (!impl->device.is_cuda() && !impl->device.is_cpu()) {
    return InvalidArgumentError(absl::StrCat("unsupported device ", options.device));
  }
  impl->peak = DevicePeakMemory(impl->device);
  if (options.num_threads > 0) ApplyForwardThreads(options.num_threads);

  std::string bad_signature;
  absl::Status loaded = Guard(absl::StrCat("loading ", options.model_path), [&] {
    impl->module = torch::jit::load(options.model_path, impl->device);
    impl->module.eval();
    const c10::FunctionSchema& schema = impl->module.get_method("forward").function().getSchema();
    // arguments() includes `self`.
    const size_t n = schema.arguments().size();
    if (n < 3) {
      bad_signature = absl::StrCat(
          "forward must take (input_ids, attention_mask[, token_type_ids]); it takes ", n - 1,
          " arguments");
    }
    impl->accepts_token_types = n >= 4;
  });
  if (!loaded.ok()) return loaded;
  if (!bad_signature.empty()) {
    return InvalidArgumentError(absl::StrCat(options.model_path, ": ", bad_signature));
  }

  // Probe [2, 3]: the second row has one padding position, so masking is exercised.
  torch::Tensor hidden;
  std::optional<std::string> bad_output;
  absl::Status probed = Guard("load probe forward [2, 3]", [&] {
    c10::InferenceMode guard;
    torch::Tensor ids = torch::full({2, 3}, options.pad_token_id, torch::kLong);
    torch::Tensor mask = torch::ones({2, 3}, torch::kLong);
    mask[1][2] = 0;
    try {
      hidden = impl->Forward(ids.to(impl->device), mask.to(impl->device), std::nullopt);
    } catch (const BadOutput& e) {
      bad_output = e.what();
    }
  });
  if (!probed.ok()) return probed;
  if (bad_output) {
    return InvalidArgumentError(absl::StrCat(options.model_path, ": ", *bad_output));
  }
  impl->hidden_size = static_cast<int>(hidden.size(2));
  return std::unique_ptr<TorchEncoder>(new TorchEncoder(std::move(impl)));
}

absl::StatusOr<std::vector<Embedding>> TorchEncoder::Embed(
    std::span<const EmbeddingInput> inputs) const {
  if (inputs.empty()) return std::vector<Embedding>{};
  Impl& impl = *impl_;
  absl::Status valid;
  absl::Status checked = Guard("validation", [&] {
    valid = ValidateInputs(inputs, impl.options, impl.hidden_size, impl.accepts_token_types);
  });
  if (!checked.ok()) return checked;
  if (!valid.ok()) return valid;

  const int64_t b = static_cast<int64_t>(inputs.size());
  int64_t l = 0;
  bool any_types = false;
  for (const EmbeddingInput& in : inputs) {
    l = std::max<int64_t>(l, static_cast<int64_t>(in.input_ids.size()));
    any_types = any_types || !in.token_type_ids.empty();
  }
  const int h = impl.hidden_size;
  std::vector<float> pooled_host;
  absl::Status ran = Guard(absl::StrCat("forward of batch [", b, ", ", l, "]"), [&] {
    // OpenMP's thread count is per calling thread, so apply it on each caller.
    if (impl.options.num_threads > 0) {
      const int operator_threads = OperatorThreads(impl.options.num_threads);
      if (at::get_num_threads() != operator_threads) at::set_num_threads(operator_threads);
    }
    c10::InferenceMode guard;
    // Right padding: real tokens keep positions 0..n-1, as the model saw in training.
    torch::Tensor ids = torch::full({b, l}, impl.options.pad_token_id, torch::kLong);
    torch::Tensor mask = torch::zeros({b, l}, torch::kLong);
    torch::Tensor lengths = torch::empty({b}, torch::kLong);
    std::optional<torch::Tensor> types;
    if (any_types && impl.accepts_token_types) types = torch::zeros({b, l}, torch::kLong);
    int64_t* ids_p = ids.data_ptr<int64_t>();
    int64_t* mask_p = mask.data_ptr<int64_t>();
    int64_t* len_p = lengths.data_ptr<int64_t>();
    for (int64_t i = 0; i < b; ++i) {
      const EmbeddingInput& in = inputs[i];
      const int64_t n = static_cast<int64_t>(in.input_ids.size());
      len_p[i] = n;
      for (int64_t j = 0; j < n; ++j) {
        ids_p[i * l + j] = in.input_ids[j];
        mask_p[i * l + j] = 1;
      }
      if (types && !in.token_type_ids.empty()) {
        int64_t* types_p = types->data_ptr<int64_t>();
        for (int64_t j = 0; j < n; ++j) types_p[i * l + j] = in.token_type_ids[j];
      }
    }
    ids = ids.to(impl.device);
    mask = mask.to(impl.device);
    lengths = lengths.to(impl.device);
    if (types) types = types->to(impl.device);

    torch::Tensor hidden = impl.Forward(ids, mask, types);
    if (hidden.size(2) != h) {
      throw BadOutput(absl::StrCat("model output width changed from ", h, " to ",
                                               hidden.size(2)));
    }
    torch::Tensor pooled;  // [B, H]
    switch (impl.options.pooling) {
      case Pooling::kCls:
        pooled = hidden.select(1, 0);
        break;
      case Pooling::kMean: {
        torch::Tensor m = mask.to(hidden.scalar_type()).unsqueeze(-1);  // [B, L, 1]
        pooled = (hidden * m).sum(1) / lengths.to(hidden.scalar_type()).unsqueeze(-1);
        break;
      }
      case Pooling::kLast: {
        torch::Tensor index = (lengths - 1).view({b, 1, 1}).expand({b, 1, h});
        pooled = hidden.gather(1, index).squeeze(1);
        break;
      }
      case Pooling::kSplade:  // refused by Load
        throw std::logic_error("splade pooling on a TorchScript encoder");
    }
    pooled = pooled.to(torch::kCPU, torch::kFloat).contiguous();
    pooled_host.assign(pooled.data_ptr<float>(), pooled.data_ptr<float>() + b * h);
  });
  if (!ran.ok()) return ran;

  std::vector<Embedding> out;
  absl::Status finished = Guard("post-processing", [&] {
    out.reserve(inputs.size());
    for (int64_t i = 0; i < b; ++i) {
      const EmbeddingInput& in = inputs[i];
      out.push_back(FinishEmbedding(std::span<const float>(pooled_host).subspan(i * h, h),
                                    in.dimensions, in.normalize.value_or(impl.options.normalize)));
    }
  });
  if (!finished.ok()) return finished;
  return out;
}

absl::Status TorchEncoder::ResetPeakMemory() const { return impl_->peak.Reset(); }

absl::StatusOr<int64_t> TorchEncoder::PeakMemoryBytes() const { return impl_->peak.Peak(); }

}  // namespace tokenbatch::backend
