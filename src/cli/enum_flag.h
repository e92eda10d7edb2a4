// Command-line validators built from an option enum's name table
// (tokenbatch/core/enum_names.h), so that a flag accepts exactly the names the
// library parses and its help lists them.
#pragma once

#include <cstddef>
#include <string>

#include <CLI/CLI.hpp>

#include "tokenbatch/core/enum_names.h"

namespace tokenbatch::cli {

// Accepts the names `names` parses (aliases included); an empty value too
// when `empty_ok` (a flag whose "" means "the model's"). The help shows the
// printed names ("cls|mean|last"). `names` must outlive the validator (the
// tables are constexpr globals). CLI11 reports a refusal before the command
// runs, with Parse's message.
template <typename E, std::size_t N>
CLI::Validator NamesValidator(const EnumNames<E, N>& names, bool empty_ok = false) {
  return CLI::Validator(
      [&names, empty_ok](std::string& value) -> std::string {
        if (empty_ok && value.empty()) return {};
        absl::StatusOr<E> parsed = names.Parse(value);
        return parsed.ok() ? std::string() : std::string(parsed.status().message());
      },
      names.Choices("|"));
}

}  // namespace tokenbatch::cli
