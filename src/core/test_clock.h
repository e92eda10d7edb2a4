// A manual clock for policy tests: time moves only when the test says so.
#pragma once

#include <chrono>

#include "tokenbatch/core/request.h"

namespace tokenbatch::testing {

class ManualClock {
 public:
  [[nodiscard]] TimePoint now() const { return now_; }
  void Advance(Duration d) { now_ += d; }
  void AdvanceTo(TimePoint t) {
    if (t > now_) now_ = t;
  }

 private:
  TimePoint now_ = TimePoint{} + std::chrono::seconds(1);
};

}  // namespace tokenbatch::testing
