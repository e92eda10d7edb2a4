// Flags shared by `tokenbatch simulate` and `tokenbatch bench`: the workload mix
// to generate and how to report the policy comparison. Each command's flags
// struct derives from both, so its code reads them as its own members.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace tokenbatch::cli {

struct MixFlags {
  std::string workload;  // JSON Lines; empty: generate --mix
  std::string mix = "seed";
  std::size_t requests = 5000;  // the seed experiment's count
  double long_fraction = 0.5;
  std::uint32_t seed = 1;
};

struct ReportFlags {
  std::vector<std::string> policies;  // empty: all
  bool json = false;
  std::string plots;  // folder for PNGs; empty: none
  bool progress = true;
};

// --mix, --requests, --long-fraction, --seed (the workload generator).
inline void AddMixFlags(CLI::App* cmd, MixFlags& f) {
  cmd->add_option("--mix", f.mix, "generated mix: seed, all_short, all_long, long_tailed");
  cmd->add_option("--requests", f.requests, "requests in the generated mix (the seed has 5,000)");
  cmd->add_option("--long-fraction", f.long_fraction, "seed mix: share of long passages");
  cmd->add_option("--seed", f.seed, "seed of the mix (and of Poisson arrivals)");
}

// --policies, --json, --plots, --no-progress (the comparison's output).
inline void AddReportFlags(CLI::App* cmd, ReportFlags& f) {
  cmd->add_option("--policies", f.policies, "subset of policies to run")->delimiter(',');
  cmd->add_flag("--json", f.json, "print a JSON array (one object per policy) instead of the table");
  cmd->add_option("--plots", f.plots, "write latency CDF and batch-cost histogram PNGs (gnuplot) here");
  cmd->add_flag("!--no-progress", f.progress, "no progress bar on stderr");
}

}  // namespace tokenbatch::cli
