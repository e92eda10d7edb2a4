// LengthRuns: queued requests of one priority level in length order (tokens,
// then arrival, then seq), the index behind length-aware packing (internal).
//
// Why not one btree over every request: a batch is packed from requests of the
// same or nearby lengths, and real traffic repeats lengths (a 20-token query
// template, a chunker's fixed-size passages). So the index is a btree over the
// distinct queued lengths, each holding a run: that length's requests as a
// vector sorted by arrival, with a head offset. An arrival is nearly always the
// newest of its length, so adding it is an append; taking a run's oldest or
// newest request is O(1); a removal from the middle (cancel, deadline) shifts
// the rest of its run. With all lengths distinct it degrades to one btree entry
// per request, as before.
//
// Costs (n queued, d distinct lengths, k = the run's size): insert O(log d) plus
// O(1) amortised if newest of its length (O(k) if not); erase O(log d + log k)
// plus O(1) at either end of the run (O(k) in the middle); iteration O(1)
// amortised per step. Not thread-safe (the Scheduler's driver serialises access).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>

#include "absl/container/btree_map.h"
#include "absl/container/inlined_vector.h"
#include "core/request_keys.h"

namespace tokenbatch::internal {

class LengthRuns {
  struct Entry {
    ArrivalKey key;
    RequestId id;
  };
  // One length's requests, sorted by key; entries before `head` are gone.
  struct Run {
    absl::InlinedVector<Entry, 1> entries;
    std::size_t head = 0;
    [[nodiscard]] std::size_t size() const { return entries.size() - head; }
  };
  using Runs = absl::btree_map<std::int64_t, Run>;
  struct KeyLess {
    bool operator()(const Entry& a, const ArrivalKey& k) const { return a.key < k; }
  };

 public:
  // A position in length order. Bidirectional; invalidated by any change.
  class const_iterator {
   public:
    // The request's length key and id. Requires a dereferenceable iterator.
    [[nodiscard]] LengthKey key() const;
    [[nodiscard]] RequestId id() const { return run_->second.entries[index_].id; }
    [[nodiscard]] std::int64_t tokens() const { return run_->first; }
    const_iterator& operator++();
    const_iterator& operator--();
    bool operator==(const const_iterator& o) const { return run_ == o.run_ && index_ == o.index_; }

   private:
    friend class LengthRuns;
    const_iterator(Runs::const_iterator run, const Runs* runs, std::size_t index)
        : run_(run), runs_(runs), index_(index) {}
    Runs::const_iterator run_;
    const Runs* runs_;
    std::size_t index_;  // into run_->second.entries; 0 at end()
  };

  // What an emplace or erase did to the head (oldest request) of the run it
  // touched, for indexes that hold run heads only (the virtual-deadline anchor).
  struct HeadChange {
    std::optional<LengthKey> old_head;  // the head that stopped being one, if any
    std::optional<LengthKey> new_head;  // the request that became the head, if any
  };
  // Adds a request; `key` must not be present (keys carry a unique seq).
  HeadChange emplace(const LengthKey& key, RequestId id);
  // Removes the request with `key`; false if it is not present.
  bool erase(const LengthKey& key, HeadChange* change);
  // The request with `key`, or end().
  [[nodiscard]] const_iterator find(const LengthKey& key) const;
  // The first request of at least `tokens` tokens, or end().
  [[nodiscard]] const_iterator lower_bound_tokens(std::int64_t tokens) const;

  // The head (oldest request) of the run of `tokens`-token requests: its key and
  // id; nullopt if none is queued. O(log d).
  [[nodiscard]] std::optional<std::pair<LengthKey, RequestId>> Head(std::int64_t tokens) const;
  // Calls f(const LengthKey&) for each run's head, shortest length first. O(d).
  template <typename F>
  void ForEachHead(F f) const {
    for (const auto& [tokens, run] : runs_) {
      const Entry& e = run.entries[run.head];
      f(LengthKey{tokens, e.key.arrival, e.key.seq});
    }
  }
  // The number of distinct queued lengths (d).
  [[nodiscard]] std::size_t runs() const { return runs_.size(); }

  [[nodiscard]] const_iterator begin() const;
  [[nodiscard]] const_iterator end() const { return {runs_.end(), &runs_, 0}; }
  [[nodiscard]] bool empty() const { return runs_.empty(); }
  // The longest queued length; 0 if empty.
  [[nodiscard]] std::int64_t max_tokens() const { return runs_.empty() ? 0 : runs_.rbegin()->first; }

 private:
  static constexpr std::size_t kNotFound = static_cast<std::size_t>(-1);
  // The index of `key` in run.entries (at or after its head), or kNotFound.
  static std::size_t IndexOf(const Run& run, const ArrivalKey& key);
  Runs runs_;
};

}  // namespace tokenbatch::internal
