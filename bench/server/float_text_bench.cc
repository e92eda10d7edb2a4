// JSON text of one 384-float embedding: our writer (src/api/float_text.h,
// Dragonbox digits laid out in blocks) against fmt's "{}" per value, the
// writer it replaced, on the noop backend's values and on random unit-vector
// components. Items are floats.
//
//   cmake --build build --target float_text_bench && build/bench/server/float_text_bench
#include <benchmark/benchmark.h>
#include <fmt/compile.h>
#include <fmt/format.h>

#include <cmath>
#include <random>
#include <vector>

#include "api/float_text.h"

namespace {

constexpr int kHidden = 384;

// What the noop backend returns: ((k + j) mod 97) / 97, normalised.
std::vector<float> NoopValues() {
  std::vector<float> v(kHidden);
  double norm2 = 0;
  for (int j = 0; j < kHidden; ++j) {
    v[j] = static_cast<float>((5 + j) % 97) / 97.0f;
    norm2 += double(v[j]) * v[j];
  }
  for (float& x : v) x = static_cast<float>(x / std::sqrt(norm2));
  return v;
}

// A random direction: components ~ N(0, 1/384), both signs.
std::vector<float> RandomUnitValues() {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f / std::sqrt(float(kHidden)));
  std::vector<float> v(kHidden);
  for (float& x : v) x = normal(rng);
  return v;
}

void Fmt(benchmark::State& state, const std::vector<float>& values) {
  std::vector<char> buf(tokenbatch::server::JsonFloatArrayRoom(values.size()));
  for (auto _ : state) {
    char* p = buf.data();
    *p++ = '[';
    for (std::size_t j = 0; j < values.size(); ++j) {
      if (j) *p++ = ',';
      p = fmt::format_to(p, FMT_COMPILE("{}"), values[j]);
    }
    *p++ = ']';
    benchmark::DoNotOptimize(p);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(values.size()));
}

void Ours(benchmark::State& state, const std::vector<float>& values) {
  std::vector<char> buf(tokenbatch::server::JsonFloatArrayRoom(values.size()));
  for (auto _ : state) {
    char* p = tokenbatch::server::WriteJsonFloatArray(buf.data(), values);
    benchmark::DoNotOptimize(p);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(values.size()));
}

BENCHMARK_CAPTURE(Fmt, noop_values, NoopValues());
BENCHMARK_CAPTURE(Ours, noop_values, NoopValues());
BENCHMARK_CAPTURE(Fmt, random_unit_vector, RandomUnitValues());
BENCHMARK_CAPTURE(Ours, random_unit_vector, RandomUnitValues());

}  // namespace

BENCHMARK_MAIN();
