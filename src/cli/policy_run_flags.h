// Flags shared by `tokenbatch simulate` and `tokenbatch bench`: which workload
// mix to generate, and how to report the policy comparison. Templates over the
// command's own flags struct, which must have the members named below.
#pragma once

#include <CLI/CLI.hpp>

namespace tokenbatch::cli {

// --mix, --requests, --long-fraction, --seed (the workload generator).
template <typename Flags>
void AddMixFlags(CLI::App* cmd, Flags& f) {
  cmd->add_option("--mix", f.mix, "generated mix: seed, all_short, all_long, long_tailed");
  cmd->add_option("--requests", f.requests, "requests in the generated mix (the seed has 5,000)");
  cmd->add_option("--long-fraction", f.long_fraction, "seed mix: share of long passages");
  cmd->add_option("--seed", f.seed, "seed of the mix (and of Poisson arrivals)");
}

// --policies, --json, --plots, --no-progress (the comparison's output).
template <typename Flags>
void AddReportFlags(CLI::App* cmd, Flags& f) {
  cmd->add_option("--policies", f.policies, "subset of policies to run")->delimiter(',');
  cmd->add_flag("--json", f.json, "print a JSON array (one object per policy) instead of the table");
  cmd->add_option("--plots", f.plots, "write latency CDF and batch-cost histogram PNGs (gnuplot) here");
  cmd->add_flag("!--no-progress", f.progress, "no progress bar on stderr");
}

}  // namespace tokenbatch::cli
