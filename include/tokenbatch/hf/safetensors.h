// Reading safetensors checkpoints (Hugging Face's tensor file format) without
// trusting them.
//
// Format (https://huggingface.co/docs/safetensors, "Format" section): an 8-byte
// little-endian unsigned N, then N bytes of UTF-8 JSON, then the data buffer. The
// JSON maps each tensor name to {"dtype": "F32"|"F16"|"BF16"|..., "shape": [d0, ...],
// "data_offsets": [begin, end]}, offsets in bytes relative to the start of the data
// buffer; an optional "__metadata__" maps strings to strings. Every check the
// format allows is made before any byte is handed out: the header fits the file,
// every dtype is known, every dimension is >= 0, numel x element size equals
// end - begin (without overflow), every range lies inside the data buffer and no
// two ranges overlap. A file that fails any of them is refused with an error
// naming the file and the tensor; nothing here reads outside the file.
//
// No Debian package ships a C++ safetensors reader, so the header is parsed with
// nlohmann-json, which the project already uses.
//
// Thread-safety: a SafetensorsFile and a Checkpoint are immutable after Open and
// safe to share between threads. Open blocks for the file's mapping (mmap, read
// only, pages read lazily): a file truncated by another process while mapped
// faults (SIGBUS) on the next read of a lost page, as with any mapped file, so
// models are loaded (copied out) at start and the mapping dropped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace tokenbatch::hf {

// One tensor's entry in a header. `begin`/`end` are byte offsets into the data
// buffer (after the header), validated against it.
struct TensorEntry {
  std::string name;
  std::string dtype;             // "F32", "F16", "BF16", "F64", "I64", "I32", "I16", "I8", "U8", "BOOL", ...
  int element_bytes = 0;         // bytes per element of `dtype`
  std::vector<int64_t> shape;    // empty = scalar
  uint64_t begin = 0;
  uint64_t end = 0;
  // Elements: the product of `shape` (1 for a scalar, 0 if any dimension is 0).
  [[nodiscard]] int64_t numel() const;
};

// Bytes per element of a safetensors dtype name; 0 if the name is unknown.
[[nodiscard]] int SafetensorsDtypeBytes(std::string_view dtype);

// Parses and validates a header (`json` = the N header bytes) for a data buffer
// of `data_bytes` bytes. Returns the tensors sorted by name.
// Errors: InvalidArgumentError naming `source` (a path, for messages) and the
// offending tensor: not a JSON object, a bad or unknown dtype, a negative or
// non-integer dimension, a size that overflows, offsets that do not match the
// shape, run past the buffer or overlap another tensor's.
[[nodiscard]] absl::StatusOr<std::vector<TensorEntry>> ParseSafetensorsHeader(
    std::string_view json, uint64_t data_bytes, std::string_view source);

// One memory-mapped .safetensors file.
class SafetensorsFile {
 public:
  // Maps `path` and validates its header (see ParseSafetensorsHeader; headers over
  // 100 MB are refused too). Errors: InvalidArgumentError for a missing,
  // unreadable, truncated or malformed file, naming it.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<SafetensorsFile>> Open(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] const std::vector<TensorEntry>& tensors() const { return tensors_; }
  // The entry called `name`, or nullptr.
  [[nodiscard]] const TensorEntry* Find(std::string_view name) const;
  // The tensor's bytes (end - begin of them), valid while this file lives.
  [[nodiscard]] std::span<const std::byte> Bytes(const TensorEntry& entry) const;

 private:
  SafetensorsFile() = default;
  std::string path_;
  const std::byte* map_ = nullptr;
  size_t map_bytes_ = 0;
  const std::byte* data_ = nullptr;  // start of the data buffer inside the mapping
  std::vector<TensorEntry> tensors_;
};

// A model's weights: `model.safetensors`, or the shards listed by
// `model.safetensors.index.json` ({"weight_map": {tensor name: shard file}}).
class Checkpoint {
 public:
  // Opens the weights in directory `dir`. A sharded index is validated: every shard
  // is a plain file name inside `dir` and holds the tensors the index assigns to
  // it (the index maps each tensor to one shard; tensors a shard holds but the
  // index does not list are ignored). Errors: InvalidArgumentError naming the
  // file (no weights found, a malformed index, a shard missing or invalid, a
  // tensor the index lists but its shard lacks).
  [[nodiscard]] static absl::StatusOr<Checkpoint> Open(const std::string& dir);

  // The tensor called `name` and the file holding it; {nullptr, nullptr} if absent.
  struct Found {
    const SafetensorsFile* file = nullptr;
    const TensorEntry* entry = nullptr;
  };
  [[nodiscard]] Found Find(std::string_view name) const;
  // Every tensor name, sorted.
  [[nodiscard]] std::vector<std::string> Names() const;
  // The files read ("model.safetensors" or the shards), for messages.
  [[nodiscard]] std::string Describe() const;

 private:
  std::vector<std::shared_ptr<const SafetensorsFile>> files_;
  std::map<std::string, size_t, std::less<>> where_;  // tensor name -> index in files_
};

}  // namespace tokenbatch::hf
