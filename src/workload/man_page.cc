#include "tokenbatch/workload/man_page.h"

#include <zlib.h>

#include <array>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace tokenbatch::workload {
namespace {

// man(7) macros whose arguments are text a reader sees (headings, fonts, tagged
// paragraphs). Every other request (.TH, .PP, .br, .if, .ds, ...) is dropped.
bool IsTextMacro(std::string_view name) {
  static constexpr std::array<std::string_view, 16> kText = {"SH", "SS", "B",  "I",  "BR", "RB", "IR", "RI",
                                                             "BI", "IB", "SM", "SB", "IP", "TP", "UR", "MT"};
  for (std::string_view t : kText) {
    if (name == t) return true;
  }
  return false;
}

// The UTF-8 form of the named characters man pages use (groff_char(7)).
std::string_view NamedChar(std::string_view name) {
  static const auto* const kChars = new absl::flat_hash_map<std::string_view, std::string_view>{
      {"lq", "\u201c"}, {"rq", "\u201d"}, {"oq", "\u2018"}, {"cq", "\u2019"}, {"em", "\u2014"},
      {"en", "\u2013"}, {"hy", "-"},      {"mi", "-"},      {"co", "\u00a9"}, {"rg", "\u00ae"},
      {"bu", "\u2022"}, {"aq", "'"},      {"dq", "\""},     {"ti", "~"},      {"ha", "^"},
      {"rs", "\\"},     {"tm", "\u2122"}, {"de", "\u00b0"}, {"mu", "\u00d7"}, {"<=", "\u2264"},
      {">=", "\u2265"}, {"->", "\u2192"}, {"<-", "\u2190"}};
  auto it = kChars->find(name);
  return it == kChars->end() ? std::string_view() : it->second;
}

// Reads an escape's name after `i` (the character after the escape letter): "(xx",
// "[name]" or one character. Advances `i` past it.
std::string_view EscapeName(std::string_view s, std::size_t& i) {
  if (i >= s.size()) return {};
  if (s[i] == '(') {
    const std::size_t start = i + 1;
    i = std::min(s.size(), i + 3);
    return s.substr(start, i - start);
  }
  if (s[i] == '[') {
    const std::size_t close = s.find(']', i);
    const std::size_t start = i + 1;
    i = close == std::string_view::npos ? s.size() : close + 1;
    return s.substr(start, i - start - (close == std::string_view::npos ? 0 : 1));
  }
  return s.substr(i++, 1);
}

// One line's text with escapes resolved.
std::string ResolveEscapes(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    if (s[i] != '\\') {
      out.push_back(s[i++]);
      continue;
    }
    if (++i >= s.size()) break;
    const char e = s[i++];
    switch (e) {
      case '"': return out;  // comment to the end of the line
      case '-': out.push_back('-'); break;
      case 'e': case '\\': out.push_back('\\'); break;
      case ' ': case '~': case '0': out.push_back(' '); break;
      case '&': case '|': case '^': case 'c': case ':': case '%': case '/': case ',': case ')': break;
      case '(': case '[': {
        --i;  // the name starts at the bracket
        out += NamedChar(EscapeName(s, i));
        break;
      }
      case 'f': case '*': case 'n': case 'F': case 'm': case 'g': case 'k':
        (void)EscapeName(s, i);  // font, string, register, colour: no visible text
        break;
      case 's':  // size change: \s+2, \s-1, \s0, \s(12, \s[12]
        if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
        if (i < s.size() && (s[i] == '(' || s[i] == '[')) {
          (void)EscapeName(s, i);
        } else {
          while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
        }
        break;
      case 'h': case 'v': case 'w': case 'l': case 'L': case 'o': case 'b': case 'D': case 'X': case 'Z': case 'x':
      case 'N': case 'R': case 'A': case 'B': case 'S': {
        // \h'distance' and friends: a delimited argument, no visible text.
        if (i < s.size()) {
          const char delim = s[i];
          const std::size_t close = s.find(delim, i + 1);
          i = close == std::string_view::npos ? s.size() : close + 1;
        }
        break;
      }
      default: out.push_back(e); break;  // an escaped ordinary character stands for itself
    }
  }
  return out;
}

// A macro line's arguments, quotes removed: `.B "a b" c` -> "a b c".
std::string MacroArguments(std::string_view args) {
  std::string out;
  bool quoted = false;
  for (char c : args) {
    if (c == '"') {
      quoted = !quoted;
      continue;
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace

std::string TroffToText(std::string_view troff) {
  std::string out;
  bool skipping = false;  // inside .de/.ig ... ".." (macro definitions, ignored blocks)
  std::size_t pos = 0;
  while (pos <= troff.size()) {
    const std::size_t nl = troff.find('\n', pos);
    std::string_view line = troff.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? troff.size() + 1 : nl + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (skipping) {
      if (line.substr(0, 2) == "..") skipping = false;
      continue;
    }
    if (!line.empty() && (line[0] == '.' || line[0] == '\'')) {
      std::string_view rest = line.substr(1);
      while (!rest.empty() && (rest[0] == ' ' || rest[0] == '\t')) rest.remove_prefix(1);
      const std::size_t end = rest.find_first_of(" \t");
      const std::string_view name = rest.substr(0, end);
      if (name == "de" || name == "de1" || name == "am" || name == "ig") {
        skipping = true;
        continue;
      }
      if (!IsTextMacro(name) || end == std::string_view::npos) continue;
      line = rest.substr(end + 1);
      line = line.substr(0, line.find("\\\""));  // a trailing comment: before quote removal
      const std::string text = ResolveEscapes(MacroArguments(line));
      if (!text.empty()) absl::StrAppend(&out, text, "\n");
      continue;
    }
    const std::string text = ResolveEscapes(line);
    if (!text.empty()) absl::StrAppend(&out, text, "\n");
  }
  return out;
}

absl::StatusOr<std::string> ReadManPageText(const std::string& path) {
  // gzopen reads plain files transparently, so one path serves both.
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) return absl::NotFoundError(absl::StrCat("cannot read ", path, " (run scripts/setup.sh)"));
  std::string troff;
  std::vector<char> buffer(1 << 16);
  int n = 0;
  while ((n = gzread(file, buffer.data(), static_cast<unsigned>(buffer.size()))) > 0) {
    troff.append(buffer.data(), static_cast<std::size_t>(n));
  }
  const bool failed = n < 0;
  gzclose(file);
  if (failed) return absl::NotFoundError(absl::StrCat("cannot decompress ", path));
  return TroffToText(troff);
}

}  // namespace tokenbatch::workload
