// GpuModel: the latency and peak memory of one encoder forward on a GPU, from the
// model's shape and the device's datasheet (or from a calibration file), for the
// discrete-event simulator.
//
// Notation: a batch of B requests with lengths L_i, Lmax = max L_i. With eager
// attention the backend pads (tensors [B, Lmax]) and computes T = B·Lmax tokens;
// with flash attention (variable-length kernels, TEI's GPU path) it computes only
// T = Σ L_i. h = hidden, q = heads·head_dim, kv = kv_heads·head_dim,
// i = intermediate, m = MLP matrices (2 for GELU, 3 for SwiGLU), b = dtype bytes.
//
// Parameters per layer  P = h·q + 2·h·kv + q·h + m·h·i  (Q, K, V, O, MLP weights;
//   biases and norms ignored). Qwen3-Embedding-0.6B: 28 layers × 15.7 M + the
//   151,669 × 1,024 embedding table = 0.596 B parameters, its published size.
// FLOPs (Kaplan et al. 2020, "Scaling Laws for Neural Language Models", §2.1:
//   2 FLOPs per parameter per token; attention 2·2·L²·q per sequence per layer
//   for QKᵀ and A·V; no LM head: an embedding model pools the last hidden state):
//     F = layers · (2·P·T + 4·q·A),  A = B·Lmax² (eager) or Σ L_i² (flash).
//   The mask is counted as full (non-causal); a causal flash kernel does ~half.
// Peak memory (inference: one layer's temporaries alive at a time):
//     weights = params·b
//     per token  a = b·(2h + q + 2kv + q + m·i)    residual in/out, Q K V, context,
//                                                   MLP intermediates (SwiGLU keeps
//                                                   gate, up and their product)
//     eager scores s = B·heads·Lmax²·8 + B·Lmax²·b  Hugging Face's eager attention
//                   keeps the fp16 scores (2 bytes), the fp32 softmax (4) and its
//                   fp16 cast (2) alive at once, plus the [B, 1, L, L] mask.
//     peak = weights + a·T + s     (flash: s = 0; FlashAttention never
//            materialises the L×L scores, Dao et al. 2022)
//   a·T + s is an upper bound of the activation peak (attention and MLP
//   temporaries are not alive together), so a budget on it is safe.
//   The batch fails with out-of-memory (as CUDA would) when
//   peak > capacity − reserved; `reserved` (default 1 GiB) stands for the CUDA
//   context, cuBLAS workspace and allocator fragmentation.
// Latency (roofline, Williams et al. 2009):
//     t = layers·launch_overhead + max(F / (peak_flops·compute_efficiency),
//                                      bytes / (bandwidth·bandwidth_efficiency))
//     bytes = weights (read once) + layers · 2·(a·T + s)  (each temporary written
//             once and read once)
//   compute_efficiency 0.5 and bandwidth_efficiency 0.7 are typical achieved
//   fractions of the datasheet for large fp16 GEMMs and streaming kernels; the
//   launch overhead (50 µs per layer: ~10 kernels × ~5 µs) dominates tiny batches.
// Calibration (from `tokenbatch calibrate --json`): memory_model {c0, c1, c2} and
//   latency_model_us {a, b, c} replace the formulas: peak = model_load_bytes +
//   c0 + c1·T + c2·A, t = a + b·T + c·A, with T = B·Lmax and A = B·Lmax² for a
//   padded backend, T = Σ L_i and A = Σ L_i² for a packed one (the calibration's
//   model.execution). calibrate measures uniform shapes, on which the two agree;
//   a packed forward computes only the real tokens and attends within each
//   sequence.
//
// GpuModel is an immutable value: thread-safe, nothing blocks (except
// FromCalibrationFile, which reads a file).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "tokenbatch/core/cost_model.h"
#include "tokenbatch/core/enum_names.h"

namespace tokenbatch::sim {

// A transformer encoder's shape (what the formulas need).
struct ModelShape {
  std::string name;
  std::int64_t layers = 0;
  std::int64_t hidden = 0;        // h
  std::int64_t heads = 0;         // attention heads
  std::int64_t kv_heads = 0;      // grouped-query attention: K/V heads (= heads without GQA)
  std::int64_t head_dim = 0;      // per head (often hidden / heads)
  std::int64_t intermediate = 0;  // MLP width i
  std::int64_t vocab = 0;         // embedding table rows
  std::int64_t mlp_matrices = 2;  // 2: up + down (GELU, BERT); 3: gate + up + down (SwiGLU)
  std::int64_t dtype_bytes = 2;   // fp16 / bf16
  std::int64_t max_positions = 0;  // longest input in tokens (0: unknown)

  // Qwen3-Embedding-0.6B (its config.json): 28 layers, hidden 1024, 16 heads of
  // 128, 8 K/V heads, intermediate 3072 (SwiGLU), vocab 151,669, 32,768
  // positions.
  [[nodiscard]] static ModelShape Qwen3Embedding0_6B();
  // all-MiniLM-L6-v2 (BERT): 6 layers, hidden 384, 12 heads, intermediate 1536,
  // vocab 30,522, 512 positions.
  [[nodiscard]] static ModelShape MiniLML6();
  // XLM-RoBERTa base, the encoder of bge-reranker-base (its config.json): 12
  // layers, hidden 768, 12 heads, intermediate 3072 (GELU), vocab 250,002, 512
  // positions.
  [[nodiscard]] static ModelShape XlmRobertaBase();

  // P of the overview, parameters of one layer.
  [[nodiscard]] std::int64_t ParamsPerLayer() const;
  // layers·P + vocab·hidden.
  [[nodiscard]] std::int64_t Params() const;
};

// A device's datasheet numbers.
struct DeviceSpec {
  std::string name;
  double peak_tflops = 0;          // dense fp16/bf16 tensor-core TFLOP/s (no sparsity)
  double bandwidth_gb_s = 0;       // memory bandwidth, GB/s (10^9 bytes)
  std::int64_t memory_bytes = 0;   // capacity
};

// Presets (NVIDIA datasheets): "a10g" (A10: 125 TFLOP/s, 600 GB/s, 24 GB),
// "rtx4090" (165 TFLOP/s fp16 with fp32 accumulate, 1008 GB/s, 24 GB), "l4" (121,
// 300 GB/s, 24 GB), "h100" (SXM: 989, 3350 GB/s, 80 GB), "h200" (989, 4800 GB/s,
// 141 GB). Capacities in GB = 10^9 bytes as printed. Errors: InvalidArgument
// listing the names.
[[nodiscard]] absl::StatusOr<DeviceSpec> DevicePreset(std::string_view name);

enum class Attention { kEager, kFlash };
inline constexpr EnumNames<Attention, 2> kAttentionNames{
    "attention", {{{Attention::kEager, "eager"}, {Attention::kFlash, "flash"}}}};
// "eager" | "flash". Errors: InvalidArgument listing them.
[[nodiscard]] inline absl::StatusOr<Attention> ParseAttention(std::string_view name) {
  return kAttentionNames.Parse(name);
}

struct GpuModelOptions {
  Attention attention = Attention::kEager;
  double compute_efficiency = 0.5;       // achieved / peak FLOP/s, in (0, 1]
  double bandwidth_efficiency = 0.7;     // achieved / peak bandwidth, in (0, 1]
  double launch_overhead_us_per_layer = 50;
  std::int64_t reserved_bytes = std::int64_t{1} << 30;  // CUDA context, workspace
};

// The modelled cost of one batch.
struct BatchEstimate {
  std::int64_t computed_tokens = 0;  // T
  double flops = 0;
  double bytes_moved = 0;
  double latency_us = 0;
  std::int64_t peak_bytes = 0;       // weights + activations
  bool oom = false;                  // peak_bytes > capacity − reserved
};

// Calibration replacing the formulas (see the overview), with what the file says
// about the device and model it measured.
struct Calibration {
  double mem_c0 = 0, mem_c1 = 0, mem_c2 = 0;  // bytes, bytes/token, bytes/token²
  double lat_a = 0, lat_b = 0, lat_c = 0;     // µs, µs/token, µs/token²
  std::int64_t model_load_bytes = 0;          // weights resident before the forward
  std::string path;                           // the file it was read from
  std::string device;                         // "cpu", "cuda:0", ... ("" if the file has none)
  int threads = 0;                            // libtorch intra-op threads of the forward (0: unknown)
  std::int64_t memory_limit_bytes = 0;        // memory the process may use (0: unknown)
  std::int64_t max_input_tokens = 0;          // longest input calibrated (0: unknown)
  std::int64_t max_positions = 0;             // model.max_positions (0: unknown)
  std::string model_name;                     // model.name ("" if absent)
  std::string model_path;                     // model.path ("" if absent)
  std::int64_t layers = 0;                    // model.layers (0: unknown)
  // model.execution: "packed" (a --model-id directory run without padding:
  // cost follows Σ L and Σ L²), else padded shapes (B·Lmax, B·Lmax²).
  std::string execution;

  [[nodiscard]] bool on_cpu() const { return device == "cpu"; }
  [[nodiscard]] bool packed() const { return execution == "packed"; }
};

class GpuModel {
 public:
  // Errors: InvalidArgument for a shape with a field < 1, a device with a
  // non-positive field (only its memory is checked when calibrated: the
  // calibration replaces the datasheet), or efficiencies outside (0, 1].
  [[nodiscard]] static absl::StatusOr<GpuModel> Create(const ModelShape& model, const DeviceSpec& device,
                                                       const GpuModelOptions& options,
                                                       std::optional<Calibration> calibration = std::nullopt);

  // Estimates one batch; `lengths` are the requests' token counts (each >= 1).
  [[nodiscard]] BatchEstimate Estimate(std::span<const std::int64_t> lengths) const;

  // Bytes a forward may use: capacity − reserved − weights (may be <= 0).
  [[nodiscard]] std::int64_t activation_budget_bytes() const;
  [[nodiscard]] std::int64_t weight_bytes() const;
  [[nodiscard]] std::int64_t usable_bytes() const;  // capacity − reserved
  // The share of a forward's latency a call that runs out of memory costs
  // before it fails: 1 / layers. Why: every layer reaches the same activation
  // peak, so the first one fails. A calibration that does not name its layers
  // costs the whole forward (an upper bound).
  [[nodiscard]] double failed_forward_fraction() const;
  // The core cost model that matches this backend's token accounting: padded
  // (B·Lmax) for eager attention or a padded calibration, sum for flash or a
  // packed calibration.
  [[nodiscard]] CostModel MatchingTokenCostModel() const;
  // The core `memory` cost model (c0 = 0, c1 = a, c2 = heads·8 + b; or the
  // calibration's) whose budget is activation_budget_bytes(). Only meaningful for
  // eager attention, whose memory follows B·Lmax.
  [[nodiscard]] absl::StatusOr<CostModel> MatchingMemoryCostModel() const;

  [[nodiscard]] const ModelShape& model() const { return model_; }
  [[nodiscard]] const DeviceSpec& device() const { return device_; }
  [[nodiscard]] const GpuModelOptions& options() const { return options_; }
  [[nodiscard]] bool calibrated() const { return calibration_.has_value(); }

 private:
  GpuModel(ModelShape model, DeviceSpec device, GpuModelOptions options, std::optional<Calibration> calibration)
      : model_(std::move(model)), device_(std::move(device)), options_(options), calibration_(calibration) {}
  double PerTokenBytes() const;
  double ScoreBytesPerElement() const;
  ModelShape model_;
  DeviceSpec device_;
  GpuModelOptions options_;
  std::optional<Calibration> calibration_;
};

// Reads memory_model {c0, c1, c2}, latency_model_us {a, b, c} and, where present,
// model_load_bytes, device, threads, memory_limit_bytes, max_input_tokens and
// model {name, path, layers, max_positions, execution} from a `tokenbatch calibrate --json` file. Errors:
// NotFound, InvalidArgument naming the missing or malformed field.
[[nodiscard]] absl::StatusOr<Calibration> LoadCalibration(const std::string& path);

// The device a calibration measured, as the simulator models it: named
// "<device> as calibrated in <file>", its memory the calibration's limit (the
// datasheet fields stay 0: the calibration replaces them). A calibration without
// a memory limit keeps `fallback`'s memory. Nothing fails.
[[nodiscard]] DeviceSpec CalibratedDevice(const Calibration& calibration, const DeviceSpec& fallback);

}  // namespace tokenbatch::sim
