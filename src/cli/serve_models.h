// Several models in one `tokenbatch serve`: the flags each model may set for
// itself, and the plan that puts the models, each resolved as one model is
// (serve_config.h), on one device memory budget.
//
// A flag of PerModelArgs is given once, for every model, or once per model in
// order: `--model-id A --model-id B --max-batch-tokens 8192 --max-batch-tokens
// 2048` (Infinity's convention for `infinity_emb v2`). The number of models is
// the most values any of them has. Every other flag is the server's and holds
// for every model.
//
// With --device-memory BYTES the models' batches share that many bytes of the
// device (activations; the loaded weights are not counted): one admission step
// (runtime/shared_device_memory.h) keeps the bytes of every model's batches in
// flight under it. Each model's bytes per batch come from its --calibration's
// memory fit, raised by the fit's worst shortfall on the large shapes it
// measured, as `calibrate` lowers its own budget by it, so that the shared
// budget is as safe as a calibrated one. --device-memory-weight and
// --device-memory-guaranteed set each model's share (DeviceMemoryBudget).
//
// Everything here is pure: table-tested in serve_models_test.cc.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/serve_args.h"
#include "cli/serve_config.h"
#include "tokenbatch/core/cost_model.h"
#include "tokenbatch/core/device_memory_budget.h"

namespace tokenbatch::cli {

// The per-model flags as given on the command line (or their environment
// variables): each list empty (the flag's default), of one value (every model)
// or of one value per model.
struct PerModelArgs {
  std::vector<std::string> model_id;
  std::vector<std::string> served_model_name;
  std::vector<std::string> tokenizer;
  std::vector<std::string> pooling;
  std::vector<std::string> normalize;
  std::vector<std::string> dtype;
  std::vector<std::string> quantize;
  std::vector<std::string> default_prompt_name;
  std::vector<std::string> default_prompt;
  std::vector<std::string> calibration;
  std::vector<std::string> cost_model;
  std::vector<std::int64_t> max_batch_tokens;
  std::vector<std::int64_t> max_batch_requests;
  std::vector<std::int64_t> max_input_tokens;
  std::vector<int> workers;
  std::vector<int> threads;
  std::vector<double> device_memory_weight;
  std::vector<std::uint64_t> device_memory_guaranteed;
};

// One ServeArgs per model: `shared` with each per-model flag's value for that
// model. Errors: InvalidArgument naming a flag given neither once nor once per
// model ("--pooling is given 2 times for 3 models: give it once, for every
// model, or once per model").
[[nodiscard]] absl::StatusOr<std::vector<ServeArgs>> SplitPerModel(const ServeArgs& shared,
                                                                   const PerModelArgs& per_model);

// What `tokenbatch serve` runs.
struct ServePlan {
  // One per model; the first is the default model of a request that names none.
  // The server options, shutdown delay, log level and warnings are the first's
  // (the server's flags hold for every model).
  std::vector<ServeConfig> models;
  // With --device-memory: the shared budget, one share per model in order.
  std::optional<DeviceMemoryBudgetOptions> device_memory;
  // With --device-memory: each model's bytes per batch (a `memory` cost model).
  std::vector<CostModel> memory_models;
};

// The plan for `models` (each ResolveServeConfig's, from `args` and `files` of
// the same index). Pure. Errors: InvalidArgument: two models with one name
// (naming it and --served-model-name); with --device-memory, a model without
// --calibration, models on different devices, a calibration without a memory
// fit, and DeviceMemoryBudget::Create's refusals (shares that do not fit the
// limit together, naming the model and the bytes).
[[nodiscard]] absl::StatusOr<ServePlan> ResolveServePlan(std::vector<ServeConfig> models,
                                                         const std::vector<ServeArgs>& args,
                                                         const std::vector<ServeFiles>& files);

// A calibration's memory fit as the bytes of a batch, raised by its worst
// shortfall on the large shapes (memory_budget_bytes against the forward
// bytes). Errors: InvalidArgument for a fit without a per-token term or a
// calibration without a memory budget.
[[nodiscard]] absl::StatusOr<CostModel> CalibratedMemoryModel(const backend::CalibrationFile& calibration);

}  // namespace tokenbatch::cli
