#include "tokenbatch/sim/gpu_model.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::sim {
namespace {

constexpr double kGB = 1e9;

// Bytes per element of Hugging Face's eager attention scores while the softmax
// runs: the scores in the model dtype, the fp32 softmax and its cast back (2 + 4 +
// 2 for fp16; for fp32 the cast is a no-op: 4 + 4). Either way 8.
constexpr double kEagerScoreBytes = 8;

}  // namespace

// clang-format off
// Each shape's numbers from its config.json.
ModelShape ModelShape::Qwen3Embedding0_6B() {
  return {.name = "Qwen3-Embedding-0.6B", .layers = 28, .hidden = 1024, .heads = 16, .kv_heads = 8, .head_dim = 128,
          .intermediate = 3072, .vocab = 151669, .mlp_matrices = 3, .dtype_bytes = 2, .max_positions = 32768};
}

ModelShape ModelShape::MiniLML6() {
  return {.name = "all-MiniLM-L6-v2", .layers = 6, .hidden = 384, .heads = 12, .kv_heads = 12, .head_dim = 32,
          .intermediate = 1536, .vocab = 30522, .mlp_matrices = 2, .dtype_bytes = 2, .max_positions = 512};
}
ModelShape ModelShape::XlmRobertaBase() {
  return {.name = "bge-reranker-base (XLM-R base)", .layers = 12, .hidden = 768, .heads = 12, .kv_heads = 12,
          .head_dim = 64, .intermediate = 3072, .vocab = 250002, .mlp_matrices = 2, .dtype_bytes = 2,
          .max_positions = 512};
}
// clang-format on

std::int64_t ModelShape::ParamsPerLayer() const {
  const std::int64_t q = heads * head_dim, kv = kv_heads * head_dim;
  return hidden * q + 2 * hidden * kv + q * hidden + mlp_matrices * hidden * intermediate;
}

std::int64_t ModelShape::Params() const { return layers * ParamsPerLayer() + vocab * hidden; }

absl::StatusOr<DeviceSpec> DevicePreset(std::string_view name) {
  // Dense fp16/bf16 tensor throughput, bandwidth and capacity from NVIDIA's
  // datasheets (A10, GeForce RTX 4090 Ada whitepaper, L4, H100 SXM, H200 SXM).
  if (name == "a10g") return DeviceSpec{"A10G 24GB", 125, 600, 24 * std::int64_t{1000000000}};
  if (name == "rtx4090") return DeviceSpec{"RTX 4090 24GB", 165, 1008, 24 * std::int64_t{1000000000}};
  if (name == "l4") return DeviceSpec{"L4 24GB", 121, 300, 24 * std::int64_t{1000000000}};
  if (name == "h100") return DeviceSpec{"H100 SXM 80GB", 989, 3350, 80 * std::int64_t{1000000000}};
  if (name == "h200") return DeviceSpec{"H200 SXM 141GB", 989, 4800, 141 * std::int64_t{1000000000}};
  return InvalidArgumentError(
      absl::StrCat("unknown device '", ToAbsl(name), "' (expected a10g, rtx4090, l4, h100 or h200)"));
}

absl::StatusOr<GpuModel> GpuModel::Create(const ModelShape& m, const DeviceSpec& d, const GpuModelOptions& o,
                                          std::optional<Calibration> calibration) {
  if (m.layers < 1 || m.hidden < 1 || m.heads < 1 || m.kv_heads < 1 || m.head_dim < 1 || m.intermediate < 1 ||
      m.vocab < 1 || m.mlp_matrices < 1 || m.dtype_bytes < 1) {
    return InvalidArgumentError(absl::StrCat("model shape '", m.name, "' has a field < 1"));
  }
  if ((!calibration && (!(d.peak_tflops > 0) || !(d.bandwidth_gb_s > 0))) || d.memory_bytes < 1) {
    return InvalidArgumentError(absl::StrCat("device '", d.name, "' needs TFLOP/s, bandwidth and memory > 0"));
  }
  if (!(o.compute_efficiency > 0 && o.compute_efficiency <= 1) ||
      !(o.bandwidth_efficiency > 0 && o.bandwidth_efficiency <= 1)) {
    return InvalidArgumentError("gpu model: efficiencies must be in (0, 1]");
  }
  if (!(o.launch_overhead_us_per_layer >= 0) || o.reserved_bytes < 0) {
    return InvalidArgumentError("gpu model: launch overhead and reserved bytes must be >= 0");
  }
  return GpuModel(m, d, o, calibration);
}

double GpuModel::PerTokenBytes() const {
  const ModelShape& m = model_;
  const double q = static_cast<double>(m.heads * m.head_dim), kv = static_cast<double>(m.kv_heads * m.head_dim);
  return static_cast<double>(m.dtype_bytes) *
         (2.0 * static_cast<double>(m.hidden) + q + 2 * kv + q +
          static_cast<double>(m.mlp_matrices) * static_cast<double>(m.intermediate));
}

double GpuModel::ScoreBytesPerElement() const {
  // Per element of B·Lmax²: heads score matrices plus the [B, 1, L, L] mask.
  return static_cast<double>(model_.heads) * kEagerScoreBytes + static_cast<double>(model_.dtype_bytes);
}

std::int64_t GpuModel::weight_bytes() const {
  if (calibration_) return calibration_->model_load_bytes;
  return model_.Params() * model_.dtype_bytes;
}

std::int64_t GpuModel::usable_bytes() const { return device_.memory_bytes - options_.reserved_bytes; }

double GpuModel::failed_forward_fraction() const {
  const std::int64_t layers = calibration_ ? calibration_->layers : model_.layers;
  return 1.0 / static_cast<double>(std::max<std::int64_t>(1, layers));
}

std::int64_t GpuModel::activation_budget_bytes() const { return usable_bytes() - weight_bytes(); }

BatchEstimate GpuModel::Estimate(std::span<const std::int64_t> lengths) const {
  BatchEstimate e;
  if (lengths.empty()) return e;
  const auto b = static_cast<double>(lengths.size());
  double lmax = 0, sum = 0, sum_sq = 0;
  for (std::int64_t l : lengths) {
    const auto x = static_cast<double>(l);
    lmax = std::max(lmax, x);
    sum += x;
    sum_sq += x * x;
  }
  const bool padded = calibration_ ? !calibration_->packed() : options_.attention == Attention::kEager;
  const double tokens = padded ? b * lmax : sum;
  const double bl2 = b * lmax * lmax;
  e.computed_tokens = static_cast<std::int64_t>(tokens);
  double activations = 0;
  if (calibration_) {
    const Calibration& c = *calibration_;
    const double pairs = padded ? bl2 : sum_sq;
    activations = c.mem_c0 + c.mem_c1 * tokens + c.mem_c2 * pairs;
    e.latency_us = c.lat_a + c.lat_b * tokens + c.lat_c * pairs;
  } else {
    const ModelShape& m = model_;
    const double layers = static_cast<double>(m.layers);
    const double q = static_cast<double>(m.heads * m.head_dim);
    const double attention_pairs = padded ? bl2 : sum_sq;
    e.flops = layers * (2.0 * static_cast<double>(m.ParamsPerLayer()) * tokens + 4.0 * q * attention_pairs);
    const double scores = options_.attention == Attention::kEager ? ScoreBytesPerElement() * bl2 : 0.0;
    activations = PerTokenBytes() * tokens + scores;
    e.bytes_moved = static_cast<double>(m.layers * m.ParamsPerLayer() * m.dtype_bytes) + layers * 2.0 * activations;
    const double compute_s = e.flops / (device_.peak_tflops * 1e12 * options_.compute_efficiency);
    const double memory_s = e.bytes_moved / (device_.bandwidth_gb_s * kGB * options_.bandwidth_efficiency);
    e.latency_us = layers * options_.launch_overhead_us_per_layer + std::max(compute_s, memory_s) * 1e6;
  }
  e.peak_bytes = weight_bytes() + static_cast<std::int64_t>(std::ceil(activations));
  e.oom = e.peak_bytes > usable_bytes();
  return e;
}

CostModel GpuModel::MatchingTokenCostModel() const {
  const bool padded = calibration_ ? !calibration_->packed() : options_.attention == Attention::kEager;
  return padded ? CostModel::Padded() : CostModel::Sum();
}

absl::StatusOr<CostModel> GpuModel::MatchingMemoryCostModel() const {
  if (calibration_) return CostModel::Memory(calibration_->mem_c0, calibration_->mem_c1, calibration_->mem_c2);
  const double c2 = options_.attention == Attention::kEager ? ScoreBytesPerElement() : 0.0;
  return CostModel::Memory(0, PerTokenBytes(), c2);
}

absl::StatusOr<Calibration> LoadCalibration(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read calibration ", path));
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgumentError(absl::StrCat(path, ": not a JSON object"));
  auto number = [&](const char* object, const char* key, double& out) -> absl::Status {
    if (!j.contains(object) || !j[object].is_object() || !j[object].contains(key) || !j[object][key].is_number()) {
      return InvalidArgumentError(absl::StrCat(path, ": missing number ", object, ".", key));
    }
    out = j[object][key].get<double>();
    if (!std::isfinite(out) || out < 0) return InvalidArgumentError(absl::StrCat(path, ": ", object, ".", key, " < 0"));
    return absl::OkStatus();
  };
  Calibration c;
  for (auto [object, key, out] : {std::tuple{"memory_model", "c0", &c.mem_c0}, {"memory_model", "c1", &c.mem_c1},
                                  {"memory_model", "c2", &c.mem_c2}, {"latency_model_us", "a", &c.lat_a},
                                  {"latency_model_us", "b", &c.lat_b}, {"latency_model_us", "c", &c.lat_c}}) {
    if (absl::Status s = number(object, key, *out); !s.ok()) return s;
  }
  // Optional integers (>= 0) and strings, each checked for its type.
  auto integer = [&](const nlohmann::json& object, const char* key, std::int64_t& out) -> absl::Status {
    if (!object.is_object() || !object.contains(key)) return absl::OkStatus();
    if (!object[key].is_number_integer() || object[key].get<std::int64_t>() < 0) {
      return InvalidArgumentError(absl::StrCat(path, ": ", key, " must be an integer >= 0"));
    }
    out = object[key].get<std::int64_t>();
    return absl::OkStatus();
  };
  auto text = [&](const nlohmann::json& object, const char* key, std::string& out) -> absl::Status {
    if (!object.is_object() || !object.contains(key)) return absl::OkStatus();
    if (!object[key].is_string()) return InvalidArgumentError(absl::StrCat(path, ": ", key, " must be a string"));
    out = object[key].get<std::string>();
    return absl::OkStatus();
  };
  std::int64_t threads = 0;
  const nlohmann::json none;
  const nlohmann::json& model = j.contains("model") ? j["model"] : none;
  if (!model.is_null() && !model.is_object())
    return InvalidArgumentError(absl::StrCat(path, ": model must be an object"));
  for (absl::Status s :
       {integer(j, "model_load_bytes", c.model_load_bytes), integer(j, "threads", threads),
        integer(j, "memory_limit_bytes", c.memory_limit_bytes), integer(j, "max_input_tokens", c.max_input_tokens),
        integer(model, "layers", c.layers), integer(model, "max_positions", c.max_positions),
        text(j, "device", c.device), text(model, "name", c.model_name), text(model, "path", c.model_path),
        text(model, "execution", c.execution)}) {
    if (!s.ok()) return s;
  }
  c.threads = static_cast<int>(std::min<std::int64_t>(threads, 1 << 20));
  c.path = path;
  return c;
}

DeviceSpec CalibratedDevice(const Calibration& c, const DeviceSpec& fallback) {
  DeviceSpec d;
  d.name = absl::StrCat(c.device.empty() ? "device" : c.device, " as calibrated in ", c.path);
  d.memory_bytes = c.memory_limit_bytes > 0 ? c.memory_limit_bytes : fallback.memory_bytes;
  return d;
}

}  // namespace tokenbatch::sim
