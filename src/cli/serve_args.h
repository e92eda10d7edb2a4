// ServeArgs: `tokenbatch serve`'s flags as given for one model (cmd_serve.cc
// registers them, SplitPerModel in serve_models.h gives each model its own
// values of the per-model flags, ResolveServeConfig in serve_config.h turns
// them into options). Every
// default is read from the options struct the flag sets, so the two never
// disagree; only serve's own choices (TEI's auto-truncate, the torch backend,
// the log level) are written here. Plain value type.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tokenbatch/api/server_options.h"
#include "tokenbatch/backend/encoder.h"
#include "tokenbatch/backend/noop_encoder.h"
#include "tokenbatch/core/device_memory_budget.h"
#include "tokenbatch/core/scheduler_options.h"
#include "tokenbatch/hf/hf_encoder.h"
#include "tokenbatch/runtime/batcher_options.h"
#include "tokenbatch/service/embedding_service.h"

namespace tokenbatch::cli {

struct ServeArgs {
  // Hugging Face model directory ("" = the bundled default unless --model).
  std::string model_id;
  std::string model;      // TorchScript file (the torch backend's older format)
  std::string tokenizer;  // "" = the model directory's tokenizer.json, else the bundled Qwen3 one
  std::string served_model_name;
  std::string backend = "torch";  // torch | noop
  std::string pooling;    // "" = the model directory's Pooling module (mean for --model)
  std::string normalize;  // "" = the model directory's Normalize module (true for --model)
  std::string dtype = hf::HfEncoderOptions{}.dtype;
  std::string quantize = std::string(hf::kQuantizationNames.Name(hf::HfEncoderOptions{}.quantize));
  std::string execution = std::string(hf::kExecutionNames.Name(hf::HfEncoderOptions{}.execution));
  std::string attention = std::string(hf::kAttentionImplementationNames.Name(hf::HfEncoderOptions{}.attention));
  std::string default_prompt_name;  // "" = the model's default_prompt_name
  std::string default_prompt;       // prompt text; excludes default_prompt_name
  std::string device = backend::EncoderOptions{}.device;
  int threads = backend::EncoderOptions{}.num_threads;
  // 0: the calibration's recommendation, else SchedulerOptions' default.
  std::int64_t max_batch_tokens = 0;
  std::int64_t max_batch_requests = SchedulerOptions{}.max_batch_size;
  double max_wait_ms = std::chrono::duration<double, std::milli>(SchedulerOptions{}.max_wait).count();
  std::string batch_window =
      std::string(kBatchWindowNames.Name(SchedulerOptions{}.adaptive_wait ? BatchWindow::kAdaptive : BatchWindow::kFixed));
  // "" = what the execution layout pays: sum for a --model-id directory run
  // packed (no padding is computed), padded (B x Lmax) otherwise.
  std::string cost_model;
  std::string policy = std::string(PackingPolicyName(SchedulerOptions{}.policy));
  std::int64_t max_input_tokens = SchedulerOptions{}.max_input_tokens;
  std::string oversize = std::string(OversizePolicyName(SchedulerOptions{}.oversize));
  double anchor_slack_us =
      std::chrono::duration<double, std::micro>(SchedulerOptions{}.anchor_slack_per_token).count();
  // Applies where padding is computed; a packed --model-id directory gets no
  // floor unless the flag is given (padding costs it nothing, and the floor
  // would split a mixed queue into small batches).
  double min_padding_efficiency = SchedulerOptions{}.length_aware_min_padding_efficiency;
  bool min_padding_efficiency_given = false;
  std::int64_t split_overlap_tokens = SchedulerOptions{}.split_overlap_tokens;
  std::size_t max_queue_size = SchedulerOptions{}.max_queue_size;
  std::int64_t max_queue_tokens = SchedulerOptions{}.max_queued_tokens;
  // TEI's default: inputs longer than max_input_tokens are cut unless a request
  // says `"truncate": false`. Not given and --oversize split: false, so that
  // long inputs reach the scheduler whole and are split into windows.
  bool auto_truncate = true;
  bool auto_truncate_given = false;
  std::string pair_truncation =
      std::string(tokenizer::kPairTruncationNames.Name(server::ServiceOptions{}.pair_truncation));
  std::vector<std::string> cors_allow_origins;
  std::size_t max_concurrent_requests = server::ServerOptions{}.max_concurrent_requests;
  std::size_t max_client_batch_size = server::ServerOptions{}.max_client_batch_size;
  int workers = BatcherOptions{}.num_workers;
  // fixed: --workers forwards of --threads threads each; adaptive: one worker
  // per core, each forward on every core alone and on one under load
  // (BatcherOptions::intra_op); auto: adaptive for one model on libtorch's CPU
  // with one --workers, fixed otherwise.
  std::string intra_op = "auto";
  double intra_op_narrow_hold_ms =
      std::chrono::duration<double, std::milli>(IntraOpOptions{}.narrow_hold).count();
  int io_threads = server::ServerOptions{}.io_threads;
  int tokenization_workers = server::ServiceOptions{}.tokenizer_threads;
  std::string host = server::ServerOptions{}.host;
  std::uint16_t port = server::ServerOptions{}.port;
  std::string api_key;
  std::string api_key_file;
  std::size_t payload_limit = server::ServerOptions{}.payload_limit;
  int read_timeout_ms = static_cast<int>(server::ServerOptions{}.read_timeout.count());
  std::uint32_t header_limit = server::ServerOptions{}.header_limit;
  std::string shutdown = std::string(kShutdownModeNames.Name(BatcherOptions{}.shutdown_on_destroy));
  int shutdown_delay_ms = 0;        // ms of serving while draining before the listener closes
  std::uint16_t lb_agent_port = 0;  // 0 = no agent listener
  double lb_agent_backlog_ms =
      std::chrono::duration<double, std::milli>(server::ServerOptions{}.half_weight_backlog).count();
  std::string calibration;  // a `tokenbatch calibrate` JSON file; "" = none
  // Bytes every model's batches in flight may hold together (serve_models.h); 0 = no shared budget.
  std::uint64_t device_memory = 0;
  // This model's share of --device-memory (ModelMemoryShare).
  double device_memory_weight = ModelMemoryShare{}.weight;
  std::uint64_t device_memory_guaranteed = 0;
  int noop_hidden = backend::NoopEncoderOptions{}.hidden_size;
  int noop_delay_us = static_cast<int>(backend::NoopEncoderOptions{}.delay.count());
  std::int32_t noop_fail_on_id = backend::NoopEncoderOptions{}.fail_on_id;
  std::int64_t noop_oom_above_tokens = backend::NoopEncoderOptions{}.oom_above_tokens;
  std::string log_level = "info";
};

}  // namespace tokenbatch::cli
