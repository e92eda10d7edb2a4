// Running `tokenbatch serve` once its configuration is resolved: the process
// side (logging, signals, the open-files limit, the lifecycle of the service,
// the router and the HTTP server).
#pragma once

#include "cli/fail.h"
#include "cli/serve_config.h"

namespace tokenbatch::cli {

// The serve command's name and exit code for Fail.
inline constexpr Command kServeCommand{"serve", 2};

// Loads the tokenizer and the encoder, starts the service and the HTTP server,
// and serves until SIGINT or SIGTERM; then drains (ServeConfig::server.drain),
// after shutdown_delay if set, and exits the process with 0. A second signal
// while it drains, or one while the model still loads, ends the process at
// once. Blocks; never returns. Fails (kServeCommand) when loading or
// listening fails.
[[noreturn]] void RunServe(const ServeConfig& config);

}  // namespace tokenbatch::cli
