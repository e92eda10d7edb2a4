// The one error path of every `tokenbatch` subcommand: "<command>: <message>" on
// stderr, then the command ends with its exit status (thrown as
// CLI::RuntimeError, which main's CLI11_PARSE returns; destructors run, so
// threads a command started are joined).
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "absl/status/statusor.h"

namespace tokenbatch::cli {

// A subcommand as its errors name it, and the exit status they end it with
// (2 for `serve` and `tokenize`, whose callers tell a bad configuration from a
// run that failed).
struct Command {
  std::string_view name;
  int exit_code = 1;
};

// Never returns.
[[noreturn]] inline void Fail(const Command& command, std::string_view message) {
  fmt::print(stderr, "{}: {}\n", command.name, message);
  throw CLI::RuntimeError(command.exit_code);
}

// The value of `v`, or Fail(command, "<what>: <its message>").
template <typename T>
T OrFail(const Command& command, absl::StatusOr<T> v, std::string_view what) {
  if (!v.ok()) Fail(command, fmt::format("{}: {}", what, std::string(v.status().message())));
  return *std::move(v);
}

}  // namespace tokenbatch::cli
