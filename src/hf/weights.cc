#include "hf/weights.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::hf {
namespace {

// The ATen type of a safetensors float dtype; Undefined for the others.
at::ScalarType FloatType(const std::string& dtype) {
  if (dtype == "F32") return at::kFloat;
  if (dtype == "F16") return at::kHalf;
  if (dtype == "BF16") return at::kBFloat16;
  if (dtype == "F64") return at::kDouble;
  return at::ScalarType::Undefined;
}

}  // namespace

WeightReader::WeightReader(const Checkpoint& checkpoint, std::string prefix, at::ScalarType dtype, at::Device device)
    : checkpoint_(checkpoint), prefix_(std::move(prefix)), dtype_(dtype), device_(device) {}

at::Tensor WeightReader::Get(const std::string& name, const std::vector<int64_t>& shape) {
  return Read(name, shape, false);
}

at::Tensor WeightReader::GetOptional(const std::string& name, const std::vector<int64_t>& shape) {
  return Read(name, shape, true);
}

at::Tensor WeightReader::Read(const std::string& name, const std::vector<int64_t>& shape, bool optional) {
  if (!status_.ok()) return {};
  const std::string full = prefix_ + name;
  const Checkpoint::Found found = checkpoint_.Find(full);
  const std::string want = absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
  if (found.entry == nullptr) {
    if (!optional) {
      status_ = InvalidArgumentError(
          absl::StrCat(checkpoint_.Describe(), ": tensor \"", full, "\" is missing (expected shape ", want, ")"));
    }
    return {};
  }
  const TensorEntry& e = *found.entry;
  if (e.shape != shape) {
    status_ = InvalidArgumentError(absl::StrCat(found.file->path(), ": tensor \"", full, "\" has shape [",
                                                absl::StrJoin(e.shape, ", "), "], expected ", want));
    return {};
  }
  const at::ScalarType type = FloatType(e.dtype);
  if (type == at::ScalarType::Undefined) {
    status_ = InvalidArgumentError(absl::StrCat(found.file->path(), ": tensor \"", full, "\" has dtype ", e.dtype,
                                                ", expected F32, F16, BF16 or F64"));
    return {};
  }
  // Copy into an aligned tensor first: the file's data need not be aligned.
  std::span<const std::byte> bytes = found.file->Bytes(e);
  at::Tensor host = at::empty(shape, at::TensorOptions().dtype(type));
  if (!bytes.empty()) std::memcpy(host.data_ptr(), bytes.data(), bytes.size());
  return host.to(device_, dtype_);
}

absl::StatusOr<std::string> FindPrefix(const Checkpoint& checkpoint, const std::string& anchor,
                                       const std::vector<std::string>& candidates) {
  if (checkpoint.Find(anchor).entry != nullptr) return std::string();
  for (const std::string& prefix : candidates) {
    if (checkpoint.Find(prefix + anchor).entry != nullptr) return prefix;
  }
  std::vector<std::string> names = checkpoint.Names();
  if (names.size() > 8) names.resize(8);
  return InvalidArgumentError(absl::StrCat(checkpoint.Describe(), ": no tensor \"", anchor, "\" (nor with prefix ",
                                           absl::StrJoin(candidates, ", "), "); the file holds ",
                                           absl::StrJoin(names, ", "), names.size() == 8 ? ", ..." : ""));
}

}  // namespace tokenbatch::hf
