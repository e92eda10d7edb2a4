// Throughput of our tokenizer on a JSON Lines file of texts, single thread:
// Encode (ids + offsets, as Hugging Face computes them), Encode without offsets,
// and Count. Prints one JSON object per mode: tokens, seconds, tokens/s.
// run_tokenizer_bench.sh runs it next to the Hugging Face reference on the same
// texts; see docs/benchmarks.md.
//
// Usage: tokenizer_bench TOKENIZER_JSON TEXTS_JSONL [ROUNDS]
// Each mode runs one untimed warm-up round (fills the word cache, as Hugging
// Face's BPE cache is filled by its warm-up) and then ROUNDS timed rounds (default 5).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "tokenbatch/tokenizer/tokenizer.h"

namespace {

using tokenbatch::tokenizer::Tokenizer;

template <typename Fn>
void Time(const char* mode, int rounds, size_t bytes, Fn&& one_round) {
  one_round();  // warm-up
  size_t tokens = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < rounds; ++r) tokens += one_round();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("{\"impl\": \"tokenbatch\", \"mode\": \"%s\", \"tokens\": %zu, \"seconds\": %.4f, "
              "\"tokens_per_s\": %.0f, \"mb_per_s\": %.2f}\n",
              mode, tokens, s, static_cast<double>(tokens) / s, static_cast<double>(bytes) * rounds / s / 1e6);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s TOKENIZER_JSON TEXTS_JSONL [ROUNDS]\n", argv[0]);
    return 2;
  }
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 5;
  auto tok = Tokenizer::FromFile(argv[1]);
  if (!tok.ok()) {
    std::fprintf(stderr, "%s\n", std::string(tok.status().message()).c_str());
    return 2;
  }
  std::vector<std::string> texts;
  size_t bytes = 0;
  std::ifstream in(argv[2]);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    texts.push_back(nlohmann::json::parse(line).at("text").get<std::string>());
    bytes += texts.back().size();
  }
  const Tokenizer& t = **tok;
  Time("encode", rounds, bytes, [&] {
    size_t n = 0;
    for (const auto& s : texts) n += t.Encode(s)->ids.size();
    return n;
  });
  Time("encode_no_offsets", rounds, bytes, [&] {
    size_t n = 0;
    for (const auto& s : texts) n += t.Encode(s, {.add_special_tokens = true, .with_offsets = false})->ids.size();
    return n;
  });
  Time("count", rounds, bytes, [&] {
    size_t n = 0;
    for (const auto& s : texts) n += *t.Count(s);
    return n;
  });
  return 0;
}
