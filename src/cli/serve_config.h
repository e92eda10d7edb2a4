// `tokenbatch serve`'s configuration: the flags (ServeArgs) and the files they
// name (ServeFiles) resolved into the options of the service, the HTTP server
// and the encoder (ServeConfig). ResolveServeConfig is pure, so every rule
// between flags is table-tested (serve_config_test.cc); ReadServeFiles is
// the only part that reads files, LoadServeEncoder the only one that loads a
// model.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "backend/calibration_file.h"
#include "cli/serve_args.h"
#include "tokenbatch/api/server_options.h"
#include "tokenbatch/backend/encoder.h"
#include "tokenbatch/backend/noop_encoder.h"
#include "tokenbatch/hf/hf_encoder.h"
#include "tokenbatch/service/embedding_service.h"
#include "tokenbatch/tokenizer/tokenizer.h"

namespace tokenbatch::cli {

// The encoder serve loads, with its options.
struct EncoderChoice {
  enum class Kind { kNoop, kTorchScript, kHfDirectory };
  Kind kind = Kind::kNoop;
  backend::NoopEncoderOptions noop;      // kNoop
  backend::EncoderOptions torchscript;   // kTorchScript
  hf::HfEncoderOptions hf;               // kHfDirectory
};

struct ServeConfig {
  server::ServiceOptions service;
  server::ServerOptions server;
  EncoderChoice encoder;
  std::string tokenizer;  // the tokenizer.json to load
  // How to load it: the model directory's do_lower_case and bos/eos settings.
  tokenizer::LoadOptions tokenizer_options;
  // What is loaded, for messages: the directory or the TorchScript file; "" for noop.
  std::string model_path;
  // After SIGTERM: how long /health answers 503 "draining" before the listener closes.
  std::chrono::milliseconds shutdown_delay{0};
  std::string log_level;
  // Said to the log at start (e.g. both --model and --model-id given).
  std::vector<std::string> warnings;
  // Where max_batch_tokens came from, for the error when it cannot hold one
  // longest input: "--max-batch-tokens", "--calibration FILE" or "the default".
  std::string budget_origin;
  // --calibration's model fingerprint and file, checked against the model
  // loaded (backend::CheckFingerprint); unset without a calibration or with
  // --backend noop, which runs no model.
  std::optional<backend::ModelFingerprint> calibrated_fingerprint;
  std::string calibration_path;
  int threads = 0;  // --threads, as a fingerprint records it
};

// The files serve uses when no flag names others (cli/default_paths.h).
struct BundledFiles {
  std::string model_dir;  // the real all-MiniLM-L6-v2 directory (scripts/prepare_assets.sh)
  std::string tokenizer;  // the Qwen3 tokenizer.json, for --model and noop
};

// What a Hugging Face model directory says that serve needs before loading it.
struct ModelDirectoryFacts {
  std::map<std::string, std::string> prompts;  // config_sentence_transformers.json's
  std::string default_prompt_name;             // its default_prompt_name
  std::string tokenizer_path;                  // its tokenizer.json; "" when it has none
  tokenizer::LoadOptions tokenizer_options;    // from hf::ModelDirectory::do_lower_case
  bool truncate_left = false;                  // its tokenizer_config.json truncation_side is "left"
  std::string torch_dtype;                     // config.json's dtype / torch_dtype; "" when not given
  std::string name;  // the directory's own name, also when given as "dir/", "dir/." or "."
};

// The files ResolveServeConfig needs, as ReadServeFiles reads them.
struct ServeFiles {
  std::string bundled_tokenizer;                  // BundledFiles::tokenizer
  std::string model_dir;                          // ChooseModelDirectory's; "" = none
  std::optional<ModelDirectoryFacts> directory;   // set when model_dir is
  std::optional<backend::CalibrationFile> calibration;     // --calibration, parsed and checked
  std::string api_key;                            // --api-key-file's line; "" = none
  // A TorchScript --model's .json sidecar (scripts/gen_models.py): 0 = unknown.
  std::int64_t torchscript_vocab_size = 0;
  std::int64_t torchscript_max_positions = 0;
  // CPUs this process may run on (sched_getaffinity): --intra-op adaptive's
  // cores unless --threads says.
  int cpu_cores = 1;
};

// The Hugging Face directory serve loads: --model-id (or MODEL_ID), else
// `bundled_dir`, unless --model names a TorchScript file or --backend is not
// torch (then ""). Pure.
[[nodiscard]] std::string ChooseModelDirectory(const ServeArgs& args, std::string_view bundled_dir);

// Reads what `args` names (nothing of a model unless --backend is torch, so
// that ResolveServeConfig names a mistyped backend): the model directory's
// files (hf::ReadModelDirectory),
// the --calibration file (parsed and checked as `calibrate` checks before it
// recommends, CheckCalibrationFile), the --api-key-file line and a TorchScript
// model's sidecar. Blocks on the file system. Errors: InvalidArgument naming
// the flag and the file: a model directory that is missing or not a valid
// one, a missing TorchScript file, a calibration that is not JSON or that its
// checks refuse, an unreadable key file; Unimplemented for a model in a
// build without libtorch.
[[nodiscard]] absl::StatusOr<ServeFiles> ReadServeFiles(const ServeArgs& args, const BundledFiles& bundled);

// The configuration `args` and `files` give. Pure: the same inputs give the
// same configuration or the same error. Errors: InvalidArgument naming the
// flag, e.g. "--max-wait-ms must be >= 0, got -1", "--policy: unknown packing
// policy 'x'; ...", a calibration that does not fit the flags (longer inputs,
// more rows, another device, several workers), or a combination that cannot
// work (--auto-truncate with --oversize split, --api-key with
// --api-key-file, --lb-agent-port equal to --port).
[[nodiscard]] absl::StatusOr<ServeConfig> ResolveServeConfig(const ServeArgs& args, const ServeFiles& files);

// Loads the encoder `config` chooses and checks it against `tokenizer`: a Hugging
// Face directory whose embedding table is smaller than the tokenizer's
// vocabulary is refused; a TorchScript model's is warned about (its token-id
// inputs below the size still work). Blocks for the load. Errors: the
// encoders' Load errors (their code, the message after "loading PATH: "),
// InvalidArgument for the vocabulary mismatch, Unimplemented without libtorch.
[[nodiscard]] absl::StatusOr<std::unique_ptr<backend::Encoder>> LoadServeEncoder(
    const ServeConfig& config, const tokenizer::Tokenizer& tokenizer);

}  // namespace tokenbatch::cli
