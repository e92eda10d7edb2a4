// Real text for workloads: short texts from fortune files (English: fortunes;
// Chinese: fortunes-zh) and long technical passages cut from documents such as
// /usr/share/common-licenses and Chinese manual pages (manpages-zh). All functions read files and return UTF-8 strings;
// they are thread-safe (no shared state) and block on file I/O only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tokenbatch::workload {

// The fortune entries of `paths` (entries are separated by lines holding only
// "%"), with ANSI colour escapes removed and surrounding whitespace trimmed;
// entries longer than `max_chars` code points are skipped. Errors: NotFound
// naming the first unreadable file; InvalidArgument if no entry qualifies.
[[nodiscard]] absl::StatusOr<std::vector<std::string>> LoadFortunes(const std::vector<std::string>& paths,
                                                                    std::size_t max_chars);

// Consecutive passages of about `chars` code points (cut at the next whitespace)
// from the files of `paths`, whitespace runs collapsed to one space. A file's
// tail shorter than chars/2 is dropped. A path ending in ".gz" is a manual page
// (gzip'd troff): its visible text is used (ReadManPageText). Errors: NotFound naming an unreadable
// file; InvalidArgument if no passage results.
[[nodiscard]] absl::StatusOr<std::vector<std::string>> LoadPassages(const std::vector<std::string>& paths,
                                                                    std::size_t chars);

// The seed note's mix: `count` texts, a `long_fraction` share drawn from `longs`
// and the rest from `shorts`, in a shuffled order fixed by `seed`.
[[nodiscard]] std::vector<std::string> MixTexts(const std::vector<std::string>& shorts,
                                                const std::vector<std::string>& longs, std::size_t count,
                                                double long_fraction, std::uint32_t seed);

// Default sources installed by scripts/setup.sh (Debian packages fortunes,
// fortunes-zh, base-files and manpages-zh). Long texts: five licences of
// /usr/share/common-licenses (English) and four Chinese manual pages (bash,
// systemctl, tcpdump, proc), about half of the passages each.
[[nodiscard]] std::vector<std::string> DefaultShortTextFiles();
[[nodiscard]] std::vector<std::string> DefaultLongTextFiles();

// The number of UTF-8 code points in `text` (continuation bytes not counted).
[[nodiscard]] std::size_t CodePoints(const std::string& text);

}  // namespace tokenbatch::workload
