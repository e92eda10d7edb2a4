// Flags shared by `tokenbatch simulate` and `tokenbatch bench`: the workload mix
// to generate (and LoadWorkload, which reads or generates it) and how to report
// the policy comparison. Each command's flags struct derives from both, so its
// code reads them as its own members.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <fmt/format.h>

#include "cli/duration_flag.h"
#include "cli/enum_flag.h"
#include "cli/fail.h"
#include "tokenbatch/core/scheduler_options.h"
#include "tokenbatch/sim/batch_former.h"
#include "tokenbatch/sim/report.h"
#include "tokenbatch/workload/admission.h"
#include "tokenbatch/workload/workload.h"

namespace tokenbatch::cli {

struct MixFlags {
  std::string workload;  // JSON Lines; empty: generate --mix
  std::string save_workload;  // write the workload (before admission) here; empty: no
  std::string mix = std::string(workload::MixKindName(workload::MixOptions{}.kind));
  std::size_t requests = workload::MixOptions{}.requests;  // the seed experiment's count
  double long_fraction = workload::MixOptions{}.long_fraction;
  std::uint32_t seed = workload::MixOptions{}.seed;
  // Admission (workload::Admit): longest request in tokens, 0 = the model's
  // max_positions; what happens to longer ones.
  std::int64_t max_input_tokens = 0;
  std::string oversize = "truncate";
};

struct ReportFlags {
  std::vector<std::string> policies;  // empty: all
  // ours-length-aware's SchedulerOptions::anchor_slack_per_token in µs per token;
  // < 0: the option's default.
  double anchor_slack_us = -1;
  // ours-length-aware's SchedulerOptions::length_aware_min_padding_efficiency;
  // < 0: the option's default.
  double min_padding_efficiency = -1;
  bool json = false;
  std::string plots;  // folder for PNGs; empty: none
  std::string save_batches;  // JSON Lines file of every batch (sim::BatchesJsonl); empty: none
  bool progress = true;
};

// A workload to run: its requests and a description of where they came from.
struct LoadedWorkload {
  std::vector<workload::WorkloadRequest> requests;
  std::string source;  // the --workload file, or "mix <kind> (seed <n>)"
};

// The --workload file of `flags` if set, else its generated --mix, each text
// counted with `count` (arrival times as the file gives them, or all 0). Fails
// `command` naming the cause.
inline LoadedWorkload LoadWorkload(const Command& command, const MixFlags& flags,
                                   const workload::TokenCounter& count) {
  if (!flags.workload.empty()) {
    return {OrFail(command, workload::LoadJsonl(flags.workload, count), "--workload " + flags.workload),
            flags.workload};
  }
  const workload::MixKind kind = OrFail(command, workload::ParseMixKind(flags.mix), "--mix");
  const workload::MixOptions mix{
      .kind = kind, .requests = flags.requests, .long_fraction = flags.long_fraction, .seed = flags.seed};
  return {OrFail(command, workload::GenerateMix(mix, count), "generating the mix"),
          fmt::format("mix {} (seed {})", workload::MixKindName(kind), flags.seed)};
}

// The workload after admission: the requests to run (rejected ones removed,
// truncated ones at the limit) and a phrase for the report's workload line.
struct AdmittedLoad {
  std::vector<workload::WorkloadRequest> requests;
  std::size_t rejected = 0;
  std::string note;  // e.g. ", 27 truncated to 512 tokens"; empty when nothing changed
};

// Applies the admission of --max-input-tokens (`model_max_positions` when
// unset; 0 = unknown) and --oversize, and saves `loaded` (before admission) to
// --save-workload if set. Fails `command` naming the cause: a bad flag, a limit
// above the model's positions, no limit known, every request rejected.
inline AdmittedLoad SaveAndAdmit(const Command& command, const MixFlags& flags, const LoadedWorkload& loaded,
                                 std::int64_t model_max_positions) {
  if (flags.max_input_tokens < 0) {
    Fail(command, fmt::format("--max-input-tokens must be >= 1, got {}", flags.max_input_tokens));
  }
  if (model_max_positions > 0 && flags.max_input_tokens > model_max_positions) {
    Fail(command, fmt::format("--max-input-tokens {} is above the model's {} positions", flags.max_input_tokens,
                              model_max_positions));
  }
  const std::int64_t limit = flags.max_input_tokens > 0 ? flags.max_input_tokens : model_max_positions;
  if (limit <= 0) Fail(command, "the model's positions are unknown: pass --max-input-tokens");
  const OversizePolicy oversize = OrFail(command, ParseOversizePolicy(flags.oversize), "--oversize");
  const workload::AdmittedWorkload admitted =
      OrFail(command, workload::Admit(loaded.requests, {.max_input_tokens = limit, .oversize = oversize}), "admission");
  if (!flags.save_workload.empty()) {
    if (absl::Status s = workload::SaveJsonl(flags.save_workload, loaded.requests); !s.ok()) {
      Fail(command, s.ToString());
    }
  }
  AdmittedLoad out;
  out.requests = workload::AdmittedRequests(loaded.requests, admitted);
  out.rejected = admitted.rejected;
  if (admitted.truncated > 0) out.note += fmt::format(", {} truncated to {} tokens", admitted.truncated, limit);
  if (admitted.rejected > 0)
    out.note += fmt::format(", {} rejected as longer than {} tokens", admitted.rejected, limit);
  if (out.requests.empty()) Fail(command, "every request of the workload was rejected" + out.note);
  return out;
}

// --mix, --requests, --long-fraction, --seed (the workload generator),
// --save-workload, --max-input-tokens and --oversize (its admission).
inline void AddMixFlags(CLI::App* cmd, MixFlags& f) {
  cmd->add_option("--mix", f.mix, "generated mix")->check(NamesValidator(workload::kMixKindNames));
  cmd->add_option("--requests", f.requests, "requests in the generated mix (the seed has 5,000)");
  cmd->add_option("--long-fraction", f.long_fraction, "seed mix: share of long passages");
  cmd->add_option("--seed", f.seed, "seed of the mix (and of Poisson arrivals)");
  cmd->add_option("--save-workload", f.save_workload,
                  "write the workload (texts, token counts, arrivals, before admission) as JSON Lines");
  cmd->add_option("--max-input-tokens,--max-positions", f.max_input_tokens,
                  "longest request in tokens (default: the model's max_positions)");
  cmd->add_option("--oversize", f.oversize, "longer requests: truncate or reject")->capture_default_str();
}

// --policies, --json, --plots, --no-progress (the comparison's output).
inline void AddReportFlags(CLI::App* cmd, ReportFlags& f) {
  cmd->add_option("--policies", f.policies, "subset of policies to run")->delimiter(',');
  cmd->add_option("--anchor-slack-us", f.anchor_slack_us,
                  "ours-length-aware: anchor = earliest arrival + this × tokens (µs per token; 0 = oldest first)");
  cmd->add_option("--min-padding-efficiency", f.min_padding_efficiency,
                  "ours-length-aware: never add a request that brings a batch's padding efficiency below this");
  cmd->add_flag("--json", f.json, "print a JSON array (one object per policy) instead of the table");
  cmd->add_option("--plots", f.plots, "write latency CDF and batch-cost histogram PNGs (gnuplot) here");
  cmd->add_option("--save-batches", f.save_batches,
                  "write every batch (policy, size, max_tokens, sum_tokens, cost, latency_us, peak_bytes, oom) as JSON "
                  "Lines");
  cmd->add_flag("!--no-progress", f.progress, "no progress bar on stderr");
}

// Writes --save-batches (every batch of `results`, sim::BatchesJsonl) if set.
// Fails `command` naming the file when it cannot be written.
inline void SaveBatches(const Command& command, const ReportFlags& f, const std::vector<sim::PolicyResult>& results) {
  if (f.save_batches.empty()) return;
  std::ofstream out(f.save_batches, std::ios::binary | std::ios::trunc);
  out << sim::BatchesJsonl(results);
  out.close();
  if (!out) Fail(command, fmt::format("--save-batches: cannot write {}", f.save_batches));
}

// The seed experiment's policies (sim::SeedExperimentPolicies) named by
// --policies (all when empty), with --anchor-slack-us applied. Empty when
// --policies names none of them.
inline std::vector<sim::PolicySpec> SelectPolicies(std::int64_t budget, const CostModel& matching,
                                                   const ReportFlags& f) {
  std::vector<sim::PolicySpec> out;
  for (sim::PolicySpec& p : sim::SeedExperimentPolicies(budget, matching)) {
    if (!f.policies.empty() && std::find(f.policies.begin(), f.policies.end(), p.name) == f.policies.end()) continue;
    if (f.anchor_slack_us >= 0 && p.kind == sim::FormerKind::kCore &&
        p.core.policy == PackingPolicy::kLengthAware) {
      // A huge slack saturates (oldest-first order, as the scheduler's own
      // saturation gives); anchor_slack_us >= 0 here, so there is a value.
      p.core.anchor_slack_per_token = *DurationFromFlag<std::micro>(f.anchor_slack_us);
    }
    if (f.min_padding_efficiency >= 0 && p.kind == sim::FormerKind::kCore &&
        p.core.policy == PackingPolicy::kLengthAware) {
      p.core.length_aware_min_padding_efficiency = f.min_padding_efficiency;
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace tokenbatch::cli
