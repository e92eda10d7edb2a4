// Several models in one serve: the per-model flags and the plan (see
// serve_models.h). Pure: no file, clock or environment is read here.
#include "cli/serve_models.h"

#include <algorithm>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "tokenbatch/core/errors.h"
#include "tokenbatch/core/scheduler_options.h"

namespace tokenbatch::cli {
namespace {

absl::Status Bad(const std::string& message) { return InvalidArgumentError(message); }

// One per-model flag: its name, and how to read its value for a model into ServeArgs.
template <typename T>
struct Field {
  const char* flag;
  const std::vector<T>* values;
  T ServeArgs::*field;
};

template <typename T>
void Apply(const Field<T>& f, std::size_t model, ServeArgs& args) {
  if (f.values->empty()) return;
  args.*f.field = f.values->size() == 1 ? f.values->front() : (*f.values)[model];
}

}  // namespace

absl::StatusOr<std::vector<ServeArgs>> SplitPerModel(const ServeArgs& shared, const PerModelArgs& p) {
  const std::vector<Field<std::string>> strings{
      {"--model-id", &p.model_id, &ServeArgs::model_id},
      {"--served-model-name", &p.served_model_name, &ServeArgs::served_model_name},
      {"--tokenizer", &p.tokenizer, &ServeArgs::tokenizer},
      {"--pooling", &p.pooling, &ServeArgs::pooling},
      {"--normalize", &p.normalize, &ServeArgs::normalize},
      {"--dtype", &p.dtype, &ServeArgs::dtype},
      {"--quantize", &p.quantize, &ServeArgs::quantize},
      {"--default-prompt-name", &p.default_prompt_name, &ServeArgs::default_prompt_name},
      {"--default-prompt", &p.default_prompt, &ServeArgs::default_prompt},
      {"--calibration", &p.calibration, &ServeArgs::calibration},
      {"--cost-model", &p.cost_model, &ServeArgs::cost_model}};
  const std::vector<Field<std::int64_t>> counts{
      {"--max-batch-tokens", &p.max_batch_tokens, &ServeArgs::max_batch_tokens},
      {"--max-batch-requests", &p.max_batch_requests, &ServeArgs::max_batch_requests},
      {"--max-input-tokens", &p.max_input_tokens, &ServeArgs::max_input_tokens}};
  const std::vector<Field<int>> threads{{"--workers", &p.workers, &ServeArgs::workers},
                                        {"--threads", &p.threads, &ServeArgs::threads}};
  const std::vector<Field<double>> weights{
      {"--device-memory-weight", &p.device_memory_weight, &ServeArgs::device_memory_weight}};
  const std::vector<Field<std::uint64_t>> bytes{
      {"--device-memory-guaranteed", &p.device_memory_guaranteed, &ServeArgs::device_memory_guaranteed}};

  std::size_t models = 1;
  auto count = [&](const auto& fields) {
    for (const auto& f : fields) models = std::max(models, f.values->size());
  };
  count(strings), count(counts), count(threads), count(weights), count(bytes);
  auto check = [&](const auto& fields) -> absl::Status {
    for (const auto& f : fields) {
      const std::size_t n = f.values->size();
      if (n > 1 && n != models) {
        return Bad(fmt::format("{} is given {} times for {} models: give it once, for every model, or once per model",
                               f.flag, n, models));
      }
    }
    return absl::OkStatus();
  };
  for (const absl::Status& s : {check(strings), check(counts), check(threads), check(weights), check(bytes)}) {
    if (!s.ok()) return s;
  }
  std::vector<ServeArgs> out(models, shared);
  // The cores are shared within one model's workers only: several models run
  // their forwards side by side on fixed widths unless adaptive is asked for
  // (which ResolveServePlan refuses, naming the flag).
  if (models > 1 && shared.intra_op == "auto") {
    for (ServeArgs& a : out) a.intra_op = "fixed";
  }
  for (std::size_t m = 0; m < models; ++m) {
    auto apply = [&](const auto& fields) {
      for (const auto& f : fields) Apply(f, m, out[m]);
    };
    apply(strings), apply(counts), apply(threads), apply(weights), apply(bytes);
  }
  return out;
}

absl::StatusOr<CostModel> CalibratedMemoryModel(const backend::CalibrationFile& calibration) {
  const backend::BudgetLimits& limits = calibration.limits;
  if (limits.memory_budget_bytes <= 0) {
    return Bad("its calibration has no memory budget (calibrate recommended nothing): calibrate again");
  }
  // The fit may fall short of the measured peaks on large shapes; calibrate
  // shrinks its budget by that, so the bytes it predicts are raised here by as much.
  const double forward = static_cast<double>(limits.forward_limit_bytes > 0 ? limits.forward_limit_bytes
                                                                            : limits.memory_budget_bytes);
  const double raise = std::max(1.0, forward / static_cast<double>(limits.memory_budget_bytes));
  absl::StatusOr<CostModel> model = CostModel::Memory(calibration.memory.c0 * raise, calibration.memory.c1 * raise,
                                                      calibration.memory.c2 * raise);
  if (!model.ok()) return Bad(fmt::format("its calibration's memory fit: {}", std::string(model.status().message())));
  return model;
}

absl::StatusOr<ServePlan> ResolveServePlan(std::vector<ServeConfig> models, const std::vector<ServeArgs>& args,
                                           const std::vector<ServeFiles>& files) {
  if (models.empty() || models.size() != args.size() || models.size() != files.size()) {
    return Bad("serve needs one configuration, flags and files per model");
  }
  std::set<std::string> names;
  for (const ServeConfig& c : models) {
    if (!names.insert(c.server.model_name).second) {
      return Bad(fmt::format(
          "two models are named \"{}\": give each its own --served-model-name (once per --model-id)",
          c.server.model_name));
    }
  }
  if (models.size() > 1) {
    for (const ServeConfig& c : models) {
      if (c.service.batcher.intra_op) {
        return Bad("--intra-op adaptive shares the CPU's cores within one model's workers, and this server runs "
                   "several models: serve them with --intra-op fixed");
      }
    }
  }
  ServePlan plan;
  const std::uint64_t limit = args.front().device_memory;
  if (limit > 0) {
    DeviceMemoryBudgetOptions budget{.limit_bytes = static_cast<std::int64_t>(
                                         std::min<std::uint64_t>(limit, std::uint64_t{1} << 62))};
    for (std::size_t m = 0; m < models.size(); ++m) {
      const ServeConfig& c = models[m];
      const std::string& name = c.server.model_name;
      if (!files[m].calibration) {
        return Bad(fmt::format(
            "--device-memory shares the device by each model's bytes per batch, and model \"{}\" has no "
            "--calibration: run `tokenbatch calibrate --model-id DIR --memory-limit BYTES --json FILE` for it and "
            "pass --calibration FILE (once per --model-id)",
            name));
      }
      if (files[m].calibration->device != files.front().calibration->device) {
        return Bad(fmt::format("--device-memory shares one device, and model \"{}\" was calibrated on {} but \"{}\" "
                               "on {}",
                               name, files[m].calibration->device, models.front().server.model_name,
                               files.front().calibration->device));
      }
      absl::StatusOr<CostModel> memory = CalibratedMemoryModel(*files[m].calibration);
      if (!memory.ok()) return Bad(fmt::format("model \"{}\": {}", name, std::string(memory.status().message())));
      const std::int64_t longest = EffectiveMaxInputTokens(c.service.batcher.scheduler);
      budget.models.push_back(ModelMemoryShare{
          .name = name,
          .weight = args[m].device_memory_weight,
          .guaranteed_bytes =
              static_cast<std::int64_t>(std::min<std::uint64_t>(args[m].device_memory_guaranteed, std::uint64_t{1} << 62)),
          .largest_batch_bytes = memory->SingleCost(longest)});
      plan.memory_models.push_back(*memory);
    }
    // Refusals name the flags.
    if (absl::StatusOr<DeviceMemoryBudget> checked = DeviceMemoryBudget::Create(budget); !checked.ok()) {
      return Bad(fmt::format("--device-memory {}: {}", limit, std::string(checked.status().message())));
    }
    plan.device_memory = std::move(budget);
  } else {
    for (const ServeArgs& a : args) {
      if (a.device_memory_guaranteed > 0 || a.device_memory_weight != ServeArgs{}.device_memory_weight) {
        return Bad("--device-memory-weight and --device-memory-guaranteed share --device-memory: pass it too");
      }
    }
  }
  plan.models = std::move(models);
  return plan;
}

}  // namespace tokenbatch::cli
