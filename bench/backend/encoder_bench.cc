// TorchEncoder::Embed wall time for one batch of B requests of L tokens (mean
// pooling, so the mask-aware path runs), for the shapes compare_python.sh also
// times in python3-torch. Environment: TOKENBATCH_BENCH_MODEL (default
// build/cache/models/minilm.pt), TOKENBATCH_BENCH_THREADS (default 1).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "testing/build_paths.h"
#include "tokenbatch/backend/encoder.h"

namespace {

using tokenbatch::backend::EmbeddingInput;
using tokenbatch::backend::TorchEncoder;

std::string Env(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

const TorchEncoder& Encoder() {
  static const std::unique_ptr<TorchEncoder> encoder = [] {
    tokenbatch::backend::EncoderOptions options;
    options.model_path =
        Env("TOKENBATCH_BENCH_MODEL", tokenbatch::testing::ModelDir() + "/minilm.pt");
    options.pooling = tokenbatch::backend::Pooling::kMean;
    options.num_threads = std::stoi(Env("TOKENBATCH_BENCH_THREADS", "1"));
    absl::StatusOr<std::unique_ptr<TorchEncoder>> loaded = TorchEncoder::Load(options);
    if (!loaded.ok()) {
      std::cerr << "encoder_bench: " << loaded.status()
                << " (generate models with /usr/bin/python3 scripts/gen_models.py)\n";
      std::exit(1);
    }
    return std::move(*loaded);
  }();
  return *encoder;
}

void BM_Embed(benchmark::State& state) {
  const int64_t b = state.range(0), l = state.range(1);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> id(1000, 20000);  // within BERT's 30,522
  std::vector<EmbeddingInput> batch(b);
  for (EmbeddingInput& in : batch) {
    in.input_ids.resize(l);
    for (int32_t& t : in.input_ids) t = id(rng);
  }
  const TorchEncoder& encoder = Encoder();
  if (!encoder.Embed(batch).ok()) {  // warm-up (TorchScript profiling runs)
    state.SkipWithError("warm-up failed");
    return;
  }
  for (auto _ : state) {
    auto out = encoder.Embed(batch);
    if (!out.ok()) {
      state.SkipWithError(std::string(out.status().message()).c_str());
      return;
    }
    benchmark::DoNotOptimize(out);
  }
  state.counters["tokens_per_s"] =
      benchmark::Counter(static_cast<double>(b * l), benchmark::Counter::kIsIterationInvariantRate);
}

// Shapes (B, L): keep in sync with SHAPES in python_reference.py.
BENCHMARK(BM_Embed)
    ->Args({1, 128})
    ->Args({8, 128})
    ->Args({32, 128})
    ->Args({8, 512})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(1.0)
    ->Repetitions(3)
    ->ReportAggregatesOnly(true);

}  // namespace

BENCHMARK_MAIN();
