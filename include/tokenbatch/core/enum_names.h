// EnumNames: the one table of an option enum's names, for flags, logs, JSON and
// error messages alike.
//
// Every option enum (packing policy, oversize, batch window, shutdown, pooling,
// execution, architecture, score activation) declares one constexpr table next
// to the enum; its Name/Parse functions and the command line's validators all
// read it, so a name is written once:
//
//   inline constexpr EnumNames<OversizePolicy, 3> kOversizePolicyNames{
//       "oversize policy",
//       {{{OversizePolicy::kReject, "reject"}, {OversizePolicy::kTruncate, "truncate"},
//         {OversizePolicy::kSplit, "split"}}}};
//
// An entry marked `alias` is accepted by Parse but never printed: Name gives
// the first entry of a value, Choices lists only the others. `quote` is how
// Parse's message quotes a refused name: callers and tests match the name
// as quoted.
//
// Thread-safety: immutable constexpr data; every member is a pure function.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch {

// One row of a table: a value and one of its names.
template <typename E>
struct EnumName {
  E value;
  std::string_view name;
  bool alias = false;  // parsed, never printed (an older spelling)
};

// The table of an enum E with N rows (see the header comment).
template <typename E, std::size_t N>
struct EnumNames {
  // What the enum is, for error messages: "unknown <what> 'x'".
  std::string_view what;
  std::array<EnumName<E>, N> entries;
  char quote = '\'';  // around a refused name in Parse's message

  // The printed name of `value`; "unknown" for a value outside the table
  // (a cast integer).
  [[nodiscard]] constexpr std::string_view Name(E value) const {
    for (const EnumName<E>& e : entries) {
      if (e.value == value && !e.alias) return e.name;
    }
    return "unknown";
  }

  // The value named `name` (exact, case-sensitive). Errors: InvalidArgument
  // "unknown <what> '<name>'; expected one of: a, b, c" (with `quote`).
  [[nodiscard]] absl::StatusOr<E> Parse(std::string_view name) const {
    for (const EnumName<E>& e : entries) {
      if (e.name == name) return e.value;
    }
    return InvalidArgumentError(
        absl::StrCat("unknown ", ToAbsl(what), " ", std::string(1, quote), ToAbsl(name), std::string(1, quote),
                     "; expected one of: ", Choices()));
  }

  // The printed names in table order, e.g. for a command-line validator.
  [[nodiscard]] std::vector<std::string> Names() const {
    std::vector<std::string> out;
    for (const EnumName<E>& e : entries) {
      if (!e.alias) out.emplace_back(e.name);
    }
    return out;
  }

  // The printed names joined by `separator`: "reject, truncate, split".
  [[nodiscard]] std::string Choices(std::string_view separator = ", ") const {
    std::string out;
    for (const EnumName<E>& e : entries) {
      if (e.alias) continue;
      if (!out.empty()) out.append(separator);
      out.append(e.name);
    }
    return out;
  }
};

}  // namespace tokenbatch
