// Fuzz target: loading tokenizer.json (a model file is input too). The input
// is the file's text up to the first 0 byte, then a text to encode with it.
// Loading must refuse a malformed or unsupported file with an error, and a
// tokenizer that loads must encode within the invariants of CheckEncodings.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/tokenizer_fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t split = input.find('\0');
  const std::string_view json = input.substr(0, split);
  const std::string_view text = split == std::string_view::npos ? "Hello, world!" : input.substr(split + 1);
  auto tok = tokenbatch::tokenizer::Tokenizer::FromJson(json);
  if (!tok.ok()) {
    FUZZ_CHECK(!tok.status().message().empty());
    return 0;
  }
  tokenbatch::fuzz::CheckEncodings(**tok, text, text);
  return 0;
}
