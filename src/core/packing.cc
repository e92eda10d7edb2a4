#include "core/packing.h"

#include <cstdlib>
#include <iterator>

namespace tokenbatch::internal {
namespace {

// Accumulates a batch under the limits.
class BatchBuilder {
 public:
  explicit BatchBuilder(const BatchLimits& limits) : limits_(limits) {}

  // The anchor goes in unconditionally (see Scheduler: it must not starve).
  void AddAnchor(const Slot& r) {
    if (limits_.memory_model != nullptr) {
      result_.anchor_memory_bytes = limits_.memory_model->SingleCost(r.tokens);
      result_.memory_bytes = result_.anchor_memory_bytes;
    }
    Add(r, limits_.cost_model->SingleCost(r.tokens));
  }

  // Adds `r` if the batch stays within budget (and the memory allowance); false
  // (and budget_full, memory_full) otherwise.
  bool TryAdd(const Slot& r) {
    const BatchShape shape = result_.shape.With(r.tokens);
    const std::int64_t cost = limits_.cost_model->Cost(shape);
    if (cost > limits_.budget) {
      result_.budget_full = true;
      return false;
    }
    if (limits_.memory_model != nullptr) {
      const std::int64_t bytes = limits_.memory_model->Cost(shape);
      if (bytes > limits_.memory_allowance) {
        result_.budget_full = true;
        // A candidate no longer than the batch's longest adds only a row, which
        // any other such candidate adds too; a longer one may fail where a
        // shorter one still fits.
        memory_full_ = memory_full_ || r.tokens <= result_.shape.max_tokens;
        return false;
      }
      result_.memory_bytes = bytes;
    }
    Add(r, cost);
    return true;
  }

  // A candidate no longer than the batch's longest did not fit the memory
  // allowance: none will, since a memory model's bytes grow with B.
  [[nodiscard]] bool memory_full() const { return memory_full_; }

  // Whether adding `r` keeps the batch's padding efficiency at or above the floor.
  [[nodiscard]] bool KeepsPaddingEfficiency(const Slot& r) const {
    return limits_.min_padding_efficiency <= 0 ||
           result_.shape.With(r.tokens).padding_efficiency() >= limits_.min_padding_efficiency;
  }

  [[nodiscard]] bool size_full() const { return result_.size_full; }
  [[nodiscard]] const BatchShape& shape() const { return result_.shape; }
  PackResult Finish() { return std::move(result_); }

 private:
  void Add(const Slot& r, std::int64_t cost) {
    result_.ids.push_back(r.id);
    result_.shape = result_.shape.With(r.tokens);
    result_.cost = cost;
    result_.size_full = result_.shape.size >= limits_.max_batch_size;
  }

  const BatchLimits& limits_;
  PackResult result_;
  bool memory_full_ = false;
};

PackResult PackInOrder(const ArrivalIndex& order, const BatchLimits& limits) {
  BatchBuilder builder(limits);
  auto it = order.begin();
  builder.AddAnchor(it->second);
  for (++it; it != order.end() && !builder.size_full(); ++it) {
    if (!builder.TryAdd(it->second)) break;
  }
  return builder.Finish();
}

}  // namespace

PackResult PackFifo(const PriorityLevel& level, const BatchLimits& limits) {
  return PackInOrder(level.by_arrival, limits);
}

PackResult PackBucket(const ArrivalIndex& bucket, const BatchLimits& limits) {
  return PackInOrder(bucket, limits);
}

PackResult PackLengthAware(const PriorityLevel& level, const BatchLimits& limits,
                           std::int64_t lookahead) {
  BatchBuilder builder(limits);
  const auto [anchor_key, anchor] = level.anchor();
  builder.AddAnchor(anchor);
  const auto at = level.by_length.find(LengthKey{anchor.tokens, anchor_key.arrival, anchor_key.seq});
  // Two cursors walk outwards from the anchor in length order: `longer` up, and
  // `shorter` down (it points one past the next shorter candidate).
  auto longer = at;
  ++longer;
  auto shorter = at;
  bool longer_open = longer != level.by_length.end();
  bool shorter_open = shorter != level.by_length.begin();
  // A longer candidate that does not fit means no longer one will (cost is
  // monotone in Lmax and Σ). A shorter one that does not fit rules out the rest
  // only when its cost does not depend on its own length (padded, memory); under
  // `sum` an even shorter request may still fit, so keep looking.
  const bool shorter_cost_depends_on_length = limits.cost_model->kind() == CostModelKind::kSum;
  auto slot_of = [](const LengthIndex::const_iterator& e) { return Slot{e.id(), e.tokens()}; };
  for (std::int64_t examined = 0; examined < lookahead && !builder.size_full() && !builder.memory_full() &&
                                  (longer_open || shorter_open);
       ++examined) {
    bool take_longer = longer_open;
    if (longer_open && shorter_open) {
      const LengthKey up = longer.key();
      auto below = shorter;
      const LengthKey down = (--below).key();
      const std::int64_t up_gap = up.tokens - anchor.tokens;
      const std::int64_t down_gap = anchor.tokens - down.tokens;
      take_longer = up_gap < down_gap ||
                    (up_gap == down_gap && ArrivalKey{up.arrival, up.seq} < ArrivalKey{down.arrival, down.seq});
    }
    // The padding-efficiency floor closes a direction for good: a candidate
    // further from the anchor's length only pads more.
    if (take_longer) {
      if (!builder.KeepsPaddingEfficiency(slot_of(longer)) || !builder.TryAdd(slot_of(longer))) {
        longer_open = false;
      } else {
        longer_open = ++longer != level.by_length.end();
      }
    } else {
      --shorter;
      if (!builder.KeepsPaddingEfficiency(slot_of(shorter))) {
        shorter_open = false;
      } else {
        const bool added = builder.TryAdd(slot_of(shorter));
        if (!added && shorter_cost_depends_on_length) {
          // Under `sum` only a request of at most the remaining room can fit, and
          // every request from `shorter` up is longer than that: jump to the
          // longest that can, in O(log n), instead of using up the lookahead one
          // failing candidate at a time.
          const std::int64_t room = limits.budget - builder.shape().sum_tokens;
          shorter = level.by_length.lower_bound_tokens(room + 1);
        }
        shorter_open = (added || shorter_cost_depends_on_length) && shorter != level.by_length.begin();
      }
    }
  }
  return builder.Finish();
}

}  // namespace tokenbatch::internal
