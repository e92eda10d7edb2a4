#include "tokenbatch/hf/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::hf {
namespace {

using nlohmann::json;

// Headers are small (tens of KB for billion-parameter models); a larger one is
// a corrupt length field, not a model.
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

absl::Status Bad(std::string_view source, std::string_view what) {
  return InvalidArgumentError(absl::StrCat(std::string(source), ": ", std::string(what)));
}

// Parses one tensor's {"dtype", "shape", "data_offsets"} object.
absl::StatusOr<TensorEntry> ParseEntry(const std::string& name, const json& v, uint64_t data_bytes,
                                       std::string_view source) {
  const std::string where = absl::StrCat("tensor \"", name, "\"");
  if (!v.is_object()) return Bad(source, absl::StrCat(where, " is not a JSON object"));
  TensorEntry e;
  e.name = name;
  auto dtype = v.find("dtype");
  if (dtype == v.end() || !dtype->is_string()) return Bad(source, absl::StrCat(where, " has no dtype string"));
  e.dtype = dtype->get<std::string>();
  e.element_bytes = SafetensorsDtypeBytes(e.dtype);
  if (e.element_bytes == 0) return Bad(source, absl::StrCat(where, " has unknown dtype \"", e.dtype, "\""));
  auto shape = v.find("shape");
  if (shape == v.end() || !shape->is_array()) return Bad(source, absl::StrCat(where, " has no shape array"));
  uint64_t numel = 1;
  bool overflow = false;
  for (const json& d : *shape) {
    if (!d.is_number_unsigned() && !(d.is_number_integer() && d.get<int64_t>() >= 0)) {
      return Bad(source, absl::StrCat(where, " has a shape entry that is not an integer >= 0: ", d.dump()));
    }
    const uint64_t n = d.get<uint64_t>();
    if (n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) overflow = true;
    if (n != 0 && numel > std::numeric_limits<uint64_t>::max() / n) overflow = true;
    if (!overflow) numel *= n;
    e.shape.push_back(static_cast<int64_t>(std::min<uint64_t>(n, std::numeric_limits<int64_t>::max())));
  }
  if (overflow || numel > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(e.element_bytes)) {
    return Bad(source, absl::StrCat(where, " has a shape whose size overflows"));
  }
  auto offsets = v.find("data_offsets");
  if (offsets == v.end() || !offsets->is_array() || offsets->size() != 2 || !(*offsets)[0].is_number_unsigned() ||
      !(*offsets)[1].is_number_unsigned()) {
    return Bad(source, absl::StrCat(where, " needs data_offsets [begin, end] of integers >= 0"));
  }
  e.begin = (*offsets)[0].get<uint64_t>();
  e.end = (*offsets)[1].get<uint64_t>();
  if (e.begin > e.end || e.end > data_bytes) {
    return Bad(source, absl::StrCat(where, " has data_offsets [", e.begin, ", ", e.end,
                                    "] outside the data buffer of ", data_bytes, " bytes (truncated file?)"));
  }
  if (e.end - e.begin != numel * static_cast<uint64_t>(e.element_bytes)) {
    return Bad(source, absl::StrCat(where, " holds ", e.end - e.begin, " bytes but dtype ", e.dtype, " and shape [",
                                    absl::StrJoin(e.shape, ", "), "] need ", numel * e.element_bytes));
  }
  return e;
}

}  // namespace

int64_t TensorEntry::numel() const {
  // Validated: numel x element_bytes == end - begin, so the product fits unless a
  // dimension is zero (then the product is zero whatever the others are).
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return 0;
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int SafetensorsDtypeBytes(std::string_view dtype) {
  if (dtype == "F64" || dtype == "I64" || dtype == "U64") return 8;
  if (dtype == "F32" || dtype == "I32" || dtype == "U32") return 4;
  if (dtype == "F16" || dtype == "BF16" || dtype == "I16" || dtype == "U16") return 2;
  if (dtype == "I8" || dtype == "U8" || dtype == "BOOL" || dtype == "F8_E4M3" || dtype == "F8_E5M2") return 1;
  return 0;
}

absl::StatusOr<std::vector<TensorEntry>> ParseSafetensorsHeader(std::string_view text, uint64_t data_bytes,
                                                                 std::string_view source) {
  json header = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded()) return Bad(source, "the header is not valid JSON");
  if (!header.is_object()) return Bad(source, "the header is not a JSON object");
  std::vector<TensorEntry> entries;
  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__") continue;
    absl::StatusOr<TensorEntry> e = ParseEntry(name, value, data_bytes, source);
    if (!e.ok()) return e.status();
    entries.push_back(*std::move(e));
  }
  // Ranges must not overlap (zero-length tensors may sit anywhere).
  std::vector<const TensorEntry*> by_offset;
  for (const TensorEntry& e : entries) {
    if (e.end > e.begin) by_offset.push_back(&e);
  }
  std::sort(by_offset.begin(), by_offset.end(),
            [](const TensorEntry* a, const TensorEntry* b) { return a->begin < b->begin; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    if (by_offset[i]->begin < by_offset[i - 1]->end) {
      return Bad(source, absl::StrCat("tensors \"", by_offset[i - 1]->name, "\" and \"", by_offset[i]->name,
                                      "\" overlap in the data buffer"));
    }
  }
  std::sort(entries.begin(), entries.end(), [](const TensorEntry& a, const TensorEntry& b) { return a.name < b.name; });
  return entries;
}

absl::StatusOr<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Bad(path, absl::StrCat("cannot open: ", std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Bad(path, "not a regular file");
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < 8) {
    ::close(fd);
    return Bad(path, absl::StrCat("only ", size, " bytes: too short for a safetensors header length"));
  }
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return Bad(path, absl::StrCat("cannot map: ", std::strerror(errno)));
  std::unique_ptr<SafetensorsFile> file(new SafetensorsFile());
  file->path_ = path;
  file->map_ = static_cast<const std::byte*>(map);
  file->map_bytes_ = size;
  uint64_t header_bytes = 0;
  for (int i = 7; i >= 0; --i) header_bytes = (header_bytes << 8) | std::to_integer<uint64_t>(file->map_[i]);
  if (header_bytes > size - 8 || header_bytes > kMaxHeaderBytes) {
    return Bad(path, absl::StrCat("header length ", header_bytes, " does not fit a file of ", size,
                                  " bytes (truncated or not a safetensors file)"));
  }
  const char* text = reinterpret_cast<const char*>(file->map_ + 8);
  file->data_ = file->map_ + 8 + header_bytes;
  absl::StatusOr<std::vector<TensorEntry>> entries =
      ParseSafetensorsHeader(std::string_view(text, header_bytes), size - 8 - header_bytes, path);
  if (!entries.ok()) return entries.status();
  file->tensors_ = *std::move(entries);
  return file;
}

SafetensorsFile::~SafetensorsFile() {
  if (map_ != nullptr) ::munmap(const_cast<std::byte*>(map_), map_bytes_);
}

const TensorEntry* SafetensorsFile::Find(std::string_view name) const {
  auto it = std::lower_bound(tensors_.begin(), tensors_.end(), name,
                             [](const TensorEntry& e, std::string_view n) { return e.name < n; });
  return it != tensors_.end() && it->name == name ? &*it : nullptr;
}

std::span<const std::byte> SafetensorsFile::Bytes(const TensorEntry& entry) const {
  return {data_ + entry.begin, static_cast<size_t>(entry.end - entry.begin)};
}

absl::StatusOr<Checkpoint> Checkpoint::Open(const std::string& dir) {
  namespace fs = std::filesystem;
  Checkpoint c;
  const fs::path single = fs::path(dir) / "model.safetensors";
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  std::error_code ec;
  if (fs::is_regular_file(single, ec)) {
    absl::StatusOr<std::unique_ptr<SafetensorsFile>> f = SafetensorsFile::Open(single.string());
    if (!f.ok()) return f.status();
    for (const TensorEntry& e : (*f)->tensors()) c.where_.emplace(e.name, 0);
    c.files_.push_back(std::move(*f));
    return c;
  }
  if (!fs::is_regular_file(index, ec)) {
    return InvalidArgumentError(absl::StrCat(dir, ": no model.safetensors or model.safetensors.index.json ",
                                             "(only safetensors weights are read; convert pytorch_model.bin first)"));
  }
  std::ifstream in(index);
  json j = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object()) {
    return Bad(index.string(), "not a JSON object with a \"weight_map\" object");
  }
  std::map<std::string, size_t> shard_index;  // shard file name -> index in files_
  for (const auto& [tensor, shard_value] : j["weight_map"].items()) {
    if (!shard_value.is_string()) return Bad(index.string(), absl::StrCat("weight_map[\"", tensor, "\"] is not a string"));
    const std::string shard = shard_value.get<std::string>();
    if (shard.empty() || shard.find('/') != std::string::npos || shard == "." || shard == "..") {
      return Bad(index.string(), absl::StrCat("shard \"", shard, "\" is not a file name inside ", dir));
    }
    auto [it, fresh] = shard_index.emplace(shard, c.files_.size());
    if (fresh) {
      absl::StatusOr<std::unique_ptr<SafetensorsFile>> f = SafetensorsFile::Open((fs::path(dir) / shard).string());
      if (!f.ok()) return f.status();
      c.files_.push_back(std::move(*f));
    }
    if (c.files_[it->second]->Find(tensor) == nullptr) {
      return Bad(index.string(), absl::StrCat("lists tensor \"", tensor, "\" in ", shard, ", which lacks it"));
    }
    c.where_.emplace(tensor, it->second);
  }
  if (c.files_.empty()) return Bad(index.string(), "weight_map is empty");
  return c;
}

Checkpoint::Found Checkpoint::Find(std::string_view name) const {
  auto it = where_.find(name);
  if (it == where_.end()) return {};
  const SafetensorsFile* f = files_[it->second].get();
  return {f, f->Find(name)};
}

std::vector<std::string> Checkpoint::Names() const {
  std::vector<std::string> names;
  names.reserve(where_.size());
  for (const auto& [name, unused] : where_) names.push_back(name);
  return names;
}

std::string Checkpoint::Describe() const {
  std::vector<std::string> paths;
  for (const auto& f : files_) paths.push_back(f->path());
  return absl::StrJoin(paths, ", ");
}

}  // namespace tokenbatch::hf
