// The length-aware anchor index (PriorityLevel::run_heads, a lazily pruned heap
// over the length runs' heads) against a brute-force minimum of (arrival + slack
// × tokens, seq) over every queued request, under random adds (some arriving
// late, older than queued ones of their length), removals anywhere, and enough
// churn to exercise the heap's rebuild.
#include "core/request_queue.h"

#include <gtest/gtest.h>

#include <chrono>
#include <algorithm>
#include <map>
#include <random>

namespace tokenbatch::internal {
namespace {

using std::chrono::microseconds;

TEST(RequestQueueAnchor, EarliestVirtualDeadlineUnderRandomChurn) {
  const Duration slack = microseconds(100);
  std::mt19937_64 rng(1129);
  for (int round = 0; round < 20; ++round) {
    RequestQueue queue({}, /*index_buckets=*/false, slack);
    struct Queued {
      std::int64_t tokens;
      TimePoint arrival;
      std::uint64_t seq;
    };
    std::map<RequestId, Queued> ref;
    std::uint64_t seq = 0;  // mirrors the queue's enqueue counter
    std::int64_t clock_us = 0;
    const int lengths = round % 2 ? 3 : 200;
    RequestId next_id = 1;
    std::size_t peak = 0;
    for (int op = 0; op < 4000; ++op) {
      if (ref.empty() || rng() % 100 < 52) {
        clock_us += static_cast<std::int64_t>(rng() % 50);
        const std::int64_t at = rng() % 8 == 0 ? clock_us - static_cast<std::int64_t>(rng() % 5000) : clock_us;
        const std::int64_t tokens = 1 + static_cast<std::int64_t>(rng() % lengths);
        const RequestSpec spec{next_id, tokens, TimePoint{} + microseconds(at), 0, std::nullopt};
        ASSERT_TRUE(queue.Add(spec).ok());
        ref[next_id++] = {tokens, spec.arrival, seq++};
        peak = std::max(peak, ref.size());
      } else {
        auto it = std::next(ref.begin(), static_cast<long>(rng() % ref.size()));
        ASSERT_TRUE(queue.Remove(it->first).has_value());
        ref.erase(it);
      }
      if (ref.empty()) {
        ASSERT_EQ(queue.TopLevel(), nullptr);
        continue;
      }
      RequestId want = 0;
      ArrivalKey best{TimePoint::max(), 0};
      for (const auto& [id, q] : ref) {
        const ArrivalKey key{q.arrival + slack * q.tokens, q.seq};
        if (want == 0 || key < best) best = key, want = id;
      }
      const auto [anchor_key, anchor] = queue.TopLevel()->anchor();
      ASSERT_EQ(anchor.id, want) << "round " << round << " op " << op;
      ASSERT_EQ(anchor.tokens, ref[want].tokens);
      ASSERT_EQ(anchor_key.arrival, ref[want].arrival);
      // Stale entries are pruned or rebuilt away: the heap stays O(peak runs).
      ASSERT_LE(queue.TopLevel()->run_heads.size(), 2 * peak + 65);
    }
  }
}

}  // namespace
}  // namespace tokenbatch::internal
