// Workloads for `tokenbatch simulate` and `tokenbatch bench`: request mixes of
// real text with exact token counts, arrival processes, and JSON Lines files so a
// run can be repeated (or a user's own workload replayed).
//
// Mixes (all deterministic for a given seed):
//   seed         the seed note's experiment: `requests` texts, `long_fraction` of
//                them ~`long_chars`-character technical passages (licence texts
//                from /usr/share/common-licenses), the rest short texts of at most
//                `short_max_chars` characters (English and Chinese fortunes).
//   all_short    only the short texts.
//   all_long     only the long passages.
//   long_tailed  windows of the technical corpus whose length in characters is
//                log-normal (median `tail_median_chars`, shape `tail_sigma`,
//                capped at `tail_max_chars`): many short, a few very long.
// Arrivals:
//   burst        everything at t = 0 (the seed's setting).
//   poisson      open loop, exponential gaps at `rate_per_s` requests/s.
//   closed       C clients each send the next request when their last one
//                finished; arrival times are decided by the driver (all 0 here).
//
// JSON Lines: one object per line, {"id", "text", "tokens", "class", "arrival_us"}.
// On load "text" or "tokens" is required; missing "tokens" are counted with the
// given counter; a missing "class" is "short" for tokens <= short_max_tokens.
//
// Functions are thread-safe (no shared state); the generators and the JSON Lines
// functions block on file I/O.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tokenbatch/core/enum_names.h"

namespace tokenbatch::workload {

// Latency is reported separately for the two classes.
enum class LengthClass { kShort, kLong };

struct WorkloadRequest {
  std::uint64_t id = 0;
  std::string text;            // UTF-8; may be empty for token-only workloads
  std::int64_t tokens = 0;     // exact count from the tokenizer (>= 1)
  LengthClass length_class = LengthClass::kShort;
  std::int64_t arrival_us = 0;  // open-loop arrival time, µs from the start
};

enum class MixKind { kSeed, kAllShort, kAllLong, kLongTailed };

struct MixOptions {
  MixKind kind = MixKind::kSeed;
  std::size_t requests = 5000;        // the seed's 5,000
  double long_fraction = 0.5;         // seed mix only: the seed's half
  std::size_t short_max_chars = 40;   // short texts: fortunes of <= this many code points (~20 on average)
  std::size_t long_chars = 1500;      // long passages: ~this many code points (the seed's 1,500)
  double tail_median_chars = 300;     // long_tailed: median length, code points
  double tail_sigma = 1.5;            // long_tailed: log-normal shape
  std::size_t tail_max_chars = 30000; // long_tailed: cap, code points
  std::int64_t short_max_tokens = 64; // long_tailed: class boundary (tokens)
  std::uint32_t seed = 1;
};

// Counts the tokens of one text (e.g. Tokenizer::Count). Errors pass through.
using TokenCounter = std::function<absl::StatusOr<std::int64_t>(std::string_view text)>;

// A rough count for when no tokenizer is available: one token per CJK code point,
// one per 4 other bytes (OpenAI's rule of thumb for English), at least 1.
[[nodiscard]] std::int64_t EstimateTokens(std::string_view text);

// Builds the mix with ids 0..requests-1 and arrival 0. Errors: InvalidArgument for
// requests == 0 or a fraction outside [0, 1]; NotFound for a missing text file;
// the counter's errors.
[[nodiscard]] absl::StatusOr<std::vector<WorkloadRequest>> GenerateMix(const MixOptions& options,
                                                                       const TokenCounter& count);

// "seed" | "all_short" | "all_long" | "long_tailed" (dashes accepted).
inline constexpr EnumNames<MixKind, 7> kMixKindNames{
    "mix",
    {{{MixKind::kSeed, "seed"},
      {MixKind::kAllShort, "all_short"},
      {MixKind::kAllLong, "all_long"},
      {MixKind::kLongTailed, "long_tailed"},
      {MixKind::kAllShort, "all-short", /*alias=*/true},
      {MixKind::kAllLong, "all-long", /*alias=*/true},
      {MixKind::kLongTailed, "long-tailed", /*alias=*/true}}}};
[[nodiscard]] inline absl::StatusOr<MixKind> ParseMixKind(std::string_view name) { return kMixKindNames.Parse(name); }
[[nodiscard]] constexpr std::string_view MixKindName(MixKind kind) { return kMixKindNames.Name(kind); }

enum class ArrivalKind { kBurst, kPoisson, kClosed };

struct ArrivalOptions {
  ArrivalKind kind = ArrivalKind::kBurst;
  double rate_per_s = 100;    // poisson: requests per second (> 0)
  std::size_t clients = 64;   // closed: concurrent clients (>= 1), used by the driver
  std::uint32_t seed = 1;
};

// "burst" | "poisson" | "closed".
inline constexpr EnumNames<ArrivalKind, 3> kArrivalKindNames{
    "arrival process",
    {{{ArrivalKind::kBurst, "burst"}, {ArrivalKind::kPoisson, "poisson"}, {ArrivalKind::kClosed, "closed"}}}};
[[nodiscard]] inline absl::StatusOr<ArrivalKind> ParseArrivalKind(std::string_view name) {
  return kArrivalKindNames.Parse(name);
}
[[nodiscard]] constexpr std::string_view ArrivalKindName(ArrivalKind kind) { return kArrivalKindNames.Name(kind); }

// Sets arrival_us of every request in order (burst and closed: 0; poisson:
// cumulative exponential gaps). Errors: InvalidArgument for rate <= 0 or
// clients == 0.
[[nodiscard]] absl::Status AssignArrivals(const ArrivalOptions& options, std::vector<WorkloadRequest>& requests);

// Writes `requests` as JSON Lines. Errors: NotFound if the file cannot be written.
[[nodiscard]] absl::Status SaveJsonl(const std::string& path, const std::vector<WorkloadRequest>& requests);

// Reads a JSON Lines workload (see the overview). `count` may be empty if every
// line has "tokens". Errors: NotFound (unreadable file); InvalidArgument naming the
// line number for malformed JSON, tokens < 1, a bad "class", or a line with
// neither text nor tokens.
[[nodiscard]] absl::StatusOr<std::vector<WorkloadRequest>> LoadJsonl(const std::string& path,
                                                                     const TokenCounter& count,
                                                                     std::int64_t short_max_tokens = 64);

}  // namespace tokenbatch::workload
