// ProgressBar: a one-line progress bar on stderr for long comparisons
// (`tokenbatch simulate`, `tokenbatch bench`). Drawn only when stderr is a
// terminal, so logs and redirected output stay clean; stdout is never touched, so
// a run's stdout stays byte-identical. Not thread-safe: call Update from one
// thread (or under the caller's lock). Never blocks beyond the write.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>
#include <utility>

#include <unistd.h>

namespace tokenbatch::sim {

class ProgressBar {
 public:
  ProgressBar(std::string label, bool enabled) : label_(std::move(label)), enabled_(enabled && isatty(2)) {}

  // Redraws when the whole percentage changed; ends the line at done == total.
  void Update(std::size_t done, std::size_t total) {
    if (!enabled_) return;
    const std::size_t percent = total ? done * 100 / total : 100;
    if (percent == last_ && done != total) return;
    last_ = percent;
    const std::size_t filled = percent * 30 / 100;
    std::fprintf(stderr, "\r%-20s [%s%s] %3zu%%", label_.c_str(), std::string(filled, '#').c_str(),
                 std::string(30 - filled, '.').c_str(), percent);
    if (done == total) std::fputc('\n', stderr);
  }

 private:
  std::string label_;
  bool enabled_;
  std::size_t last_ = 101;
};

}  // namespace tokenbatch::sim
