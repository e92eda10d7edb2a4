// The noop encoder: fixed, checkable vectors without a model (see the header).
#include <array>
#include <cmath>
#include <map>
#include <thread>

#include "absl/strings/str_cat.h"
#include "tokenbatch/core/errors.h"
#include "tokenbatch/backend/noop_encoder.h"

namespace tokenbatch::backend {
namespace {

// The vector starting at offset k (0..96) with `dims` values, normalised or not:
// v[j] = ((k + j) mod 97) / 97, stepped without a division per value.
void FillVector(int k, int dims, bool normalize, std::vector<float>& v) {
  v.resize(dims);
  double norm2 = 0;
  for (int j = 0; j < dims; ++j) {
    v[j] = static_cast<float>(k) / 97.0f;
    norm2 += double(v[j]) * v[j];
    k = k == 96 ? 0 : k + 1;
  }
  if (normalize && norm2 > 0) {
    const double inv = 1.0 / std::sqrt(norm2);
    for (float& x : v) x = static_cast<float>(x * inv);
  }
}

class NoopEncoder final : public Encoder {
 public:
  // Full-width vectors (the common case) are made once here, for each of the 97
  // offsets, raw and normalised: a request then costs a copy (the no-op backend
  // should cost next to nothing, so that benchmarks of it measure the server).
  explicit NoopEncoder(const NoopEncoderOptions& options) : options_(options) {
    if (options_.hidden_size >= 1 && options_.hidden_size <= kMaxTabulatedHiddenSize) {
      for (int k = 0; k < 97; ++k) {
        FillVector(k, options_.hidden_size, false, raw_[k]);
        FillVector(k, options_.hidden_size, true, unit_[k]);
      }
    }
  }

  absl::StatusOr<std::vector<Embedding>> Embed(
      std::span<const EmbeddingInput> inputs) const override {
    if (options_.delay.count() > 0) std::this_thread::sleep_for(options_.delay);
    if (options_.fail_on_id >= 0) {
      for (const EmbeddingInput& in : inputs) {
        for (std::int32_t id : in.input_ids) {
          if (id == options_.fail_on_id) return BackendError(absl::StrCat("noop backend told to fail on id ", id));
        }
      }
    }
    if (options_.oom_above_tokens > 0) {
      std::int64_t tokens = 0;
      for (const EmbeddingInput& in : inputs) tokens += static_cast<std::int64_t>(in.input_ids.size());
      if (tokens > options_.oom_above_tokens) {
        return OutOfMemoryError(absl::StrCat("noop backend told to run out of memory above ", options_.oom_above_tokens,
                                             " tokens; the batch holds ", tokens));
      }
    }
    std::vector<Embedding> out(inputs.size());
    if (options_.sparse) {
      for (std::size_t i = 0; i < inputs.size(); ++i) {
        std::map<std::int32_t, int> counts;
        for (std::int32_t id : inputs[i].input_ids) ++counts[id];
        for (const auto& [id, n] : counts) {
          out[i].indices.push_back(id);
          out[i].values.push_back(static_cast<float>(n));
        }
      }
      return out;
    }
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const EmbeddingInput& in = inputs[i];
      if (in.input_ids.empty()) return InvalidArgumentError(absl::StrCat("input ", i, " is empty"));
      if (in.dimensions < 0 || in.dimensions > options_.hidden_size) {
        return InvalidArgumentError(
            absl::StrCat("dimensions ", in.dimensions, " outside [0, ", options_.hidden_size, "]"));
      }
      const int dims = in.dimensions == 0 ? options_.hidden_size : in.dimensions;
      std::int64_t seed = in.input_ids.front() + 31 * static_cast<std::int64_t>(in.input_ids.size());
      for (std::int32_t t : in.token_type_ids) seed += 7 * static_cast<std::int64_t>(t);
      const int k = static_cast<int>((seed % 97 + 97) % 97);
      const bool normalize = in.normalize.value_or(options_.normalize);
      if (dims == options_.hidden_size && !raw_[k].empty()) {
        out[i].values = normalize ? unit_[k] : raw_[k];
      } else {
        FillVector(k, dims, normalize, out[i].values);
      }
    }
    return out;
  }
  int hidden_size() const override { return options_.hidden_size; }
  EncoderInfo info() const override {
    EncoderInfo info{.name = "noop", .dtype = "float32", .default_normalize = options_.normalize};
    if (!options_.labels.empty()) {
      info.classifier =
          ClassifierInfo{.labels = options_.labels, .activation = ScoreActivation::kSigmoid, .token_types = true};
    } else if (options_.sparse) {
      info.sparse = true;
      info.pooling = "splade";
      info.default_normalize = false;
    }
    return info;
  }

 private:
  static constexpr int kMaxTabulatedHiddenSize = 4096;  // at most 2 x 97 x 4096 floats (3 MiB)
  const NoopEncoderOptions options_;
  std::array<std::vector<float>, 97> raw_;
  std::array<std::vector<float>, 97> unit_;
};

}  // namespace

std::unique_ptr<Encoder> MakeNoopEncoder(const NoopEncoderOptions& options) {
  if (options.labels.empty()) return std::make_unique<NoopEncoder>(options);
  NoopEncoderOptions classifier = options;
  classifier.hidden_size = static_cast<int>(options.labels.size());
  classifier.normalize = false;
  return std::make_unique<NoopEncoder>(classifier);
}

}  // namespace tokenbatch::backend
