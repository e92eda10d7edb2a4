// tokenbatch._models: Embedder and Reranker, the Hugging Face model directory
// backend (hf::HfEncoder, the one `tokenbatch serve --model-id` runs) behind
// the embedding service (tokenizer -> Batcher -> encoder), in process.
//
// Built against the interpreter's own torch (src/python/CMakeLists.txt), so
// it shares libtorch with the user's PyTorch; import torch first (the package
// does). encode/predict block without the GIL until their inputs are done;
// submit resolves an asyncio future through loop.call_soon_threadsafe, taking
// the GIL on the service's thread once per request.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <future>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "python/py_ref.h"
#include "python/thread_signals.h"
#include "tokenbatch/core/errors.h"
#include "tokenbatch/hf/hf_encoder.h"
#include "tokenbatch/service/embedding_service.h"

namespace tokenbatch::python {
namespace {

namespace nb = nanobind;

[[noreturn]] void Raise(const absl::Status& status) {
  PyObject* type = PyExc_RuntimeError;
  switch (GetErrorKind(status)) {
    case ErrorKind::kInvalidArgument:
    case ErrorKind::kOversize:
      type = PyExc_ValueError;
      break;
    case ErrorKind::kOutOfMemory:
      type = PyExc_MemoryError;
      break;
    default:
      if (absl::IsNotFound(status)) type = PyExc_FileNotFoundError;
      if (absl::IsInvalidArgument(status)) type = PyExc_ValueError;
  }
  PyErr_SetString(type, std::string(status.message()).c_str());
  throw nb::python_error();
}

// float32 numpy array [rows, cols] (or [cols] when rows < 0) copied from `values`.
nb::object ToArray(const std::vector<std::vector<float>>& values, std::int64_t rows) {
  const std::size_t n = values.size();
  const std::size_t cols = n > 0 ? values[0].size() : 0;
  auto* buffer = new float[std::max<std::size_t>(n * cols, 1)];
  for (std::size_t i = 0; i < n; ++i) std::copy(values[i].begin(), values[i].end(), buffer + i * cols);
  nb::capsule owner(buffer, [](void* p) noexcept { delete[] static_cast<float*>(p); });
  if (rows < 0) return nb::cast(nb::ndarray<nb::numpy, float>(buffer, {cols}, owner));
  return nb::cast(nb::ndarray<nb::numpy, float>(buffer, {n, cols}, owner));
}

// Embedder's and Reranker's budget when none is given (tokens).
constexpr std::int64_t kDefaultMaxBatchTokens = 16384;

struct LoadOptions {
  std::string model_dir, device, dtype, execution;
  std::int64_t max_batch_tokens, max_batch_size;
  double max_wait_s;
  int num_threads, tokenizer_threads;
  std::int64_t max_queue_size;
};

class Model {
 public:
  explicit Model(const LoadOptions& o) {
    absl::StatusOr<std::unique_ptr<hf::HfEncoder>> encoder;
    absl::StatusOr<std::unique_ptr<tokenizer::Tokenizer>> tok;
    absl::StatusOr<hf::Execution> execution = hf::ParseExecution(o.execution);
    if (!execution.ok()) Raise(execution.status());
    {
      nb::gil_scoped_release release;
      const ThreadsWithoutSignals no_signals;  // libtorch's pool starts in the probe forward
      encoder = hf::HfEncoder::Load({.model_dir = o.model_dir,
                                     .device = o.device,
                                     .dtype = o.dtype,
                                     .execution = *execution,
                                     .num_threads = o.num_threads});
      if (encoder.ok()) {
        const std::string& path = (*encoder)->model().tokenizer_path;
        tok = path.empty() ? absl::NotFoundError(absl::StrCat(o.model_dir, " has no tokenizer.json"))
                           : tokenizer::Tokenizer::FromFile(path, {.lowercase = (*encoder)->model().do_lower_case});
      }
    }
    if (!encoder.ok()) Raise(WithMessagePrefix(encoder.status(), "loading " + o.model_dir + ": "));
    if (!tok.ok()) Raise(tok.status());
    const hf::ModelDirectory& dir = (*encoder)->model();
    server::ServiceOptions s;
    s.batcher.scheduler.cost_model = *execution == hf::Execution::kPacked ? CostModel::Sum() : CostModel::Padded();
    // 0: the default budget, raised to hold one longest input (as serve's).
    s.batcher.scheduler.max_batch_tokens = o.max_batch_tokens > 0 ? o.max_batch_tokens : kDefaultMaxBatchTokens;
    s.short_budget = o.max_batch_tokens > 0 ? server::ShortBudget::kRefuse : server::ShortBudget::kRaise;
    s.batcher.scheduler.max_batch_size = o.max_batch_size;
    s.batcher.scheduler.max_wait = std::chrono::duration_cast<Duration>(std::chrono::duration<double>(o.max_wait_s));
    // The model's limit; a max_batch_tokens that cannot hold one such input is
    // refused by Create (server::ShortBudget::kRefuse), never made the limit.
    s.batcher.scheduler.max_input_tokens = dir.max_seq_length;
    s.batcher.scheduler.max_queue_size = static_cast<std::size_t>(o.max_queue_size);
    s.tokenizer_threads = o.tokenizer_threads;
    // As sentence-transformers: inputs longer than max_seq_length are cut.
    s.auto_truncate = true;
    if (dir.truncate_left) s.truncation_direction = server::TruncationDirection::kLeft;
    s.prompts = dir.prompts;
    if (!dir.default_prompt_name.empty()) s.default_prompt = dir.prompts.at(dir.default_prompt_name);
    if ((*encoder)->info().sparse) {
      Raise(InvalidArgumentError(o.model_dir + " is a sparse (SPLADE) model: its weights per vocabulary id are served "
                                               "by `tokenbatch serve` on /embed_sparse; Embedder gives dense "
                                               "embeddings (pass pooling= to embed with the encoder alone)"));
    }
    classifier_ = (*encoder)->info().classifier.has_value();
    hidden_size_ = (*encoder)->hidden_size();
    absl::StatusOr<std::unique_ptr<server::EmbeddingService>> service;
    {
      nb::gil_scoped_release release;
      const ThreadsWithoutSignals no_signals;  // the service's threads (thread_signals.h)
      service = server::EmbeddingService::Create(std::move(s), std::move(*tok), std::move(*encoder));
    }
    if (!service.ok()) Raise(service.status());
    service_ = std::move(*service);
  }
  ~Model() {
    nb::gil_scoped_release release;
    service_.reset();
  }

  // Blocks without the GIL until every input is embedded; [N, H] float32.
  nb::object Run(server::EmbedRequest request) {
    ReleaseDeferredReferences();
    const std::size_t n = request.inputs.size();
    if (n == 0) return ToArray({}, 0);
    std::promise<absl::StatusOr<server::EmbedResult>> promise;
    std::future<absl::StatusOr<server::EmbedResult>> result = promise.get_future();
    absl::StatusOr<server::EmbedResult> r;
    {
      nb::gil_scoped_release release;
      service_->Embed(std::move(request), [&promise](absl::StatusOr<server::EmbedResult> r) {
        promise.set_value(std::move(r));
      });
      r = result.get();
    }
    if (!r.ok()) Raise(r.status());
    return ToArray(r->embeddings, static_cast<std::int64_t>(n));
  }

  // Queues `request`; calls loop.call_soon_threadsafe(resolve, future, array or
  // exception) once, from the service's thread. Never blocks on the model.
  void Submit(server::EmbedRequest request, nb::handle loop, nb::handle resolve, nb::handle future) {
    // PyRefs, not nb::objects: the service may keep copies of the callback
    // that it destroys on its own threads, without the GIL (py_ref.h).
    struct Target {
      PyRef loop, resolve, future;
    };
    ReleaseDeferredReferences();
    auto target = std::make_shared<Target>(
        Target{PyRef::Borrow(loop.ptr()), PyRef::Borrow(resolve.ptr()), PyRef::Borrow(future.ptr())});
    nb::gil_scoped_release release;
    service_->Embed(std::move(request), [target](absl::StatusOr<server::EmbedResult> r) {
      nb::gil_scoped_acquire gil;
      nb::object value;
      if (r.ok()) {
        value = ToArray(r->embeddings, -1);
      } else {
        const bool bad_input = GetErrorKind(r.status()) == ErrorKind::kInvalidArgument ||
                               GetErrorKind(r.status()) == ErrorKind::kOversize;
        value = nb::handle(bad_input ? PyExc_ValueError : PyExc_RuntimeError)(
            nb::str(r.status().message().data(), r.status().message().size()));
      }
      try {
        nb::handle(target->loop.get())
            .attr("call_soon_threadsafe")(nb::handle(target->resolve.get()), nb::handle(target->future.get()), value);
      } catch (nb::python_error& e) {
        // The loop is closed: nobody awaits the future any more.
        e.discard_as_unraisable("tokenbatch: delivering an embedding");
      }
    });
  }

  void Close() {
    nb::gil_scoped_release release;
    service_->Shutdown(ShutdownMode::kDrain);
  }

  [[nodiscard]] nb::dict Info() const {
    const backend::EncoderInfo info = service_->backend().info();
    nb::dict d;
    d["architecture"] = info.architecture;
    d["dtype"] = info.dtype;
    d["attention"] = info.attention;
    d["pooling"] = info.pooling;
    d["hidden_size"] = hidden_size_;
    d["max_input_tokens"] = service_->max_input_tokens();
    d["normalize"] = info.default_normalize;
    if (info.classifier) {
      d["labels"] = info.classifier->labels;
      d["activation"] = std::string(backend::ScoreActivationName(info.classifier->activation));
    }
    return d;
  }
  [[nodiscard]] bool classifier() const { return classifier_; }

 private:
  std::unique_ptr<server::EmbeddingService> service_;
  bool classifier_ = false;
  int hidden_size_ = 0;
};

server::EmbedRequest TextsRequest(const std::vector<std::string>& texts, std::optional<bool> normalize,
                                  std::optional<std::string> prompt_name, int dimensions) {
  server::EmbedRequest request;
  request.inputs.reserve(texts.size());
  for (const std::string& t : texts) request.inputs.push_back({.text = t});
  request.normalize = normalize;
  request.prompt_name = std::move(prompt_name);
  request.dimensions = dimensions;
  return request;
}

server::EmbedRequest PairsRequest(const std::vector<std::pair<std::string, std::string>>& pairs) {
  server::EmbedRequest request;
  request.inputs.reserve(pairs.size());
  for (const auto& [query, document] : pairs) request.inputs.push_back({.text = query, .text_pair = document});
  return request;
}

}  // namespace
}  // namespace tokenbatch::python

NB_MODULE(_models, m) {
  using namespace tokenbatch::python;
  m.doc() = "tokenbatch's Hugging Face model backend in process (see tokenbatch.Embedder and tokenbatch.Reranker)";
  nb::class_<Model>(m, "_Model", "A loaded model directory behind the embedding service (see models.py).")
      .def(
          "__init__",
          [](Model* self, const std::string& model_dir, const std::string& device, const std::string& dtype,
             const std::string& execution, std::int64_t max_batch_tokens, std::int64_t max_batch_size,
             double max_wait_s, int num_threads, int tokenizer_threads, std::int64_t max_queue_size) {
            new (self) Model(LoadOptions{model_dir, device, dtype, execution, max_batch_tokens, max_batch_size,
                                         max_wait_s, num_threads, tokenizer_threads, max_queue_size});
          },
          nb::kw_only(), nb::arg("model_dir"), nb::arg("device"), nb::arg("dtype"), nb::arg("execution"),
          nb::arg("max_batch_tokens"), nb::arg("max_batch_size"), nb::arg("max_wait_s"), nb::arg("num_threads"),
          nb::arg("tokenizer_threads"), nb::arg("max_queue_size"))
      .def("embed",
           [](Model& self, const std::vector<std::string>& texts, std::optional<bool> normalize,
              std::optional<std::string> prompt_name, int dimensions) {
             return self.Run(TextsRequest(texts, normalize, std::move(prompt_name), dimensions));
           },
           nb::arg("texts"), nb::arg("normalize").none(), nb::arg("prompt_name").none(), nb::arg("dimensions"))
      .def("embed_async",
           [](Model& self, const std::string& text, std::optional<bool> normalize,
              std::optional<std::string> prompt_name, int dimensions, nb::object loop, nb::object resolve,
              nb::object future) {
             self.Submit(TextsRequest({text}, normalize, std::move(prompt_name), dimensions), loop, resolve, future);
           },
           nb::arg("text"), nb::arg("normalize").none(), nb::arg("prompt_name").none(), nb::arg("dimensions"),
           nb::arg("loop"), nb::arg("resolve"), nb::arg("future"))
      .def("logits",
           [](Model& self, const std::vector<std::pair<std::string, std::string>>& pairs) {
             return self.Run(PairsRequest(pairs));
           },
           nb::arg("pairs"))
      .def("logits_async",
           [](Model& self, const std::string& query, const std::string& document, nb::object loop,
              nb::object resolve, nb::object future) {
             self.Submit(PairsRequest({{query, document}}), loop, resolve, future);
           },
           nb::arg("query"), nb::arg("document"), nb::arg("loop"), nb::arg("resolve"), nb::arg("future"))
      .def("close", &Model::Close)
      .def_prop_ro("info", &Model::Info)
      .def_prop_ro("is_cross_encoder", &Model::classifier);
}
