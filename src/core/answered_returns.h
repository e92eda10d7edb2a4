// The returns of answered clients, for the adaptive batching window
// (src/core/adaptive_wait.h, DecideReturnHold).
//
// A closed-loop client (a benchmark's connection, a pipeline stage, a user who
// waits for each reply) sends its next request soon after its last one is
// answered. Its arrivals are then not a rate: they come in a burst a round trip
// after each batch finishes, and stop once every client is queued. The arrival
// rate (ArrivalRate) sees the burst only after it began; this remembers, per
// batch answered in the recent window, how many of its requests came back and
// how long after the answer, so that the window can wait for the rest of a burst
// that has begun, or for one it expects.
//
// An arrival counts as a return of the oldest answer still open that it follows
// by at most `window` (the scheduler's max_wait): arrivals are not labelled by
// client, so under open-loop traffic fast enough to fill the window the fraction
// reads high; the hold it allows still ends when the awaited arrivals come or at
// the expected time, never later than the answer's max_wait.
//
// An answer is retired when all its requests returned or its window passed; its
// returned fraction then enters return_fraction (an exponentially weighted mean,
// weight 1/8 per answer, the first retirement sets it). Each return's delay after
// its answer enters return_delay the way TCP estimates a round trip (RFC 6298,
// section 2: a smoothed mean with weight 1/8 and a mean deviation with weight
// 1/4); the returns are expected by mean + 2 × deviation after the answer, never
// later than `window`.
//
// Internal to the core; plain values, no clock, not thread-safe. At most
// kMaxAnswers answers are open, and no call does more than O(kMaxAnswers).
#pragma once

#include <cstdint>
#include <deque>
#include <optional>

#include "tokenbatch/core/request.h"

namespace tokenbatch::internal {

class AnsweredReturns {
 public:
  // `window`: how long after an answer its clients may return (max_wait; a
  // window <= 0 is taken as 1 ns).
  explicit AnsweredReturns(Duration window);

  // `count` requests were answered at `now` (a batch finished). count <= 0 is
  // ignored.
  void OnAnswered(TimePoint now, std::int64_t count);
  // A request arrived at `arrival`: a return of an open answer, if one is.
  void OnArrival(TimePoint arrival);

  // The returns still expected at `now` from the open answers.
  struct Expected {
    double requests = 0;  // expected returns not arrived yet (fractional)
    TimePoint by{};       // when the latest of them is expected (mean + 2 × deviation)
    TimePoint answered{}; // the latest open answer's time
  };
  // Nothing (nullopt) until a fraction and a delay were learned, or when no
  // open answer expects a return.
  [[nodiscard]] std::optional<Expected> ExpectedAt(TimePoint now) const;

  // The learned estimates (tests and diagnostics): the fraction of answered
  // requests whose client returned within the window, and the returns' delay
  // after their answer, mean and mean deviation in µs. Unset until learned.
  [[nodiscard]] std::optional<double> return_fraction() const { return fraction_; }
  [[nodiscard]] std::optional<double> return_delay_mean_us() const { return delay_mean_us_; }
  [[nodiscard]] double return_delay_deviation_us() const { return delay_deviation_us_; }

  // Answers kept open at most; an older one is retired when a new one comes.
  static constexpr std::size_t kMaxAnswers = 64;

 private:
  struct Answer {
    TimePoint at;
    std::int64_t count;
    std::int64_t returned = 0;
  };
  // Retires the answers whose window ended before `now`.
  void RetireBefore(TimePoint now);
  void Retire(const Answer& answer);
  void LearnDelay(double delay_us);

  Duration window_;
  std::deque<Answer> open_;  // by answer time
  std::optional<double> fraction_;
  std::optional<double> delay_mean_us_;
  double delay_deviation_us_ = 0;
};

}  // namespace tokenbatch::internal
