// The no-op backend: fixed, checkable vectors without a model (see the header).
#include <cmath>
#include <thread>

#include "absl/strings/str_cat.h"
#include "tokenbatch/core/errors.h"
#include "tokenbatch/server/embedding_backend.h"

namespace tokenbatch::server {
namespace {

class NoopBackend final : public EmbeddingBackend {
 public:
  explicit NoopBackend(const NoopBackendOptions& options) : options_(options) {}

  absl::StatusOr<std::vector<backend::Embedding>> Embed(
      std::span<const backend::EmbeddingInput> inputs) const override {
    if (options_.delay.count() > 0) std::this_thread::sleep_for(options_.delay);
    if (options_.fail_on_id >= 0) {
      for (const backend::EmbeddingInput& in : inputs) {
        for (std::int32_t id : in.input_ids) {
          if (id == options_.fail_on_id) return BackendError(absl::StrCat("noop backend told to fail on id ", id));
        }
      }
    }
    std::vector<backend::Embedding> out(inputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const backend::EmbeddingInput& in = inputs[i];
      if (in.input_ids.empty()) return InvalidArgumentError(absl::StrCat("input ", i, " is empty"));
      if (in.dimensions < 0 || in.dimensions > options_.hidden_size) {
        return InvalidArgumentError(
            absl::StrCat("dimensions ", in.dimensions, " outside [0, ", options_.hidden_size, "]"));
      }
      const int dims = in.dimensions == 0 ? options_.hidden_size : in.dimensions;
      const std::int64_t seed = in.input_ids.front() + 31 * static_cast<std::int64_t>(in.input_ids.size());
      std::vector<float>& v = out[i].values;
      v.resize(dims);
      double norm2 = 0;
      // v[j] = ((seed + j) mod 97) / 97, stepped without a division per value
      // (the no-op backend should cost next to nothing).
      int k = static_cast<int>((seed % 97 + 97) % 97);
      for (int j = 0; j < dims; ++j) {
        v[j] = static_cast<float>(k) / 97.0f;
        norm2 += double(v[j]) * v[j];
        k = k == 96 ? 0 : k + 1;
      }
      if (in.normalize.value_or(options_.normalize) && norm2 > 0) {
        const double inv = 1.0 / std::sqrt(norm2);
        for (float& x : v) x = static_cast<float>(x * inv);
      }
    }
    return out;
  }
  int hidden_size() const override { return options_.hidden_size; }
  std::int64_t vocab_size() const override { return 0; }
  std::int64_t max_positions() const override { return 0; }
  bool default_normalize() const override { return options_.normalize; }
  std::string name() const override { return "noop"; }

 private:
  const NoopBackendOptions options_;
};

}  // namespace

std::unique_ptr<EmbeddingBackend> MakeNoopBackend(const NoopBackendOptions& options) {
  return std::make_unique<NoopBackend>(options);
}

}  // namespace tokenbatch::server
