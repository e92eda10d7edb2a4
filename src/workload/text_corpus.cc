#include "tokenbatch/workload/text_corpus.h"

#include <algorithm>
#include <fstream>
#include <random>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "tokenbatch/core/errors.h"
#include "tokenbatch/workload/man_page.h"

namespace tokenbatch::workload {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path, " (run scripts/setup.sh)"));
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Removes ANSI escape sequences (ESC '[' ... letter), used for colour in fortunes-zh.
std::string StripAnsi(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\x1b' && i + 1 < s.size() && s[i + 1] == '[') {
      i += 2;
      while (i < s.size() && !((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z'))) ++i;
      continue;
    }
    out.push_back(s[i]);
  }
  return out;
}

std::string CollapseWhitespace(const std::string& s) {
  std::string out;
  bool space = false;
  for (char c : s) {
    if (c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f') {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  return out;
}

}  // namespace

std::size_t CodePoints(const std::string& text) {
  return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

absl::StatusOr<std::vector<std::string>> LoadFortunes(const std::vector<std::string>& paths,
                                                      std::size_t max_chars) {
  std::vector<std::string> entries;
  for (const std::string& path : paths) {
    absl::StatusOr<std::string> text = ReadFile(path);
    if (!text.ok()) return text.status();
    std::istringstream lines(StripAnsi(*text));
    std::string line, entry;
    auto flush = [&] {
      std::string e = CollapseWhitespace(entry);
      if (!e.empty() && CodePoints(e) <= max_chars) entries.push_back(std::move(e));
      entry.clear();
    };
    while (std::getline(lines, line)) {
      if (line == "%") {
        flush();
      } else {
        entry += line + "\n";
      }
    }
    flush();
  }
  if (entries.empty()) return InvalidArgumentError(absl::StrCat("no fortune of <= ", max_chars, " characters"));
  return entries;
}

absl::StatusOr<std::vector<std::string>> LoadPassages(const std::vector<std::string>& paths, std::size_t chars) {
  std::vector<std::string> passages;
  for (const std::string& path : paths) {
    absl::StatusOr<std::string> text = absl::EndsWith(path, ".gz") ? ReadManPageText(path) : ReadFile(path);
    if (!text.ok()) return text.status();
    const std::string flat = CollapseWhitespace(*text);
    std::size_t start = 0;
    while (start < flat.size()) {
      // Walk `chars` code points forward, then on to the next space.
      std::size_t end = start, seen = 0;
      while (end < flat.size() && seen < chars) {
        if ((static_cast<unsigned char>(flat[end]) & 0xC0) != 0x80) ++seen;
        ++end;
      }
      while (end < flat.size() && (static_cast<unsigned char>(flat[end]) & 0xC0) == 0x80) ++end;
      while (end < flat.size() && flat[end] != ' ') ++end;
      std::string passage = flat.substr(start, end - start);
      if (CodePoints(passage) >= chars / 2) passages.push_back(std::move(passage));
      start = end + 1;
    }
  }
  if (passages.empty()) return InvalidArgumentError("no passage could be cut from the given files");
  return passages;
}

std::vector<std::string> MixTexts(const std::vector<std::string>& shorts, const std::vector<std::string>& longs,
                                  std::size_t count, double long_fraction, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::string> mix;
  mix.reserve(count);
  const auto n_long = static_cast<std::size_t>(static_cast<double>(count) * long_fraction + 0.5);
  for (std::size_t i = 0; i < count; ++i) {
    const auto& pool = i < n_long ? longs : shorts;
    if (pool.empty()) continue;
    mix.push_back(pool[rng() % pool.size()]);
  }
  std::shuffle(mix.begin(), mix.end(), rng);
  return mix;
}

std::vector<std::string> DefaultShortTextFiles() {
  const std::string dir = "/usr/share/games/fortunes/";
  return {dir + "computers", dir + "science", dir + "linux", dir + "chinese", dir + "tang300"};
}

std::vector<std::string> DefaultLongTextFiles() {
  const std::string licences = "/usr/share/common-licenses/";
  // Chinese technical text, as the seed's passages: pages of Debian's manpages-zh.
  const std::string zh = "/usr/share/man/zh_CN/";
  return {licences + "GPL-3",        licences + "Apache-2.0",   licences + "LGPL-3",
          licences + "MPL-2.0",      licences + "GFDL-1.3",     zh + "man1/bash.1.gz",
          zh + "man1/systemctl.1.gz", zh + "man8/tcpdump.8.gz", zh + "man5/proc.5.gz"};
}

}  // namespace tokenbatch::workload
