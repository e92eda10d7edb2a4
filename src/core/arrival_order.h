// ArrivalOrder: queued requests of one priority level (or one length bucket) in
// arrival order, the index behind the anchor, fifo packing and max_wait (internal).
//
// Why not a btree: in a running server nearly every request arrives after all
// the queued ones, so the order is an append-only sequence. ArrivalOrder keeps
// those in a sorted vector used as a ring (a head index moves forward as the
// oldest are dispatched) where append is O(1) and a removal is a binary search
// plus a tombstone. Only an arrival older than the newest queued one (a
// caller-supplied timestamp, or two producers racing) goes to a small btree of
// "late" entries. Iteration merges the two in key order.
//
// Costs: insert O(1) amortised (O(log n) if late); erase O(log n); front O(1);
// iteration O(1) per step. Tombstones are compacted once they outnumber the live
// entries, so memory stays O(live). Not thread-safe (the Scheduler's driver
// serialises access).
#pragma once

#include <cstddef>
#include <vector>
#include <iterator>
#include <utility>

#include "absl/container/btree_set.h"
#include "core/request_keys.h"

namespace tokenbatch::internal {

class ArrivalOrder {
 public:
  using value_type = std::pair<ArrivalKey, Slot>;

 private:
  // Orders late entries by key; transparent, so they can be found by key alone.
  struct ByKey {
    using is_transparent = void;
    static const ArrivalKey& KeyOf(const value_type& v) { return v.first; }
    static const ArrivalKey& KeyOf(const ArrivalKey& k) { return k; }
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return KeyOf(a) < KeyOf(b);
    }
  };
  using LateSet = absl::btree_set<value_type, ByKey>;

 public:

  // Adds an entry; `key` must not be present (keys carry a unique seq).
  void emplace(const ArrivalKey& key, const Slot& slot);
  // Removes the entry with `key`; returns how many were removed (0 or 1).
  std::size_t erase(const ArrivalKey& key);

  [[nodiscard]] std::size_t size() const { return live_; }
  [[nodiscard]] bool empty() const { return live_ == 0; }

  // Iterates live entries in key order (oldest first). Invalidated by any change.
  class const_iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = ArrivalOrder::value_type;
    using difference_type = std::ptrdiff_t;
    using pointer = const value_type*;
    using reference = const value_type&;

    reference operator*() const { return from_ring() ? order_->ring_[ring_].entry : *late_; }
    pointer operator->() const { return &**this; }
    const_iterator& operator++();
    bool operator==(const const_iterator& o) const { return ring_ == o.ring_ && late_ == o.late_; }

   private:
    friend class ArrivalOrder;
    const_iterator(const ArrivalOrder* order, std::size_t ring, LateSet::const_iterator late)
        : order_(order), ring_(ring), late_(late) {}
    // Whether the current entry is the ring's (else the late btree's).
    [[nodiscard]] bool from_ring() const;

    const ArrivalOrder* order_;
    std::size_t ring_;  // index of the next live ring entry (ring size: exhausted)
    LateSet::const_iterator late_;
  };
  [[nodiscard]] const_iterator begin() const { return {this, head_, late_.begin()}; }
  [[nodiscard]] const_iterator end() const { return {this, ring_.size(), late_.end()}; }

 private:
  struct RingEntry {
    value_type entry;
    bool live = true;
  };
  // Drops tombstones at both ends (so front and back are live) and compacts
  // when dead entries (before the head or tombstones) outnumber live ones.
  void Trim();

  std::vector<RingEntry> ring_;  // sorted by key; [head_, size) is the ring, both ends live
  std::size_t head_ = 0;
  std::size_t ring_live_ = 0;
  LateSet late_;
  std::size_t live_ = 0;
};

}  // namespace tokenbatch::internal
