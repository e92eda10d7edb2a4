// Loads named, shape-checked weights from a Checkpoint into ATen tensors.
// Internal to src/hf (includes ATen).
#pragma once

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tokenbatch/hf/safetensors.h"

namespace tokenbatch::hf {

class WeightReader {
 public:
  // `prefix` is prepended to every name ("" or e.g. "bert." when the checkpoint
  // was saved from a task model). Tensors are copied out of the file, converted
  // to `dtype` and moved to `device`.
  WeightReader(const Checkpoint& checkpoint, std::string prefix, at::ScalarType dtype, at::Device device);

  // The tensor `prefix + name`, which must have exactly `shape`. On any problem
  // (absent, wrong shape, a dtype that is not a float) it records the first error
  // (see status()) and returns an undefined tensor; later calls keep going so
  // the caller needs no check per weight.
  at::Tensor Get(const std::string& name, const std::vector<int64_t>& shape);
  // Like Get, but an absent tensor is no error: returns an undefined tensor.
  at::Tensor GetOptional(const std::string& name, const std::vector<int64_t>& shape);

  // OK, or an InvalidArgumentError naming the checkpoint file, the tensor, and
  // the shape expected against the shape found.
  [[nodiscard]] const absl::Status& status() const { return status_; }

 private:
  at::Tensor Read(const std::string& name, const std::vector<int64_t>& shape, bool optional);

  const Checkpoint& checkpoint_;
  std::string prefix_;
  at::ScalarType dtype_;
  at::Device device_;
  absl::Status status_;
};

// The prefix under which `anchor` (e.g. "embeddings.word_embeddings.weight")
// appears in `checkpoint`: "" or one of `candidates`. InvalidArgumentError if none,
// listing a few of the names the checkpoint does hold.
[[nodiscard]] absl::StatusOr<std::string> FindPrefix(const Checkpoint& checkpoint, const std::string& anchor,
                                                     const std::vector<std::string>& candidates);

}  // namespace tokenbatch::hf
