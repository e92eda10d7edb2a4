// Oniguruma wrapper; see regex.h.
#include "tokenizer/regex.h"

#include <oniguruma.h>

#include <mutex>
#include <string>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::tokenizer::internal {
namespace {

void InitOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    OnigEncoding encodings[] = {ONIG_ENCODING_UTF8};
    onig_initialize(encodings, 1);
  });
}

// One match region per thread, reused across calls (a region is per-search state).
struct RegionHolder {
  OnigRegion* region = onig_region_new();
  ~RegionHolder() { onig_region_free(region, 1); }
};

}  // namespace

absl::StatusOr<std::unique_ptr<Regex>> Regex::Compile(std::string_view pattern) {
  InitOnce();
  OnigRegex regex = nullptr;
  OnigErrorInfo einfo;
  const auto* p = reinterpret_cast<const OnigUChar*>(pattern.data());
  const int r = onig_new(&regex, p, p + pattern.size(), ONIG_OPTION_CAPTURE_GROUP, ONIG_ENCODING_UTF8,
                         ONIG_SYNTAX_ONIGURUMA, &einfo);
  if (r != ONIG_NORMAL) {
    OnigUChar msg[ONIG_MAX_ERROR_MESSAGE_LEN];
    onig_error_code_to_str(msg, r, &einfo);
    return InvalidArgumentError(absl::StrCat("invalid regex /", std::string(pattern), "/: ", reinterpret_cast<char*>(msg)));
  }
  return std::unique_ptr<Regex>(new Regex(regex));
}

Regex::~Regex() { onig_free(static_cast<OnigRegex>(regex_)); }

void Regex::FindAll(std::string_view text, std::vector<std::pair<size_t, size_t>>& out, bool report_empty) const {
  thread_local RegionHolder holder;
  const auto* begin = reinterpret_cast<const OnigUChar*>(text.data());
  const auto* end = begin + text.size();
  const OnigUChar* pos = begin;
  size_t last_end = SIZE_MAX;  // end of the last reported match
  while (pos <= end) {
    const int r = onig_search(static_cast<OnigRegex>(regex_), begin, end, pos, end, holder.region,
                              ONIG_OPTION_NONE);
    if (r < 0) break;  // ONIG_MISMATCH (or an engine error: no more matches reported)
    const auto mb = static_cast<size_t>(holder.region->beg[0]);
    const auto me = static_cast<size_t>(holder.region->end[0]);
    if (me > mb) {
      out.emplace_back(mb, me);
      last_end = me;
      pos = begin + me;
    } else {
      if (report_empty && mb != last_end) {
        out.emplace_back(mb, mb);
        last_end = mb;
      }
      if (begin + mb >= end) break;
      pos = begin + mb + ONIGENC_MBC_ENC_LEN(ONIG_ENCODING_UTF8, begin + mb);  // skip one code point
    }
  }
}

std::string EscapeRegexLiteral(std::string_view literal) {
  std::string out;
  for (const char c : literal) {
    if (std::string_view("\\^$.|?*+()[]{}-/").find(c) != std::string_view::npos) out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

absl::StatusOr<std::shared_ptr<const Regex>> CompilePattern(const nlohmann::json& pattern, std::string_view component) {
  std::string regex;
  if (pattern.is_object() && pattern.contains("Regex") && pattern.at("Regex").is_string()) {
    regex = pattern.at("Regex").get<std::string>();
  } else if (pattern.is_object() && pattern.contains("String") && pattern.at("String").is_string()) {
    regex = EscapeRegexLiteral(pattern.at("String").get<std::string>());
  } else {
    return InvalidArgumentError(absl::StrCat(std::string(component), ": pattern is neither {\"String\": ...} nor {\"Regex\": ...}"));
  }
  auto compiled = Regex::Compile(regex);
  if (!compiled.ok()) return InvalidArgumentError(absl::StrCat(std::string(component), ": ", compiled.status().message()));
  return std::shared_ptr<const Regex>(std::move(*compiled));
}

}  // namespace tokenbatch::tokenizer::internal
