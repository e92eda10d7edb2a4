// Running `tokenbatch serve` once its configuration is resolved: the process
// side (logging, signals, the open-files limit, the lifecycle of the service,
// the router and the HTTP server).
#pragma once

#include "cli/fail.h"
#include "cli/serve_config.h"
#include "cli/serve_models.h"

namespace tokenbatch::cli {

// The serve command's name and exit code for Fail.
inline constexpr Command kServeCommand{"serve", 2};

// Loads each model's tokenizer and encoder and starts its service (on the
// shared device memory, when the plan has one), starts the HTTP server, and
// serves until SIGINT or SIGTERM; then drains (the first model's
// ServeConfig::server.drain), after shutdown_delay if set, and exits the
// process with 0. A second signal while it drains, or one while a model still
// loads, ends the process at once. Blocks; never returns. Fails
// (kServeCommand, naming the model when there are several) when loading or
// listening fails.
[[noreturn]] void RunServe(const ServePlan& plan);

}  // namespace tokenbatch::cli
