// The files `tokenbatch serve`'s flags name, read and checked once before the
// configuration is resolved (see serve_config.h).
#include <sched.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "api/api_key.h"
#include "cli/serve_config.h"
#include "tokenbatch/core/errors.h"
#include "tokenbatch/hf/model_directory.h"

namespace tokenbatch::cli {
namespace {

namespace fs = std::filesystem;

absl::Status Bad(const std::string& message) { return InvalidArgumentError(message); }

absl::StatusOr<ModelDirectoryFacts> ReadDirectory(const ServeArgs& args, const std::string& dir) {
#ifdef TOKENBATCH_HAVE_BACKEND
  // The directory's own name, also when given as "dir/", "dir/." or ".".
  fs::path name = fs::absolute(dir).lexically_normal();
  if (name.filename().empty()) name = name.parent_path();
  if (!fs::is_directory(dir)) {
    return Bad(fmt::format("model directory {} not found; {}", dir,
                           args.model_id.empty() ? "run scripts/prepare_assets.sh, or pass --model-id DIR"
                                                 : "--model-id takes a Hugging Face model directory"));
  }
  absl::StatusOr<hf::ModelDirectory> m = hf::ReadModelDirectory(dir);
  if (!m.ok()) return Bad(fmt::format("--model-id {}: {}", dir, std::string(m.status().message())));
  return ModelDirectoryFacts{.prompts = m->prompts,
                             .default_prompt_name = m->default_prompt_name,
                             .tokenizer_path = m->tokenizer_path,
                             .tokenizer_options = {.lowercase = m->do_lower_case},
                             .truncate_left = m->truncate_left,
                             .torch_dtype = m->config.torch_dtype,
                             .name = name.filename().string()};
#else
  (void)args;
  (void)dir;
  return absl::UnimplementedError("this build has no libtorch backend; use --backend noop");
#endif
}

// The calibration file, refused unless it passes the checks `calibrate`
// applies before it recommends (backend::ReadCalibrationFile): a budget it did
// not measure, or a fit that misses its large shapes, must not size this
// server's batches.
absl::StatusOr<backend::CalibrationFile> ReadCalibration(const std::string& path) {
  absl::StatusOr<backend::CalibrationFile> file = backend::ReadCalibrationFile(path);
  if (!file.ok()) {
    return Bad(fmt::format(
        "--calibration {}. Run `tokenbatch calibrate` again (it lowers or refuses what it did not "
        "measure), or serve without --calibration",
        std::string(file.status().message())));
  }
  return file;
}

}  // namespace

absl::StatusOr<ServeFiles> ReadServeFiles(const ServeArgs& args, const BundledFiles& bundled) {
  ServeFiles files;
  files.bundled_tokenizer = bundled.tokenizer;
  if (cpu_set_t cpus; sched_getaffinity(0, sizeof(cpus), &cpus) == 0) files.cpu_cores = std::max(1, CPU_COUNT(&cpus));
  files.model_dir = ChooseModelDirectory(args, bundled.model_dir);
  if (!files.model_dir.empty()) {
    absl::StatusOr<ModelDirectoryFacts> facts = ReadDirectory(args, files.model_dir);
    if (!facts.ok()) return facts.status();
    files.directory = *std::move(facts);
  } else if (args.backend == "torch") {
#ifndef TOKENBATCH_HAVE_BACKEND
    return absl::UnimplementedError("this build has no libtorch backend; use --backend noop");
#endif
    if (!fs::exists(args.model)) {
      return Bad(fmt::format(
          "model {} not found; pass a TorchScript file to --model (scripts/gen_models.py writes some), --model-id "
          "DIR for a Hugging Face directory, or --backend noop",
          args.model));
    }
    // The sidecar gen_models.py writes beside the model gives its vocabulary and positions.
    if (std::ifstream in(fs::path(args.model).replace_extension(".json")); in) {
      const nlohmann::json shape = nlohmann::json::parse(in, nullptr, false);
      if (shape.is_object()) {
        files.torchscript_vocab_size = shape.value("vocab", std::int64_t{0});
        files.torchscript_max_positions = shape.value("max_positions", std::int64_t{0});
      }
    }
  }
  if (!args.calibration.empty()) {
    absl::StatusOr<backend::CalibrationFile> calib = ReadCalibration(args.calibration);
    if (!calib.ok()) return calib.status();
    files.calibration = *std::move(calib);
  }
  // With a key set too, ResolveServeConfig refuses the pair: the file is not read.
  if (!args.api_key_file.empty() && args.api_key.empty()) {
    absl::StatusOr<std::string> key = server::ReadApiKeyFile(args.api_key_file);
    if (!key.ok()) return Bad(fmt::format("--api-key-file: {}", std::string(key.status().message())));
    files.api_key = *std::move(key);
  }
  return files;
}

}  // namespace tokenbatch::cli
