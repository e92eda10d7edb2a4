// Plain text from manual pages: the Chinese technical passages of the seed mix
// come from Debian's manpages-zh (/usr/share/man/zh_CN), which ships gzip'd
// troff sources. ReadManPageText decompresses a page with zlib and TroffToText
// keeps what a reader sees: the body text and the text arguments of the font and
// heading macros (SH, SS, B, I, BR, IR, IP, ...), without requests, comments,
// macro definitions or escape sequences. It is a text extractor for workloads,
// not a troff formatter: layout (indentation, tables, fills) is not reproduced.
// Pure functions except ReadManPageText (file I/O, blocking); thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace tokenbatch::workload {

// The visible text of troff (man(7)) source `troff`, one output line per text
// line. Named characters map to their UTF-8 form (\(lq -> “, \(em -> —, \- -> -);
// unknown ones, string and register references, and size, motion and width
// escapes are dropped. Never fails: malformed escapes are dropped too.
[[nodiscard]] std::string TroffToText(std::string_view troff);

// TroffToText of the file at `path`, gzip'd (.gz) or plain. Errors: NotFound if
// the file cannot be opened or decompressed.
[[nodiscard]] absl::StatusOr<std::string> ReadManPageText(const std::string& path);

}  // namespace tokenbatch::workload
