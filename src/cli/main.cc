// The `tokenbatch` command: one binary, one subcommand per job.
#include <CLI/CLI.hpp>

#include "cli/commands.h"
#ifdef TOKENBATCH_HAVE_BACKEND
#include <cstdio>

#include "backend/blas_core.h"
#include "backend/blas_spin_wait.h"
#endif

int main(int argc, char** argv) {
#ifdef TOKENBATCH_HAVE_BACKEND
  {
    namespace backend = tokenbatch::backend;
    // Before this program starts a thread of its own (both set an environment
    // variable). OpenBLAS's thread pool restarts once: when UseBestBlasCore has
    // OpenBLAS choose its core again (the shorter spin-wait applies from that
    // start), or else for the shorter spin-wait alone.
    const backend::BlasSpinWait spin_wait = backend::SetShortBlasSpinWait();
    const backend::BlasCore core = backend::UseBestBlasCore();
    if (core.choice == backend::BlasCoreChoice::kSwitched) {
      // On stderr: stdout may carry a command's JSON.
      std::fprintf(stderr,
                   "tokenbatch: OpenBLAS does not know this CPU and chose its %s kernels; running its %s kernels "
                   "instead (OPENBLAS_CORETYPE chooses others)\n",
                   core.before.c_str(), core.after.c_str());
    }
    if (spin_wait == backend::BlasSpinWait::kShortened && !core.reselected) backend::RestartBlasThreadPool();
  }
#endif
  CLI::App app{"tokenbatch: token-budget micro-batching for embedding and prefill inference"};
  app.require_subcommand(1);
#ifdef TOKENBATCH_HAVE_SERVER
  tokenbatch::cli::AddServeCommand(app);
#endif
#ifdef TOKENBATCH_HAVE_TOKENIZER
  tokenbatch::cli::AddDemoCommand(app);
  tokenbatch::cli::AddTokenizeCommand(app);
#endif
#ifdef TOKENBATCH_HAVE_SIM
  tokenbatch::cli::AddSimulateCommand(app);
#endif
#ifdef TOKENBATCH_HAVE_BENCH
  tokenbatch::cli::AddBenchCommand(app);
#endif
#ifdef TOKENBATCH_HAVE_BACKEND
  tokenbatch::cli::AddCalibrateCommand(app);
#endif
  CLI11_PARSE(app, argc, argv);
  return 0;
}
