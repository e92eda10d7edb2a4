// ServeArgs + ServeFiles -> ServeConfig (see serve_config.h). Pure: no file,
// clock or environment is read here.
#include "cli/serve_config.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <utility>

#include <fmt/format.h>

#include "cli/duration_flag.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::cli {
namespace {

absl::Status Bad(const std::string& message) { return InvalidArgumentError(message); }

// `what: <the status's message>`, for a parse error of a flag or file field.
absl::Status Named(std::string_view what, const absl::Status& status) {
  return Bad(fmt::format("{}: {}", what, std::string(status.message())));
}

// --normalize as given: unset, or true/false (also 1/0, yes/no).
absl::StatusOr<std::optional<bool>> NormalizeFlag(const ServeArgs& a) {
  if (a.normalize.empty()) return std::optional<bool>();
  if (a.normalize == "true" || a.normalize == "1" || a.normalize == "yes") return std::optional<bool>(true);
  if (a.normalize == "false" || a.normalize == "0" || a.normalize == "no") return std::optional<bool>(false);
  return Bad("--normalize must be true or false, got " + a.normalize);
}

// A calibration (its budget or its memory fit) holds only for the batches it
// assumed: no longer inputs, no more rows, on the same device, one forward at a
// time. An unset --max-input-tokens becomes the calibration's.
absl::Status FitCalibration(const backend::CalibrationFile& calib, const ServeArgs& a, SchedulerOptions& s) {
  const std::int64_t calibrated_input = calib.limits.max_input_tokens;
  const std::int64_t calibrated_rows = calib.limits.max_batch_size;
  if (s.max_input_tokens == 0) s.max_input_tokens = calibrated_input;
  if (s.max_input_tokens > calibrated_input) {
    return Bad(fmt::format(
        "--max-input-tokens {} is above the {} tokens --calibration {} was computed for: calibrate with "
        "--max-input-tokens {}",
        s.max_input_tokens, calibrated_input, a.calibration, s.max_input_tokens));
  }
  if (calibrated_rows > 0 && s.max_batch_size > calibrated_rows) {
    return Bad(fmt::format(
        "--max-batch-requests {} is above the max_batch_size {} --calibration {} was computed for: calibrate with "
        "--max-batch-size {}, or lower --max-batch-requests",
        s.max_batch_size, calibrated_rows, a.calibration, s.max_batch_size));
  }
  if (a.backend == "torch" && calib.device != a.device) {
    return Bad(fmt::format("--calibration {} was measured on {}, and this server runs on {}: calibrate on {}",
                           a.calibration, calib.device, a.device, a.device));
  }
  // A shared device budget (--device-memory) admits each batch by its own
  // bytes, so several workers are safe under it.
  if (a.workers > 1 && a.device_memory == 0) {
    return Bad(fmt::format(
        "--calibration {} budgets one forward at a time, and --workers {} runs {} at once: calibrate with "
        "--memory-limit divided by {}, and serve its budget with --max-batch-tokens and without --calibration",
        a.calibration, a.workers, a.workers, a.workers));
  }
  return absl::OkStatus();
}

// The calibration's recommended budget for `cost_model`; 0 when it has none.
std::int64_t RecommendedBudget(const backend::CalibrationFile& calib, const CostModel& cost_model) {
  if (!calib.recommendation) return 0;
  if (cost_model.name() == "sum") return calib.recommendation->sum_tokens;
  if (cost_model.name() == "padded") return calib.recommendation->padded_tokens;
  return calib.recommendation->memory_bytes;
}

// The scheduler options from the flags and, if given, the calibration: its
// memory fit for --cost-model memory, and its recommended budget for the
// chosen cost model unless --max-batch-tokens is set. `packed`: the backend
// runs batches without padding (a --model-id directory, --execution packed),
// which picks the defaults of --cost-model and --min-padding-efficiency.
absl::StatusOr<SchedulerOptions> SchedulerFromArgs(const ServeArgs& a, const std::optional<backend::CalibrationFile>& calib,
                                                   bool packed) {
  SchedulerOptions s;
  s.max_batch_size = a.max_batch_requests;
  const std::optional<Duration> max_wait = DurationFromFlag<std::milli>(a.max_wait_ms);
  if (!max_wait) return Bad(fmt::format("--max-wait-ms must be >= 0, got {}", a.max_wait_ms));
  s.max_wait = *max_wait;
  absl::StatusOr<BatchWindow> window = kBatchWindowNames.Parse(a.batch_window);
  if (!window.ok()) return Named("--batch-window", window.status());
  s.adaptive_wait = *window == BatchWindow::kAdaptive;
  absl::StatusOr<PackingPolicy> policy = ParsePackingPolicy(a.policy);
  if (!policy.ok()) return Named("--policy", policy.status());
  s.policy = *policy;
  absl::StatusOr<OversizePolicy> oversize = ParseOversizePolicy(a.oversize);
  if (!oversize.ok()) return Named("--oversize", oversize.status());
  s.oversize = *oversize;
  s.max_input_tokens = a.max_input_tokens;
  const std::optional<Duration> slack = DurationFromFlag<std::micro>(a.anchor_slack_us);
  if (!slack) return Bad(fmt::format("--anchor-slack-us must be >= 0, got {}", a.anchor_slack_us));
  s.anchor_slack_per_token = *slack;
  s.length_aware_min_padding_efficiency = packed && !a.min_padding_efficiency_given ? 0.0 : a.min_padding_efficiency;
  s.split_overlap_tokens = a.split_overlap_tokens;
  s.max_queue_size = a.max_queue_size;
  if (a.max_batch_tokens < 0) return Bad(fmt::format("--max-batch-tokens must be >= 0, got {}", a.max_batch_tokens));
  s.max_queued_tokens = a.max_queue_tokens;
  const std::string cost_model = !a.cost_model.empty() ? a.cost_model : packed ? "sum" : "padded";
  if (cost_model == "memory") {
    if (!calib) return Bad("--cost-model memory needs --calibration FILE (from `tokenbatch calibrate`)");
    absl::StatusOr<CostModel> memory = CostModel::Memory(calib->memory.c0, calib->memory.c1, calib->memory.c2);
    if (!memory.ok()) return Named("--calibration memory_model", memory.status());
    s.cost_model = *memory;
  } else {
    absl::StatusOr<CostModel> parsed = CostModel::Parse(cost_model);
    if (!parsed.ok()) return Named("--cost-model", parsed.status());
    s.cost_model = *parsed;
  }
  if (a.max_batch_tokens > 0) {
    s.max_batch_tokens = a.max_batch_tokens;
  } else if (calib) {
    const std::int64_t v = RecommendedBudget(*calib, s.cost_model);
    if (v <= 0) return Bad(fmt::format("--calibration has no recommended budget for cost model {}", s.cost_model.name()));
    s.max_batch_tokens = v;
  }
  if (calib) {
    if (absl::Status st = FitCalibration(*calib, a, s); !st.ok()) return st;
  }
  if (absl::Status st = Validate(s); !st.ok()) return Bad(std::string(st.message()));
  return s;
}

// The model directory's prompts, and the default prompt: --default-prompt's
// text, else --default-prompt-name's, else the model's default_prompt_name
// (applied by sentence-transformers' encode when no prompt is named).
absl::Status SetPrompts(const ServeArgs& a, const ServeFiles& files, server::ServiceOptions& so) {
  if (!a.default_prompt.empty() && !a.default_prompt_name.empty()) {
    return Bad("pass --default-prompt or --default-prompt-name, not both");
  }
  if (files.directory) so.prompts = files.directory->prompts;
  const std::string model_default = files.directory ? files.directory->default_prompt_name : std::string();
  const std::string& name = !a.default_prompt_name.empty() ? a.default_prompt_name : model_default;
  if (!a.default_prompt.empty()) {
    so.default_prompt = a.default_prompt;
  } else if (!name.empty()) {
    auto it = so.prompts.find(name);
    if (it == so.prompts.end()) {
      return Bad(fmt::format(
          "--default-prompt-name {}: the model has no such prompt (config_sentence_transformers.json)", name));
    }
    so.default_prompt = it->second;
  }
  return absl::OkStatus();
}

// The encoder and its options (EncoderChoice), from the flags.
absl::StatusOr<EncoderChoice> ChooseEncoder(const ServeArgs& a, const ServeFiles& files,
                                            const std::optional<bool>& normalize) {
  EncoderChoice e;
  if (a.quantize != hf::kQuantizationNames.Name(hf::Quantization::kNone) && (a.backend == "noop" || !a.model.empty())) {
    return Bad("--quantize applies to a --model-id directory (the hf backend)");
  }
  if (a.backend == "noop") {
    if (a.noop_hidden < 1) return Bad(fmt::format("--noop-hidden must be >= 1, got {}", a.noop_hidden));
    if (a.noop_fail_on_id < -1) {
      return Bad(fmt::format("--noop-fail-on-id must be a token id or -1, got {}", a.noop_fail_on_id));
    }
    if (a.noop_oom_above_tokens < 0) {
      return Bad(fmt::format("--noop-oom-above-tokens must be >= 0, got {}", a.noop_oom_above_tokens));
    }
    if (!a.pooling.empty() && a.pooling != "splade") {
      return Bad(fmt::format("--backend noop pools nothing: --pooling {} applies to a model", a.pooling));
    }
    const bool sparse = a.pooling == "splade";
    if (sparse && normalize.value_or(false)) return Bad("sparse (splade) embeddings are not normalised: --normalize");
    e.kind = EncoderChoice::Kind::kNoop;
    e.noop = {.hidden_size = a.noop_hidden,
              .delay = std::chrono::microseconds(a.noop_delay_us),
              .normalize = normalize.value_or(!sparse),
              .fail_on_id = a.noop_fail_on_id,
              .oom_above_tokens = a.noop_oom_above_tokens,
              .sparse = sparse};
    return e;
  }
  if (a.backend != "torch") return Bad("--backend must be torch or noop, got " + a.backend);
  if (!files.model_dir.empty()) {
    e.kind = EncoderChoice::Kind::kHfDirectory;
    e.hf = {.model_dir = files.model_dir, .device = a.device, .dtype = a.dtype, .normalize = normalize,
            .num_threads = a.threads};
    absl::StatusOr<hf::Execution> execution = hf::ParseExecution(a.execution);
    if (!execution.ok()) return Named("--execution", execution.status());
    e.hf.execution = *execution;
    absl::StatusOr<hf::AttentionImplementation> attention = hf::ParseAttentionImplementation(a.attention);
    if (!attention.ok()) return Named("--attn-implementation", attention.status());
    e.hf.attention = *attention;
    absl::StatusOr<hf::Quantization> quantize = hf::kQuantizationNames.Parse(a.quantize);
    if (!quantize.ok()) return Named("--quantize", quantize.status());
    e.hf.quantize = *quantize;
    if (!a.pooling.empty()) {
      absl::StatusOr<backend::Pooling> pooling = backend::ParsePooling(a.pooling);
      if (!pooling.ok()) return Named("--pooling", pooling.status());
      e.hf.pooling = *pooling;
    }
    return e;
  }
  e.kind = EncoderChoice::Kind::kTorchScript;
  e.torchscript = {.model_path = a.model, .device = a.device, .normalize = normalize.value_or(true),
                   .num_threads = a.threads};
  absl::StatusOr<backend::Pooling> pooling = backend::ParsePooling(a.pooling.empty() ? "mean" : a.pooling);
  if (!pooling.ok()) return Named("--pooling", pooling.status());
  e.torchscript.pooling = *pooling;
  e.torchscript.vocab_size = files.torchscript_vocab_size;
  e.torchscript.max_positions = files.torchscript_max_positions;
  return e;
}

// The HTTP server's options (everything but the service's).
absl::StatusOr<server::ServerOptions> ServerFromArgs(const ServeArgs& a, const ServeFiles& files,
                                                     ShutdownMode mode) {
  server::ServerOptions opts;
  opts.host = a.host;
  opts.port = a.port;
  opts.io_threads = a.io_threads;
  opts.api_key = a.api_key;
  if (!a.api_key_file.empty()) {
    if (!a.api_key.empty()) {
      return Bad("--api-key-file is given and a key is set too (--api-key, TOKENBATCH_API_KEY or API_KEY): keep one");
    }
    opts.api_key = files.api_key;
  }
  if (a.header_limit < 1024) return Bad(fmt::format("--header-limit must be >= 1024 bytes, got {}", a.header_limit));
  opts.header_limit = a.header_limit;
  opts.payload_limit = a.payload_limit;
  opts.max_client_batch_size = a.max_client_batch_size;
  opts.max_concurrent_requests = a.max_concurrent_requests;
  opts.read_timeout = std::chrono::milliseconds(a.read_timeout_ms);
  opts.drain = mode;
  if (a.shutdown_delay_ms < 0) return Bad(fmt::format("--shutdown-delay-ms must be >= 0, got {}", a.shutdown_delay_ms));
  if (!(a.lb_agent_backlog_ms > 0) || !std::isfinite(a.lb_agent_backlog_ms)) {
    return Bad(fmt::format("--lb-agent-backlog-ms must be a positive number of ms, got {}", a.lb_agent_backlog_ms));
  }
  if (a.lb_agent_port != 0) {
    if (a.lb_agent_port == a.port) return Bad("--lb-agent-port must differ from --port");
    opts.lb_agent_port = a.lb_agent_port;
  }
  opts.half_weight_backlog = std::chrono::microseconds(std::llround(std::min(a.lb_agent_backlog_ms, 1e9) * 1000));
  opts.cors_allow_origins = a.cors_allow_origins;
  return opts;
}

// The name /info, /v1/models and OpenAI responses report.
std::string ModelName(const ServeArgs& a, const ServeFiles& files) {
  if (!a.served_model_name.empty()) return a.served_model_name;
  if (a.backend == "noop") return "noop";
  if (files.directory) return files.directory->name;
  return std::filesystem::path(a.model).stem().string();
}

// --intra-op adaptive: one worker per core of --threads (default: the CPUs this
// process may use), each forward's threads chosen per batch. auto (the default)
// is adaptive where it applies: libtorch on the CPU, one worker asked for, more
// than one core (SplitPerModel makes it fixed for several models).
absl::Status SetIntraOp(const ServeArgs& a, const ServeFiles& files, ServeConfig& c) {
  if (a.intra_op == "auto") {
    const int cores = a.threads > 0 ? a.threads : files.cpu_cores;
    // A calibration without --device-memory budgets one forward at a time.
    const bool one_forward_budget = !a.calibration.empty() && a.device_memory == 0;
    const bool applies =
        a.backend == "torch" && a.device == "cpu" && a.workers == 1 && cores > 1 && !one_forward_budget;
    if (!applies) return absl::OkStatus();
  } else if (a.intra_op == "fixed") {
    return absl::OkStatus();
  } else if (a.intra_op != "adaptive") {
    return Bad(fmt::format("--intra-op must be auto, fixed or adaptive, got {}", a.intra_op));
  }
  if (a.backend != "torch" || a.device != "cpu") {
    return Bad("--intra-op adaptive shares a CPU's cores between libtorch forwards: it needs --backend torch and "
               "--device cpu");
  }
  if (a.threads < 0) return Bad(fmt::format("--threads must be >= 0, got {}", a.threads));
  const int cores = a.threads > 0 ? a.threads : files.cpu_cores;
  if (a.workers != 1 && a.workers != cores) {
    return Bad(fmt::format("--intra-op adaptive runs one worker per core ({}): drop --workers {}", cores, a.workers));
  }
  if (!a.calibration.empty() && a.device_memory == 0 && cores > 1) {
    return Bad(fmt::format(
        "--calibration {} budgets one forward at a time, and --intra-op adaptive runs up to {} at once: serve with "
        "--intra-op fixed, or share the memory with --device-memory",
        a.calibration, cores));
  }
  if (!(a.intra_op_narrow_hold_ms >= 0) || !std::isfinite(a.intra_op_narrow_hold_ms)) {
    return Bad(fmt::format("--intra-op-narrow-hold-ms must be >= 0, got {}", a.intra_op_narrow_hold_ms));
  }
  c.service.batcher.num_workers = cores;
  c.service.batcher.intra_op = IntraOpOptions{
      .cores = cores,
      .narrow_hold = std::chrono::microseconds(std::llround(std::min(a.intra_op_narrow_hold_ms, 1e9) * 1000))};
  // The batcher sets each forward's threads; an encoder count would override it.
  c.encoder.hf.num_threads = 0;
  c.encoder.torchscript.num_threads = 0;
  return absl::OkStatus();
}

}  // namespace

std::string ChooseModelDirectory(const ServeArgs& args, std::string_view bundled_dir) {
  if (args.backend != "torch" || !args.model.empty()) return "";
  return args.model_id.empty() ? std::string(bundled_dir) : args.model_id;
}

absl::StatusOr<ServeConfig> ResolveServeConfig(const ServeArgs& a, const ServeFiles& files) {
  ServeConfig c;
  absl::StatusOr<std::optional<bool>> normalize = NormalizeFlag(a);
  if (!normalize.ok()) return normalize.status();
  absl::StatusOr<EncoderChoice> encoder = ChooseEncoder(a, files, *normalize);
  if (!encoder.ok()) return encoder.status();
  c.encoder = *std::move(encoder);
  const bool packed = c.encoder.kind == EncoderChoice::Kind::kHfDirectory && c.encoder.hf.execution == hf::Execution::kPacked;
  absl::StatusOr<SchedulerOptions> scheduler = SchedulerFromArgs(a, files.calibration, packed);
  if (!scheduler.ok()) return scheduler.status();
  c.service.batcher.scheduler = *scheduler;
  // A budget nobody chose grows to hold one longest input; a chosen one that
  // cannot is refused at start (server::ShortBudget).
  const bool default_budget = a.max_batch_tokens == 0 && !files.calibration;
  c.service.short_budget = default_budget ? server::ShortBudget::kRaise : server::ShortBudget::kRefuse;
  c.budget_origin = a.max_batch_tokens > 0 ? "--max-batch-tokens"
                    : files.calibration    ? "--calibration " + a.calibration
                                           : "the default";
  if (files.calibration && a.backend == "torch") {
    if (!files.calibration->fingerprint) {
      return Bad(fmt::format("--calibration {} records no fingerprint of the model it measured (written by an older "
                             "`tokenbatch calibrate`, or by hand): calibrate this model again",
                             a.calibration));
    }
    c.calibrated_fingerprint = files.calibration->fingerprint;
    c.calibration_path = a.calibration;
  }
  c.threads = a.threads;
  c.service.batcher.num_workers = a.workers;
  if (absl::Status st = SetIntraOp(a, files, c); !st.ok()) return st;
  c.service.tokenizer_threads = a.tokenization_workers;
  if (a.auto_truncate && c.service.batcher.scheduler.oversize == OversizePolicy::kSplit) {
    if (a.auto_truncate_given) {
      return Bad(
          "--auto-truncate cuts long inputs before --oversize split could window them: pass one of the two "
          "(or --auto-truncate=false)");
    }
    c.service.auto_truncate = false;
  } else {
    c.service.auto_truncate = a.auto_truncate;
  }
  if (absl::Status st = SetPrompts(a, files, c.service); !st.ok()) return st;
  absl::StatusOr<tokenizer::PairTruncation> pair_truncation = tokenizer::kPairTruncationNames.Parse(a.pair_truncation);
  if (!pair_truncation.ok()) return Named("--pair-truncation", pair_truncation.status());
  c.service.pair_truncation = *pair_truncation;
  if (files.directory) {
    // The directory's tokenizer settings hold whichever tokenizer.json is
    // loaded: they are how the model's references preprocess its input.
    c.tokenizer_options = files.directory->tokenizer_options;
    if (files.directory->truncate_left) c.service.truncation_direction = server::TruncationDirection::kLeft;
    // transformers >= 5 (and so sentence-transformers) computes in the
    // checkpoint's dtype by default; tokenbatch in --dtype, as TEI does.
    const std::string& saved = files.directory->torch_dtype;
    if (c.encoder.kind == EncoderChoice::Kind::kHfDirectory && !saved.empty() && saved != c.encoder.hf.dtype) {
      c.warnings.push_back(fmt::format(
          "config.json says dtype {}, which sentence-transformers computes in; serving in --dtype {}", saved,
          c.encoder.hf.dtype));
    }
  }
  absl::StatusOr<ShutdownMode> mode = kShutdownModeNames.Parse(a.shutdown);
  if (!mode.ok()) return Named("--shutdown", mode.status());
  c.service.batcher.shutdown_on_destroy = *mode;

  if (a.backend != "noop" && !a.model_id.empty() && !a.model.empty()) {
    // MODEL_ID may come from a TEI deployment's environment: the explicit
    // TorchScript file wins, said aloud.
    c.warnings.push_back(fmt::format(
        "both --model {} and --model-id {} (or MODEL_ID) are set: serving the TorchScript --model", a.model,
        a.model_id));
  }
  c.model_path = c.encoder.kind == EncoderChoice::Kind::kHfDirectory ? files.model_dir
                 : c.encoder.kind == EncoderChoice::Kind::kTorchScript ? a.model
                                                                       : std::string();
  if (!a.tokenizer.empty()) {
    c.tokenizer = a.tokenizer;
  } else if (files.directory && !files.directory->tokenizer_path.empty()) {
    c.tokenizer = files.directory->tokenizer_path;
  } else if (files.directory) {
    return Bad(fmt::format("--model-id {} has no tokenizer.json; pass --tokenizer", files.model_dir));
  } else {
    c.tokenizer = files.bundled_tokenizer;
  }

  absl::StatusOr<server::ServerOptions> server = ServerFromArgs(a, files, *mode);
  if (!server.ok()) return server.status();
  c.server = *std::move(server);
  c.server.model_name = ModelName(a, files);
  c.shutdown_delay = std::chrono::milliseconds(a.shutdown_delay_ms);
  c.log_level = a.log_level;
  return c;
}

}  // namespace tokenbatch::cli
