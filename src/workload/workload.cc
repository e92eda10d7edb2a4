#include "tokenbatch/workload/workload.h"

#include <cmath>
#include <fstream>
#include <numbers>
#include <random>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "tokenbatch/core/errors.h"
#include "tokenbatch/workload/text_corpus.h"

namespace tokenbatch::workload {
namespace {

// Own draws on top of mt19937 (whose output sequence the C++ standard fixes):
// std::*_distribution results differ between standard libraries, and a saved
// workload must regenerate identically anywhere.
class Rng {
 public:
  explicit Rng(std::uint32_t seed) : engine_(seed) {}
  std::size_t Index(std::size_t n) { return static_cast<std::size_t>(engine_() % n); }
  // Uniform in (0, 1).
  double Unit() { return (static_cast<double>(engine_()) + 0.5) / 4294967296.0; }
  double Normal() {  // Box-Muller
    return std::sqrt(-2.0 * std::log(Unit())) * std::cos(2.0 * std::numbers::pi * Unit());
  }

 private:
  std::mt19937 engine_;
};

bool IsCjk(char32_t c) {
  return (c >= 0x3000 && c <= 0x9FFF) || (c >= 0xAC00 && c <= 0xD7AF) || (c >= 0xF900 && c <= 0xFAFF) ||
         (c >= 0xFF00 && c <= 0xFFEF);
}

// Byte offsets of the code points of `text`, plus text.size() at the end.
std::vector<std::size_t> CodePointStarts(const std::string& text) {
  std::vector<std::size_t> starts;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) starts.push_back(i);
  }
  starts.push_back(text.size());
  return starts;
}

absl::Status AddRequest(std::vector<WorkloadRequest>& out, std::string text, LengthClass cls,
                        const TokenCounter& count) {
  absl::StatusOr<std::int64_t> tokens = count ? count(text) : EstimateTokens(text);
  if (!tokens.ok()) return tokens.status();
  WorkloadRequest r;
  r.id = out.size();
  r.tokens = std::max<std::int64_t>(1, *tokens);
  r.text = std::move(text);
  r.length_class = cls;
  out.push_back(std::move(r));
  return absl::OkStatus();
}

}  // namespace

std::int64_t EstimateTokens(std::string_view text) {
  std::int64_t cjk = 0, other_bytes = 0;
  for (std::size_t i = 0; i < text.size();) {
    const auto b = static_cast<unsigned char>(text[i]);
    const std::size_t len = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    char32_t c = len == 1 ? b : (b & (0xFF >> (len + 1)));
    for (std::size_t k = 1; k < len && i + k < text.size(); ++k) {
      c = (c << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
    }
    if (IsCjk(c)) {
      ++cjk;
    } else {
      other_bytes += static_cast<std::int64_t>(len);
    }
    i += len;
  }
  return std::max<std::int64_t>(1, cjk + (other_bytes + 3) / 4);
}

absl::StatusOr<std::vector<WorkloadRequest>> GenerateMix(const MixOptions& o, const TokenCounter& count) {
  if (o.requests == 0) return InvalidArgumentError("workload: requests must be >= 1");
  if (!(o.long_fraction >= 0 && o.long_fraction <= 1)) {
    return InvalidArgumentError(absl::StrCat("workload: long_fraction must be in [0, 1], got ", o.long_fraction));
  }
  if (o.kind == MixKind::kLongTailed && !(o.tail_median_chars >= 1 && o.tail_sigma >= 0 && o.tail_max_chars >= 1)) {
    return InvalidArgumentError("workload: long_tailed needs median >= 1, sigma >= 0, max >= 1");
  }
  Rng rng(o.seed);
  std::vector<WorkloadRequest> out;
  out.reserve(o.requests);
  if (o.kind == MixKind::kLongTailed) {
    auto passages = LoadPassages(DefaultLongTextFiles(), 1500);
    if (!passages.ok()) return passages.status();
    std::string corpus;
    for (const std::string& p : *passages) absl::StrAppend(&corpus, corpus.empty() ? "" : " ", p);
    const std::vector<std::size_t> starts = CodePointStarts(corpus);
    const std::size_t total = starts.size() - 1;
    for (std::size_t i = 0; i < o.requests; ++i) {
      const double drawn = o.tail_median_chars * std::exp(o.tail_sigma * rng.Normal());
      const std::size_t n =
          std::clamp<std::size_t>(static_cast<std::size_t>(std::llround(drawn)), 1, std::min(o.tail_max_chars, total));
      const std::size_t begin = rng.Index(total - n + 1);
      std::string text = corpus.substr(starts[begin], starts[begin + n] - starts[begin]);
      absl::Status s = AddRequest(out, std::move(text), LengthClass::kShort, count);
      if (!s.ok()) return s;
      out.back().length_class = out.back().tokens <= o.short_max_tokens ? LengthClass::kShort : LengthClass::kLong;
    }
    return out;
  }
  const double fraction = o.kind == MixKind::kAllShort ? 0.0 : o.kind == MixKind::kAllLong ? 1.0 : o.long_fraction;
  const auto n_long = static_cast<std::size_t>(std::llround(fraction * static_cast<double>(o.requests)));
  std::vector<std::string> shorts, longs;
  if (n_long < o.requests) {
    auto s = LoadFortunes(DefaultShortTextFiles(), o.short_max_chars);
    if (!s.ok()) return s.status();
    shorts = std::move(*s);
  }
  if (n_long > 0) {
    auto l = LoadPassages(DefaultLongTextFiles(), o.long_chars);
    if (!l.ok()) return l.status();
    longs = std::move(*l);
  }
  // Which positions are long: the first n_long of a Fisher-Yates shuffled order.
  std::vector<bool> is_long(o.requests, false);
  for (std::size_t i = 0; i < n_long; ++i) is_long[i] = true;
  for (std::size_t i = o.requests - 1; i > 0; --i) {
    const std::size_t j = rng.Index(i + 1);
    const bool t = is_long[i];
    is_long[i] = is_long[j];
    is_long[j] = t;
  }
  for (std::size_t i = 0; i < o.requests; ++i) {
    const std::vector<std::string>& pool = is_long[i] ? longs : shorts;
    absl::Status s = AddRequest(out, pool[rng.Index(pool.size())],
                                is_long[i] ? LengthClass::kLong : LengthClass::kShort, count);
    if (!s.ok()) return s;
  }
  return out;
}

absl::Status AssignArrivals(const ArrivalOptions& options, std::vector<WorkloadRequest>& requests) {
  if (options.kind == ArrivalKind::kPoisson && !(options.rate_per_s > 0)) {
    return InvalidArgumentError(absl::StrCat("poisson arrivals need rate > 0, got ", options.rate_per_s));
  }
  if (options.kind == ArrivalKind::kClosed && options.clients == 0) {
    return InvalidArgumentError("closed-loop arrivals need clients >= 1");
  }
  Rng rng(options.seed);
  double t_us = 0;
  for (WorkloadRequest& r : requests) {
    if (options.kind == ArrivalKind::kPoisson) {
      r.arrival_us = std::llround(t_us);
      t_us += -std::log(rng.Unit()) / options.rate_per_s * 1e6;
    } else {
      r.arrival_us = 0;
    }
  }
  return absl::OkStatus();
}

absl::Status SaveJsonl(const std::string& path, const std::vector<WorkloadRequest>& requests) {
  std::ofstream out(path, std::ios::binary);
  if (!out) return absl::NotFoundError(absl::StrCat("cannot write ", path));
  for (const WorkloadRequest& r : requests) {
    nlohmann::json line = {{"id", r.id},
                           {"text", r.text},
                           {"tokens", r.tokens},
                           {"class", r.length_class == LengthClass::kLong ? "long" : "short"},
                           {"arrival_us", r.arrival_us}};
    out << line.dump() << '\n';
  }
  if (!out) return absl::NotFoundError(absl::StrCat("error writing ", path));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<WorkloadRequest>> LoadJsonl(const std::string& path, const TokenCounter& count,
                                                       std::int64_t short_max_tokens) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::vector<WorkloadRequest> out;
  std::string line;
  for (std::size_t number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = absl::StrCat(path, ":", number, ": ");
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) return InvalidArgumentError(where + "not a JSON object");
    WorkloadRequest r;
    r.id = out.size();
    if (j.contains("id")) {
      if (!j["id"].is_number_unsigned()) return InvalidArgumentError(where + "\"id\" must be an unsigned integer");
      r.id = j["id"].get<std::uint64_t>();
    }
    if (j.contains("text")) {
      if (!j["text"].is_string()) return InvalidArgumentError(where + "\"text\" must be a string");
      r.text = j["text"].get<std::string>();
    }
    if (j.contains("tokens")) {
      if (!j["tokens"].is_number_integer() || j["tokens"].get<std::int64_t>() < 1) {
        return InvalidArgumentError(where + "\"tokens\" must be an integer >= 1");
      }
      r.tokens = j["tokens"].get<std::int64_t>();
    } else if (j.contains("text")) {
      absl::StatusOr<std::int64_t> n = count ? count(r.text) : EstimateTokens(r.text);
      if (!n.ok()) return n.status();
      r.tokens = std::max<std::int64_t>(1, *n);
    } else {
      return InvalidArgumentError(where + "needs \"text\" or \"tokens\"");
    }
    if (j.contains("class")) {
      const nlohmann::json& c = j["class"];
      if (c == "short") {
        r.length_class = LengthClass::kShort;
      } else if (c == "long") {
        r.length_class = LengthClass::kLong;
      } else {
        return InvalidArgumentError(where + "\"class\" must be \"short\" or \"long\"");
      }
    } else {
      r.length_class = r.tokens <= short_max_tokens ? LengthClass::kShort : LengthClass::kLong;
    }
    if (j.contains("arrival_us")) {
      if (!j["arrival_us"].is_number_integer() || j["arrival_us"].get<std::int64_t>() < 0) {
        return InvalidArgumentError(where + "\"arrival_us\" must be an integer >= 0");
      }
      r.arrival_us = j["arrival_us"].get<std::int64_t>();
    }
    out.push_back(std::move(r));
  }
  if (out.empty()) return InvalidArgumentError(absl::StrCat(path, ": no requests"));
  return out;
}

}  // namespace tokenbatch::workload
