// Subcommands of the `tokenbatch` program. Each Add*Command registers one
// subcommand (its flags and its callback) on the CLI11 app; the callback runs when
// that subcommand is chosen. Components that are not built (for example the
// libtorch backend with -DTOKENBATCH_WITH_TORCH=OFF) do not register theirs.
#pragma once

namespace CLI {
class App;
}

namespace tokenbatch::cli {

void AddDemoCommand(CLI::App& app);       // cmd_demo.cc: scheduler demo on real text
void AddTokenizeCommand(CLI::App& app);   // cmd_tokenize.cc: JSON Lines -> ids
void AddCalibrateCommand(CLI::App& app);  // cmd_calibrate.cc: size a budget for a device
void AddSimulateCommand(CLI::App& app);   // cmd_simulate.cc: policies on a simulated GPU
void AddBenchCommand(CLI::App& app);      // cmd_bench.cc: policies on the real backend
void AddServeCommand(CLI::App& app);      // cmd_serve.cc: the HTTP embedding server

}  // namespace tokenbatch::cli
