#include "tokenbatch/sim/report.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"

namespace tokenbatch::sim {
namespace {

double Round3(double x) { return std::round(x * 1000.0) / 1000.0; }

nlohmann::json LatencyJson(const LatencySummary& s) {
  return {{"p50", Round3(s.p50)}, {"p95", Round3(s.p95)}, {"p99", Round3(s.p99)}, {"count", s.count}};
}

absl::Status WriteFile(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) return absl::NotFoundError(absl::StrCat("cannot write ", path.string()));
  return absl::OkStatus();
}

// gnuplot string literal: double quotes, with " and \ escaped.
std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "\"";
}

}  // namespace

std::string MarkdownTable(const std::vector<PolicyResult>& results) {
  std::string out =
      "| policy | req/s | tokens/s | short p50/p95/p99 ms | long p50/p95/p99 ms | padding eff | mean batch | "
      "mean fill | over budget | OOM | lost | rejected | peak GiB |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const PolicyResult& r : results) {
    const auto& s = r.latency_short;
    const auto& l = r.latency_long;
    out += fmt::format(
        "| {} | {:.1f} | {:.0f} | {:.1f} / {:.1f} / {:.1f} | {:.1f} / {:.1f} / {:.1f} | {:.3f} | {:.1f} | {:.3f} | "
        "{}/{} | {} | {} | {} | {:.2f} |\n",
        r.policy, r.requests_per_s, r.tokens_per_s, s.p50, s.p95, s.p99, l.p50, l.p95, l.p99, r.padding_efficiency,
        r.mean_batch_size, r.mean_fill, r.batches_over_budget, r.batches, r.oom_events, r.requests_lost,
        r.requests_rejected, static_cast<double>(r.peak_memory_bytes) / (1024.0 * 1024.0 * 1024.0));
  }
  return out;
}

std::string ShortAloneTable(const std::vector<PolicyResult>& results) {
  std::string out;
  for (const PolicyResult& r : results) {
    if (!r.latency_short_alone) continue;
    if (out.empty()) {
      out = "| policy | short p50/p95/p99 ms, mixed | short p50/p95/p99 ms, alone | p99 mixed / alone |\n"
            "|---|---:|---:|---:|\n";
    }
    const auto& m = r.latency_short;
    const auto& a = *r.latency_short_alone;
    out += fmt::format("| {} | {:.1f} / {:.1f} / {:.1f} | {:.1f} / {:.1f} / {:.1f} | {} |\n", r.policy, m.p50, m.p95,
                       m.p99, a.p50, a.p95, a.p99, a.p99 > 0 ? fmt::format("{:.2f}", m.p99 / a.p99) : "-");
  }
  return out;
}

std::string ResultsJson(const std::vector<PolicyResult>& results) {
  nlohmann::json array = nlohmann::json::array();
  for (const PolicyResult& r : results) {
    array.push_back({{"policy", r.policy},
                     {"requests_per_s", Round3(r.requests_per_s)},
                     {"tokens_per_s", Round3(r.tokens_per_s)},
                     {"latency_ms", {{"short", LatencyJson(r.latency_short)}, {"long", LatencyJson(r.latency_long)}}},
                     {"padding_efficiency", Round3(r.padding_efficiency)},
                     {"mean_batch_size", Round3(r.mean_batch_size)},
                     {"mean_fill", Round3(r.mean_fill)},
                     {"batches", r.batches},
                     {"batches_over_budget", r.batches_over_budget},
                     {"oom_events", r.oom_events},
                     {"requests", r.requests},
                     {"completed", r.completed},
                     {"requests_lost", r.requests_lost},
                     {"requests_rejected", r.requests_rejected},
                     {"peak_memory_bytes", r.peak_memory_bytes},
                     {"peak_forward_bytes", r.peak_forward_bytes},
                     {"makespan_s", Round3(r.makespan_s)}});
    if (r.latency_short_alone) array.back()["latency_ms"]["short_alone"] = LatencyJson(*r.latency_short_alone);
  }
  return array.dump(2) + "\n";
}

std::string BatchesJsonl(const std::vector<PolicyResult>& results) {
  std::string out;
  for (const PolicyResult& r : results) {
    for (const BatchRecord& b : r.batch_records) {
      const nlohmann::json line = {{"policy", r.policy},
                                   {"size", b.size},
                                   {"max_tokens", b.max_tokens},
                                   {"sum_tokens", b.sum_tokens},
                                   {"cost", b.cost},
                                   {"start_ms", Round3(static_cast<double>(b.start_ns) / 1e6)},
                                   {"latency_us", Round3(b.latency_us)},
                                   {"peak_bytes", b.peak_bytes},
                                   {"oom", b.oom}};
      absl::StrAppend(&out, line.dump(), "\n");
    }
  }
  return out;
}

absl::Status WritePlots(const std::string& dir, const std::vector<PolicyResult>& results,
                        const std::string& cost_label, bool run_gnuplot) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return absl::NotFoundError(absl::StrCat("cannot create ", dir, ": ", ec.message()));
  const fs::path base(dir);

  // Latency CDF: one data block per policy (separated by two blank lines, gnuplot's
  // `index`), x = latency ms, y = fraction of completed requests at or below it.
  std::string cdf, cdf_plot;
  std::string hist, hist_plot;
  std::int64_t max_cost = 1;
  for (const PolicyResult& r : results) {
    for (const BatchRecord& b : r.batch_records) max_cost = std::max(max_cost, b.cost);
  }
  const double bin = std::max(1.0, std::ceil(static_cast<double>(max_cost) / 40.0));
  for (std::size_t p = 0; p < results.size(); ++p) {
    const PolicyResult& r = results[p];
    std::vector<double> all = r.short_latencies_ms;
    all.insert(all.end(), r.long_latencies_ms.begin(), r.long_latencies_ms.end());
    std::sort(all.begin(), all.end());
    cdf += "# " + r.policy + "\n";
    // At most ~500 points per policy keep the file small; the last point is 1.
    const std::size_t step = std::max<std::size_t>(1, all.size() / 500);
    for (std::size_t i = 0; i < all.size(); i += step) {
      cdf += fmt::format("{:.4f} {:.5f}\n", std::max(all[i], 1e-3), static_cast<double>(i + 1) / all.size());
    }
    if (!all.empty()) cdf += fmt::format("{:.4f} 1.00000\n", std::max(all.back(), 1e-3));
    cdf += "\n\n";
    cdf_plot += fmt::format("{}'latency_cdf.dat' index {} with lines lw 2 title {}", p ? ", " : "", p,
                            Quote(r.policy));
    // Batch-cost histogram: counts per bin of width `bin`.
    std::vector<std::size_t> counts(static_cast<std::size_t>(std::ceil(static_cast<double>(max_cost) / bin)) + 1, 0);
    for (const BatchRecord& b : r.batch_records) ++counts[static_cast<std::size_t>(static_cast<double>(b.cost) / bin)];
    hist += "# " + r.policy + "\n";
    for (std::size_t k = 0; k < counts.size(); ++k) {
      hist += fmt::format("{:.1f} {}\n", (static_cast<double>(k) + 0.5) * bin, counts[k]);
    }
    hist += "\n\n";
    hist_plot += fmt::format("{}'batch_cost.dat' index {} with steps lw 2 title {}", p ? ", " : "", p,
                             Quote(r.policy));
  }
  const std::string cdf_gp = "set terminal png size 1000,600\nset output 'latency_cdf.png'\n"
                             "set logscale x\nset xlabel 'latency (ms, log scale)'\n"
                             "set ylabel 'fraction of completed requests'\nset key bottom right\n"
                             "set grid\nplot " + cdf_plot + "\n";
  const std::string hist_gp = "set terminal png size 1000,600\nset output 'batch_cost.png'\n"
                              "set xlabel " + Quote("batch cost (" + cost_label + ")") +
                              "\nset ylabel 'batches'\nset key top right\nset grid\nplot " + hist_plot + "\n";
  for (const auto& [name, text] : {std::pair{"latency_cdf.dat", cdf}, {"latency_cdf.gp", cdf_gp},
                                   {"batch_cost.dat", hist}, {"batch_cost.gp", hist_gp}}) {
    if (absl::Status s = WriteFile(base / name, text); !s.ok()) return s;
  }
  if (run_gnuplot) {
    // cd into the folder so the scripts' relative paths resolve; the path is quoted
    // for the shell.
    std::string quoted = "'";
    for (char c : fs::absolute(base).string()) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    quoted += "'";
    const std::string cmd = "cd " + quoted + " && gnuplot latency_cdf.gp && gnuplot batch_cost.gp";
    if (std::system(cmd.c_str()) != 0) {
      return absl::InternalError(absl::StrCat("gnuplot failed in ", dir, " (is gnuplot installed?)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace tokenbatch::sim
