// The serve process: signals, limits and the lifecycle (see serve_run.h).
#include "cli/serve_run.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "api/router.h"
#include "tokenbatch/http/http_server.h"
#include "tokenbatch/runtime/shared_device_memory.h"
#include "tokenbatch/service/embedding_service.h"

namespace tokenbatch::cli {
namespace {

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

// The stop signal's pipe: written by OnStopSignal, read by RunServe.
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

// Tells RunServe (through the pipe) and puts both signals back to their
// default, here rather than in RunServe, so that a second one stops the
// process at once even if it comes before RunServe has read the first.
extern "C" void OnStopSignal(int sig) {
  SetStopHandler(SIG_DFL);
  const unsigned char byte = static_cast<unsigned char>(sig);
  [[maybe_unused]] const ssize_t written = write(g_stop_pipe[1], &byte, 1);
}

// Blocks until the handler writes a signal number; returns it.
int WaitForStopSignal() {
  unsigned char received = 0;
  while (read(g_stop_pipe[0], &received, 1) != 1) {
    // EINTR only (the handler itself may interrupt this read): wait again.
  }
  return received;
}

}  // namespace

namespace {

// Loads model `m` of `plan` and starts its service, on `device` when the models
// share one. Fails naming the model when there are several.
std::unique_ptr<server::EmbeddingService> StartModel(const ServePlan& plan, std::size_t m,
                                                     const std::shared_ptr<SharedDeviceMemory>& device) {
  const ServeConfig& config = plan.models[m];
  const std::string which =
      plan.models.size() > 1 ? fmt::format("model \"{}\": ", config.server.model_name) : std::string();
  auto tok = OrFail(kServeCommand, tokenizer::Tokenizer::FromFile(config.tokenizer, config.tokenizer_options),
                    which + "loading tokenizer " + config.tokenizer);
  absl::StatusOr<std::unique_ptr<backend::Encoder>> loaded = LoadServeEncoder(config, *tok);
  if (!loaded.ok()) Fail(kServeCommand, which + std::string(loaded.status().message()));
  std::unique_ptr<backend::Encoder> encoder = *std::move(loaded);
  const backend::EncoderInfo info = encoder->info();
  if (info.classifier) {
    spdlog::info(
        "{}backend {}: a cross-encoder with {} label(s) ({}), served on /predict (and /rerank, /v1/rerank, /v2/rerank "
        "for one label); tokenizer {}",
        which, info.name, info.classifier->labels.size(), fmt::join(info.classifier->labels, ", "), config.tokenizer);
  } else if (info.sparse) {
    spdlog::info("{}backend {}: sparse (splade) embeddings over {} vocabulary ids, served on /embed_sparse; tokenizer {}",
                 which, info.name, info.vocab_size, config.tokenizer);
  } else {
    spdlog::info("{}backend {} (hidden {}), tokenizer {}", which, info.name, encoder->hidden_size(), config.tokenizer);
  }
  if (const std::optional<backend::QuantizationQuality>& q = info.quantization_quality) {
    spdlog::info("{}{} linear layers: on {} probe inputs, outputs within cosine {:.6f} (max |diff| {:.3g}) of float32",
                 which, info.quantization, q->probe_inputs, q->min_cosine, q->max_abs_diff);
  }
  if (!info.attention.empty()) {
    spdlog::info("{}attention kernel {} ({}, {})", which, info.attention, info.dtype, config.encoder.hf.device);
  }
  server::ServiceOptions options = config.service;
  if (options.batcher.intra_op) {
#ifdef TOKENBATCH_HAVE_BACKEND
    options.batcher.set_forward_threads = backend::SetForwardThreads;
#endif
    spdlog::info("{}intra-op adaptive: {} workers; a forward runs on {} threads alone, on 1 under load", which,
                 options.batcher.num_workers, options.batcher.intra_op->cores);
  }
  if (device) {
    options.batcher.device_memory =
        DeviceMemoryShare{.device = device, .model = m, .memory_model = plan.memory_models[m]};
  }
  if (config.calibrated_fingerprint) {
    const absl::Status fits = backend::CheckFingerprint(
        *config.calibrated_fingerprint, backend::FingerprintOf(info, encoder->hidden_size(), config.threads),
        "--calibration " + config.calibration_path);
    if (!fits.ok()) {
      Fail(kServeCommand, which + std::string(fits.message()) + ": calibrate the model served with the same flags");
    }
  }
  const std::int64_t budget_asked = options.batcher.scheduler.max_batch_tokens;
  auto service = OrFail(kServeCommand, server::EmbeddingService::Create(options, std::move(tok), std::move(encoder)),
                        which + "service (max_batch_tokens from " + config.budget_origin + ")");
  const SchedulerOptions& s = service->options().batcher.scheduler;
  if (s.max_batch_tokens != budget_asked) {
    spdlog::info("{}max_batch_tokens raised from the default {} to {} {}, the cost of one input of the input limit "
                 "of {} tokens (--max-batch-tokens sets it)",
                 which, budget_asked, s.max_batch_tokens, s.cost_model.unit(), s.max_input_tokens);
  }
  // Both layers' settings for over-long inputs: the API truncates them first
  // (auto_truncate, or a request's own `truncate`); `oversize` applies to what
  // is still longer than max_input_tokens after that.
  spdlog::info(
      "{}max_batch_tokens {} ({}), max_batch_requests {}, policy {}, max_input_tokens {}, auto_truncate {}, "
      "oversize {} (for inputs not truncated)",
      which, s.max_batch_tokens, s.cost_model.name(), s.max_batch_size, PackingPolicyName(s.policy),
      service->max_input_tokens(), service->options().auto_truncate, OversizePolicyName(s.oversize));
  return service;
}

}  // namespace

void RunServe(const ServePlan& plan) {
  const ServeConfig& config = plan.models.front();
  // Logs (and fatal errors) go to stderr, as TEI's and the other subcommands' do.
  spdlog::set_default_logger(spdlog::stderr_color_mt("tokenbatch"));
  spdlog::set_level(spdlog::level::from_str(config.log_level));
  for (const ServeConfig& model : plan.models) {
    for (const std::string& warning : model.warnings) {
      if (plan.models.size() > 1) {
        spdlog::warn("model \"{}\": {}", model.server.model_name, warning);
      } else {
        spdlog::warn("{}", warning);
      }
    }
  }
  std::shared_ptr<SharedDeviceMemory> device;
  if (plan.device_memory) {
    device = OrFail(kServeCommand, SharedDeviceMemory::Create(*plan.device_memory), "--device-memory");
    std::vector<std::string> shares;
    for (const ModelMemoryShare& share : plan.device_memory->models) {
      shares.push_back(fmt::format("{} (weight {}, guaranteed {} bytes, longest input {} bytes)", share.name,
                                   share.weight, share.guaranteed_bytes, share.largest_batch_bytes));
    }
    spdlog::info("device memory: {} bytes for the batches of {}", plan.device_memory->limit_bytes,
                 fmt::join(shares, ", "));
  }
  std::vector<std::unique_ptr<server::EmbeddingService>> services;
  std::vector<server::ServedModel> served;
  for (std::size_t m = 0; m < plan.models.size(); ++m) {
    services.push_back(StartModel(plan, m, device));
    served.push_back({plan.models[m].server.model_name, services.back().get()});
  }

  // SIGINT/SIGTERM: from here on (loading is over, so a signal before this
  // point ends the process at once, with nothing to drain), a handler writes the
  // signal number to a pipe that this thread reads (write is async-signal-safe).
  // Not pthread_sigmask + sigwait: threads started before this point (OpenBLAS's,
  // at library load) do not inherit the mask, and a signal the kernel hands to
  // one of them would take the default action and kill the server undrained.
  if (pipe2(g_stop_pipe, O_CLOEXEC) != 0) Fail(kServeCommand, "cannot create the signal pipe");
  const rlim_t open_files = RaiseOpenFilesLimit();
  SetStopHandler(OnStopSignal);

  auto router = std::make_unique<server::Router>(config.server, std::move(served));
  auto http = OrFail(kServeCommand, server::HttpServer::Start(router.get()), "starting the server");
  const server::ServerOptions& opts = config.server;
  spdlog::info(
      "client limits: read timeout {} ms (a whole request, or idle keep-alive), header limit {} bytes, "
      "payload limit {} bytes, {} concurrent requests, open files {}",
      opts.read_timeout.count(), opts.header_limit, opts.payload_limit, opts.max_concurrent_requests,
      static_cast<unsigned long long>(open_files));

  const int sig = WaitForStopSignal();
  // A second signal while draining ends the process at once (OnStopSignal reset
  // the handlers), as users expect of a second Ctrl-C.
  spdlog::info("received {}; stopping (again to stop at once)", sig == SIGTERM ? "SIGTERM" : "SIGINT");
  if (config.shutdown_delay.count() > 0) {
    // Balancers and readiness probes see /health 503 (and the agent's drain)
    // and stop sending before the listener closes; what they still send is served.
    http->BeginDrain();
    spdlog::info("closing the listener in {} ms (--shutdown-delay-ms)", config.shutdown_delay.count());
    std::this_thread::sleep_for(config.shutdown_delay);
  }
  http->Stop();
  http.reset();
  router.reset();
  services.clear();
  std::exit(0);
}

}  // namespace tokenbatch::cli
