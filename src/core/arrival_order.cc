#include "core/arrival_order.h"

#include <algorithm>

namespace tokenbatch::internal {

void ArrivalOrder::emplace(const ArrivalKey& key, const Slot& slot) {
  if (ring_.empty() || ring_.back().entry.first < key) {
    ring_.push_back({{key, slot}, true});
    ++ring_live_;
  } else {
    late_.insert({key, slot});
  }
  ++live_;
}

std::size_t ArrivalOrder::erase(const ArrivalKey& key) {
  if (!late_.empty()) {
    if (auto it = late_.find(key); it != late_.end()) {
      late_.erase(it);
      --live_;
      return 1;
    }
  }
  // The oldest is the common case (dispatch in arrival order).
  auto it = ring_.begin() + static_cast<std::ptrdiff_t>(head_);
  if (it == ring_.end() || it->entry.first != key) {
    it = std::lower_bound(it, ring_.end(), key,
                          [](const RingEntry& e, const ArrivalKey& k) { return e.entry.first < k; });
  }
  if (it == ring_.end() || it->entry.first != key || !it->live) return 0;
  it->live = false;
  --ring_live_;
  --live_;
  Trim();
  return 1;
}

void ArrivalOrder::Trim() {
  while (head_ < ring_.size() && !ring_[head_].live) ++head_;
  while (ring_.size() > head_ && !ring_.back().live) ring_.pop_back();
  if (head_ == ring_.size()) {  // the ring is empty: start afresh
    ring_.clear();
    head_ = 0;
    return;
  }
  const std::size_t dead = ring_.size() - ring_live_;  // before the head, or tombstones
  if (dead > 64 && dead > ring_live_) {
    std::erase_if(ring_, [](const RingEntry& e) { return !e.live; });
    head_ = 0;
  }
}

bool ArrivalOrder::const_iterator::from_ring() const {
  if (ring_ == order_->ring_.size()) return false;
  return late_ == order_->late_.end() || order_->ring_[ring_].entry.first < late_->first;
}

ArrivalOrder::const_iterator& ArrivalOrder::const_iterator::operator++() {
  if (from_ring()) {
    const auto& ring = order_->ring_;
    do {
      ++ring_;
    } while (ring_ < ring.size() && !ring[ring_].live);
  } else {
    ++late_;
  }
  return *this;
}

}  // namespace tokenbatch::internal
