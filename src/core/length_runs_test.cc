// LengthRuns against a std::map<LengthKey, RequestId> doing the same operations:
// appends (the common case), out-of-order arrivals within a length, removals at
// either end of a run and in the middle, ordered iteration both ways, and the
// run-head changes the virtual-deadline index relies on.
#include "core/length_runs.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <optional>
#include <random>
#include <vector>

namespace tokenbatch::internal {
namespace {

using std::chrono::microseconds;
using Reference = std::map<LengthKey, RequestId>;

std::vector<std::pair<LengthKey, RequestId>> Forward(const LengthRuns& runs) {
  std::vector<std::pair<LengthKey, RequestId>> out;
  for (auto it = runs.begin(); it != runs.end(); ++it) out.emplace_back(it.key(), it.id());
  return out;
}
std::vector<std::pair<LengthKey, RequestId>> Backward(const LengthRuns& runs) {
  std::vector<std::pair<LengthKey, RequestId>> out;
  for (auto it = runs.end(); it != runs.begin();) {
    --it;
    out.emplace_back(it.key(), it.id());
  }
  return {out.rbegin(), out.rend()};
}
// The oldest request of `tokens` tokens in the reference, if any.
std::optional<LengthKey> HeadOf(const Reference& ref, std::int64_t tokens) {
  auto it = ref.lower_bound(LengthKey{tokens, TimePoint::min(), 0});
  if (it == ref.end() || it->first.tokens != tokens) return std::nullopt;
  return it->first;
}

TEST(LengthRuns, OrdersByLengthThenArrivalAndReportsHeads) {
  LengthRuns runs;
  const TimePoint t0{};
  EXPECT_TRUE(runs.empty());
  auto c = runs.emplace({400, t0 + microseconds(10), 0}, 1);
  ASSERT_TRUE(c.new_head.has_value());
  EXPECT_FALSE(c.old_head.has_value());
  c = runs.emplace({20, t0 + microseconds(20), 1}, 2);
  c = runs.emplace({400, t0 + microseconds(30), 2}, 3);  // appended: no head change
  EXPECT_FALSE(c.new_head || c.old_head);
  c = runs.emplace({400, t0 + microseconds(5), 3}, 4);  // older: the new head
  ASSERT_TRUE(c.old_head && c.new_head);
  EXPECT_EQ(c.old_head->seq, 0u);
  EXPECT_EQ(c.new_head->seq, 3u);
  std::vector<RequestId> ids;
  for (const auto& [key, id] : Forward(runs)) ids.push_back(id);
  EXPECT_EQ(ids, (std::vector<RequestId>{2, 4, 1, 3}));
  EXPECT_EQ(runs.max_tokens(), 400);
  EXPECT_EQ(runs.lower_bound_tokens(21).id(), 4u);
  EXPECT_EQ(runs.lower_bound_tokens(401), runs.end());
  LengthRuns::HeadChange h;
  EXPECT_FALSE(runs.erase({400, t0 + microseconds(6), 3}, &h));  // no such key
  ASSERT_TRUE(runs.erase({400, t0 + microseconds(5), 3}, &h));
  ASSERT_TRUE(h.old_head && h.new_head);
  EXPECT_EQ(h.new_head->seq, 0u);
  ASSERT_TRUE(runs.erase({20, t0 + microseconds(20), 1}, &h));  // its run empties
  EXPECT_TRUE(h.old_head && !h.new_head);
  EXPECT_EQ(runs.begin().id(), 1u);
}

TEST(LengthRuns, MatchesAnOrderedMapUnderRandomOperations) {
  std::mt19937_64 rng(20261129);
  for (int round = 0; round < 40; ++round) {
    LengthRuns runs;
    Reference ref;
    std::uint64_t seq = 0;
    std::int64_t clock_us = 0;
    const int lengths = 1 + static_cast<int>(rng() % (round % 2 ? 4 : 300));
    for (int op = 0; op < 3000; ++op) {
      if (ref.empty() || rng() % 100 < 55) {
        const std::int64_t tokens = 1 + static_cast<std::int64_t>(rng() % lengths);
        // Mostly the newest arrival; sometimes older (a late producer).
        clock_us += static_cast<std::int64_t>(rng() % 3);
        const std::int64_t at = rng() % 10 == 0 ? clock_us - static_cast<std::int64_t>(rng() % 50) : clock_us;
        const LengthKey key{tokens, TimePoint{} + microseconds(at), seq};
        const std::optional<LengthKey> head_before = HeadOf(ref, tokens);
        const LengthRuns::HeadChange c = runs.emplace(key, seq + 1000);
        ref.emplace(key, seq + 1000);
        ++seq;
        const std::optional<LengthKey> head_after = HeadOf(ref, tokens);
        if (head_before != head_after) {
          ASSERT_EQ(c.new_head, head_after);
          ASSERT_EQ(c.old_head, head_before);
        } else {
          ASSERT_FALSE(c.new_head || c.old_head);
        }
      } else {
        // Remove the first, the last, a run's head or a random request.
        auto it = ref.begin();
        const auto pick = rng() % 4;
        if (pick == 1) {
          it = std::prev(ref.end());
        } else if (pick >= 2) {
          std::advance(it, static_cast<long>(rng() % ref.size()));
          if (pick == 2) it = ref.lower_bound(LengthKey{it->first.tokens, TimePoint::min(), 0});
        }
        const LengthKey key = it->first;
        const std::optional<LengthKey> head_before = HeadOf(ref, key.tokens);
        ref.erase(it);
        LengthRuns::HeadChange c;
        ASSERT_TRUE(runs.erase(key, &c));
        const std::optional<LengthKey> head_after = HeadOf(ref, key.tokens);
        if (head_before != head_after) {
          ASSERT_EQ(c.new_head, head_after);
          ASSERT_EQ(c.old_head, head_before);
        } else {
          ASSERT_FALSE(c.new_head || c.old_head);
        }
      }
      if (op % 97 == 0 || ref.size() < 4) {
        const std::vector<std::pair<LengthKey, RequestId>> want(ref.begin(), ref.end());
        ASSERT_EQ(Forward(runs), want) << "round " << round << " op " << op;
        ASSERT_EQ(Backward(runs), want) << "round " << round << " op " << op;
        ASSERT_EQ(runs.max_tokens(), ref.empty() ? 0 : ref.rbegin()->first.tokens);
        ASSERT_EQ(runs.empty(), ref.empty());
        if (!ref.empty()) {
          const auto& [key, id] = *std::next(ref.begin(), static_cast<long>(rng() % ref.size()));
          ASSERT_EQ(runs.find(key).id(), id);
          ASSERT_EQ(runs.find(LengthKey{key.tokens, key.arrival, key.seq + 1000000}), runs.end());
          const std::int64_t bound = 1 + static_cast<std::int64_t>(rng() % (lengths + 1));
          auto want_lb = ref.lower_bound(LengthKey{bound, TimePoint::min(), 0});
          auto got_lb = runs.lower_bound_tokens(bound);
          if (want_lb == ref.end()) {
            ASSERT_EQ(got_lb, runs.end());
          } else {
            ASSERT_EQ(got_lb.id(), want_lb->second);
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace tokenbatch::internal
