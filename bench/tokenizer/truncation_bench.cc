// One huge text cut to a few tokens, single thread: EncodeTruncated (which
// tokenises only what it keeps), cutting from the end and from the start,
// against Encode of the whole text followed by the cut. The text is
// TEXTS_JSONL's texts joined by newlines and repeated up to TEXT_BYTES.
// Prints one JSON object per mode: milliseconds per text (the median of
// ROUNDS), and the tokens kept. run_truncation_bench.sh runs it next to Hugging
// Face's tokenizers with truncation on the same text; see docs/benchmarks.md.
//
// Usage: truncation_bench TOKENIZER_JSON TEXTS_JSONL [TEXT_BYTES] [MAX_TOKENS] [ROUNDS]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "tokenbatch/tokenizer/tokenizer.h"

namespace {

using tokenbatch::tokenizer::Encoding;
using tokenbatch::tokenizer::Tokenizer;
using tokenbatch::tokenizer::TruncationSide;

template <typename Fn>
void Time(const char* mode, int rounds, Fn&& once) {
  size_t kept = once();  // warm-up: fills the word cache, as the reference's warm-up does
  std::vector<double> ms;
  for (int r = 0; r < rounds; ++r) {
    const auto start = std::chrono::steady_clock::now();
    kept = once();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  std::printf("{\"impl\": \"tokenbatch\", \"mode\": \"%s\", \"tokens\": %zu, \"ms\": %.3f}\n", mode, kept,
              ms[ms.size() / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s TOKENIZER_JSON TEXTS_JSONL [TEXT_BYTES] [MAX_TOKENS] [ROUNDS]\n", argv[0]);
    return 2;
  }
  const size_t text_bytes = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1500000;
  const size_t max_tokens = argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 256;
  const int rounds = argc > 5 ? std::atoi(argv[5]) : 7;
  auto tok = Tokenizer::FromFile(argv[1]);
  if (!tok.ok()) {
    std::fprintf(stderr, "%s\n", std::string(tok.status().message()).c_str());
    return 2;
  }
  std::vector<std::string> texts;
  std::ifstream in(argv[2]);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) texts.push_back(nlohmann::json::parse(line).at("text").get<std::string>());
  }
  if (texts.empty()) {
    std::fprintf(stderr, "no texts in %s\n", argv[2]);
    return 2;
  }
  std::string text;
  for (size_t i = 0; text.size() < text_bytes; ++i) text += texts[i % texts.size()] + "\n";
  const Tokenizer& t = **tok;
  auto truncated = [&](TruncationSide side) {
    return [&, side] { return t.EncodeTruncated(text, max_tokens, {.with_offsets = false}, side)->ids.size(); };
  };
  Time("truncated_right", rounds, truncated(TruncationSide::kRight));
  Time("truncated_left", rounds, truncated(TruncationSide::kLeft));
  Time("whole_then_cut", rounds, [&] {
    Encoding all = *t.Encode(text, {.with_offsets = false});
    return std::min(all.ids.size(), max_tokens);
  });
  return 0;
}
