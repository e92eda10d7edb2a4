// Test helper: the tokenizer.json text of a test tokenizer by name, and file
// reading. Names: "qwen3", "llama3", "bert" (the shared tokenizer data, see
// src/testing/tokenizer_data.h), the variants of testdata/tokenizer/variants
// (a real tokenizer with some top-level fields replaced), the small tokenizers
// of testdata/tokenizer/synthetic, and any folder of the shared data.
// Reads files; not for production code.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "testing/build_paths.h"
#include "testing/tokenizer_data.h"

namespace tokenbatch::tokenizer::testing {

inline const std::string kTokenizerTestData = tokenbatch::testing::TestDataDir() + "/tokenizer";

// The whole file, or "" when it cannot be read.
inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The JSON values of a JSON Lines file, one per non-empty line (none when it
// cannot be read); throws nlohmann::json::parse_error on a malformed line.
inline std::vector<nlohmann::json> ReadJsonl(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  }
  return out;
}

// The tokenizer.json of a base tokenizer or of a variant (base + replaced fields).
inline std::string TokenizerJson(const std::string& name) {
  const std::string synthetic_path = kTokenizerTestData + "/synthetic/" + name + ".json";
  if (std::filesystem::exists(synthetic_path)) return ReadFile(synthetic_path);
  const std::string variant_path = kTokenizerTestData + "/variants/" + name + ".json";
  if (!std::filesystem::exists(variant_path)) return ReadFile(tokenbatch::testing::TestTokenizerPath(name));
  const auto v = nlohmann::json::parse(ReadFile(variant_path));
  auto base = nlohmann::json::parse(ReadFile(tokenbatch::testing::TestTokenizerPath(v.at("base").get<std::string>())));
  if (v.contains("replace")) {
    for (const auto& [key, value] : v.at("replace").items()) base[key] = value;
  }
  if (v.contains("extra_added_tokens")) {
    for (const auto& t : v.at("extra_added_tokens")) base["added_tokens"].push_back(t);
  }
  if (v.contains("model_options")) {
    for (const auto& [key, value] : v.at("model_options").items()) base["model"][key] = value;
  }
  return base.dump();
}

// The tokenizer.json of any test tokenizer: the real XLM-R one
// ("multilingual_e5_small"), one scripts/prepare_assets.sh trained into the
// build tree (tokenbatch::testing::SentencePieceDir()), or TokenizerJson's.
inline std::string JsonOf(const std::string& name) {
  if (name == "multilingual_e5_small") return ReadFile(tokenbatch::testing::RealSentencePieceTokenizer());
  const std::string trained = tokenbatch::testing::SentencePieceDir() + "/" + name + ".json";
  if (std::filesystem::exists(trained)) return ReadFile(trained);
  return TokenizerJson(name);
}

}  // namespace tokenbatch::tokenizer::testing
