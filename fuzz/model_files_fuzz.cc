// Fuzz target: the Hugging Face model-directory readers (hf/safetensors.h,
// hf/model_directory.h): model files are input too. The first byte picks:
//   0  a whole .safetensors file (8-byte header length, header JSON, data),
//      written to a temporary file and opened (mapped), every tensor read;
//   1  config.json alone (ParseArchitectureConfig);
//   2  a cross-encoder's config.json and config_sentence_transformers.json,
//      split at the first 0 byte (ParseClassifierHead);
//   3  a whole sentence-transformers directory: the rest split at 0 bytes into
//      config.json, modules.json, 1_Pooling/config.json, 2_Dense/config.json,
//      sentence_bert_config.json, tokenizer_config.json and
//      config_sentence_transformers.json (ReadModelDirectory).
// Every input must be read or refused with an error naming the problem.
#include <unistd.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "tokenbatch/hf/model_directory.h"
#include "tokenbatch/hf/safetensors.h"

namespace {

namespace fs = std::filesystem;

const fs::path& ScratchDir() {
  static const fs::path* dir = [] {
    auto* d = new fs::path(fs::temp_directory_path() / ("tokenbatch_model_files_fuzz_" + std::to_string(getpid())));
    fs::create_directories(*d / "1_Pooling");
    fs::create_directories(*d / "2_Dense");
    std::atexit([] {  // libFuzzer ends with exit() on success, so the folder goes
      std::error_code ignored;
      fs::remove_all(ScratchDir(), ignored);
    });
    return d;
  }();
  return *dir;
}

void WriteFile(const fs::path& path, std::string_view bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::vector<std::string_view> SplitAtZero(std::string_view rest) {
  std::vector<std::string_view> parts;
  while (true) {
    const std::size_t split = rest.find('\0');
    parts.push_back(rest.substr(0, split));
    if (split == std::string_view::npos) return parts;
    rest.remove_prefix(split + 1);
  }
}

void CheckSafetensors(std::string_view bytes) {
  const fs::path path = ScratchDir() / "model.safetensors";
  WriteFile(path, bytes);
  auto file = tokenbatch::hf::SafetensorsFile::Open(path.string());
  if (!file.ok()) {
    FUZZ_CHECK(!file.status().message().empty());
    return;
  }
  for (const tokenbatch::hf::TensorEntry& entry : (*file)->tensors()) {
    FUZZ_CHECK(entry.begin <= entry.end);
    FUZZ_CHECK(entry.end - entry.begin == static_cast<std::uint64_t>(entry.numel()) * entry.element_bytes);
    const auto data = (*file)->Bytes(entry);
    FUZZ_CHECK(data.size() == entry.end - entry.begin);
    std::uint8_t sum = 0;  // touches every byte: AddressSanitizer sees a read past the mapping
    for (const std::byte b : data) sum ^= static_cast<std::uint8_t>(b);
    (void)sum;
  }
}

void CheckDirectory(std::string_view rest) {
  static constexpr std::array<const char*, 7> kFiles = {"config.json",
                                                        "modules.json",
                                                        "1_Pooling/config.json",
                                                        "2_Dense/config.json",
                                                        "sentence_bert_config.json",
                                                        "tokenizer_config.json",
                                                        "config_sentence_transformers.json"};
  const fs::path& dir = ScratchDir();
  const std::vector<std::string_view> parts = SplitAtZero(rest);
  for (std::size_t i = 0; i < kFiles.size(); ++i) {
    if (i < parts.size()) {
      WriteFile(dir / kFiles[i], parts[i]);
    } else {
      fs::remove(dir / kFiles[i]);
    }
  }
  auto model = tokenbatch::hf::ReadModelDirectory(dir.string());
  if (!model.ok()) {
    FUZZ_CHECK(!model.status().message().empty());
    return;
  }
  FUZZ_CHECK(model->max_seq_length >= 1);
  FUZZ_CHECK(model->max_seq_length <= model->config.max_input_positions());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0:
      CheckSafetensors(rest);
      break;
    case 1: {
      const auto config = tokenbatch::hf::ParseArchitectureConfig(rest, "config.json");
      if (config.ok()) FUZZ_CHECK(config->max_input_positions() >= 1);
      break;
    }
    case 2: {
      const std::vector<std::string_view> parts = SplitAtZero(rest);
      const auto head =
          tokenbatch::hf::ParseClassifierHead(parts[0], parts.size() > 1 ? parts[1] : "null", "config.json");
      if (head.ok() && head->has_value()) FUZZ_CHECK(!(*head)->labels.empty());
      break;
    }
    case 3:
      CheckDirectory(rest);
      break;
  }
  return 0;
}
