// Parsing a request body: the server's parser (src/api/api_parse.cc, simdjson
// DOM, with the UTF-8, nesting, duplicate-field and type checks) against
// nlohmann::json::parse plus reading `input` and `model`, the parse it replaced,
// on the load benchmark's body and on a 32-text batch.
//
//   cmake --build build --target request_parse_bench && build/bench/server/request_parse_bench
#include <benchmark/benchmark.h>

#include <nlohmann/json.hpp>
#include <string>

#include "api/api.h"

namespace {

const std::string kOneText = R"({"input": "The quick brown fox jumps over the lazy dog", "model": "bench"})";

std::string Batch() {
  nlohmann::json texts = nlohmann::json::array();
  for (int i = 0; i < 32; ++i) texts.push_back("query " + std::to_string(i) + ": how do token budgets batch requests?");
  return nlohmann::json{{"input", texts}, {"model", "bench"}}.dump();
}

void Server(benchmark::State& state, const std::string& body) {
  for (auto _ : state) {
    auto parsed = tokenbatch::server::ParseOpenAiEmbeddings(body, {});
    benchmark::DoNotOptimize(parsed);
  }
}

void Nlohmann(benchmark::State& state, const std::string& body) {
  for (auto _ : state) {
    const nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
    std::vector<std::string> texts;
    const nlohmann::json& input = j.at("input");
    if (input.is_string()) {
      texts.push_back(input.get<std::string>());
    } else {
      for (const nlohmann::json& t : input) texts.push_back(t.get<std::string>());
    }
    std::string model = j.at("model").get<std::string>();
    benchmark::DoNotOptimize(texts);
    benchmark::DoNotOptimize(model);
  }
}

BENCHMARK_CAPTURE(Nlohmann, one_text, kOneText);
BENCHMARK_CAPTURE(Server, one_text, kOneText);
BENCHMARK_CAPTURE(Nlohmann, batch_of_32, Batch());
BENCHMARK_CAPTURE(Server, batch_of_32, Batch());

}  // namespace

BENCHMARK_MAIN();
