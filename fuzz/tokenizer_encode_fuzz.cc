// Fuzz target: encoding arbitrary bytes with each tokenizer the project ships
// (data/tokenizers: BERT's WordPiece and Qwen3's byte-level BPE). The first
// byte picks the tokenizer; the rest, split at the first 0 byte, is the text
// and a second text for the pair encoding. Invalid UTF-8 must be refused, not
// crash, and the invariants of CheckEncodings hold.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/tokenizer_fuzz_common.h"
#include "testing/build_paths.h"

namespace {

std::vector<std::unique_ptr<tokenbatch::tokenizer::Tokenizer>>& Tokenizers() {
  static auto* tokenizers = [] {
    auto* out = new std::vector<std::unique_ptr<tokenbatch::tokenizer::Tokenizer>>();
    for (const char* name : {"bert-base-uncased", "qwen3"}) {
      const std::string path = tokenbatch::testing::ShippedTokenizersDir() + "/" + name + "/tokenizer.json";
      auto tok = tokenbatch::tokenizer::Tokenizer::FromFile(path);
      if (!tok.ok()) {
        std::fprintf(stderr, "cannot load %s: %s\n", path.c_str(), std::string(tok.status().message()).c_str());
        std::abort();
      }
      out->push_back(*std::move(tok));
    }
    return out;
  }();
  return *tokenizers;
}

}  // namespace

// Loads the tokenizers before the first input, so that their load time (long
// under AddressSanitizer) does not count toward that input's -timeout.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)Tokenizers();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const auto& tokenizers = Tokenizers();
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::size_t split = rest.find('\0');
  const std::string_view text = rest.substr(0, split);
  const std::string_view second = split == std::string_view::npos ? std::string_view() : rest.substr(split + 1);
  tokenbatch::fuzz::CheckEncodings(*tokenizers[data[0] % tokenizers.size()], text, second);
  return 0;
}
