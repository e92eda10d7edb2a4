#include "core/length_runs.h"

#include <algorithm>
#include <iterator>

namespace tokenbatch::internal {

LengthKey LengthRuns::const_iterator::key() const {
  const Entry& e = run_->second.entries[index_];
  return LengthKey{run_->first, e.key.arrival, e.key.seq};
}

LengthRuns::const_iterator& LengthRuns::const_iterator::operator++() {
  if (++index_ == run_->second.entries.size()) {
    ++run_;
    index_ = run_ == runs_->end() ? 0 : run_->second.head;
  }
  return *this;
}

LengthRuns::const_iterator& LengthRuns::const_iterator::operator--() {
  if (run_ == runs_->end() || index_ == run_->second.head) {
    --run_;
    index_ = run_->second.entries.size() - 1;
  } else {
    --index_;
  }
  return *this;
}

LengthRuns::HeadChange LengthRuns::emplace(const LengthKey& key, RequestId id) {
  Run& run = runs_.try_emplace(key.tokens).first->second;
  auto& entries = run.entries;
  const Entry entry{ArrivalKey{key.arrival, key.seq}, id};
  HeadChange change;
  if (run.size() == 0) {
    entries.clear();
    run.head = 0;
    entries.push_back(entry);
    change.new_head = key;
  } else if (entries.back().key < entry.key) {
    entries.push_back(entry);  // the newest of its length: the common case
  } else {
    const auto first = entries.begin() + static_cast<std::ptrdiff_t>(run.head);
    const auto at = std::lower_bound(first, entries.end(), entry.key, KeyLess());
    if (at == first) {
      change.old_head = LengthKey{key.tokens, first->key.arrival, first->key.seq};
      change.new_head = key;
    }
    entries.insert(at, entry);
  }
  return change;
}

std::size_t LengthRuns::IndexOf(const Run& run, const ArrivalKey& key) {
  const auto& entries = run.entries;
  const auto first = entries.begin() + static_cast<std::ptrdiff_t>(run.head);
  if (first == entries.end()) return kNotFound;
  // The head and the newest are the common cases (packing takes runs from
  // either end); only one in the middle needs the binary search.
  const auto at = first->key == key           ? first
                  : entries.back().key == key ? entries.end() - 1
                                              : std::lower_bound(first, entries.end(), key, KeyLess());
  if (at == entries.end() || at->key != key) return kNotFound;
  return static_cast<std::size_t>(at - entries.begin());
}

bool LengthRuns::erase(const LengthKey& key, HeadChange* change) {
  const auto run_it = runs_.find(key.tokens);
  if (run_it == runs_.end()) return false;
  Run& run = run_it->second;
  auto& entries = run.entries;
  const std::size_t index = IndexOf(run, ArrivalKey{key.arrival, key.seq});
  if (index == kNotFound) return false;
  const auto first = entries.begin() + static_cast<std::ptrdiff_t>(run.head);
  const auto at = entries.begin() + static_cast<std::ptrdiff_t>(index);
  *change = HeadChange{};
  if (at == first) {
    change->old_head = key;
    ++run.head;
    if (run.size() > 0) {
      const Entry& next = entries[run.head];
      change->new_head = LengthKey{key.tokens, next.key.arrival, next.key.seq};
    }
  } else if (at + 1 == entries.end()) {
    entries.pop_back();
  } else {
    entries.erase(at);
  }
  if (run.size() == 0) {
    runs_.erase(run_it);
  } else if (run.head * 2 >= entries.size()) {
    // Drop the removed prefix once it is half the run: amortised O(1).
    entries.erase(entries.begin(), entries.begin() + static_cast<std::ptrdiff_t>(run.head));
    run.head = 0;
  }
  return true;
}

LengthRuns::const_iterator LengthRuns::find(const LengthKey& key) const {
  const auto run = runs_.find(key.tokens);
  if (run == runs_.end()) return end();
  const std::size_t index = IndexOf(run->second, ArrivalKey{key.arrival, key.seq});
  if (index == kNotFound) return end();
  return {run, &runs_, index};
}

std::optional<std::pair<LengthKey, RequestId>> LengthRuns::Head(std::int64_t tokens) const {
  const auto run = runs_.find(tokens);
  if (run == runs_.end()) return std::nullopt;
  const Entry& e = run->second.entries[run->second.head];
  return std::pair{LengthKey{tokens, e.key.arrival, e.key.seq}, e.id};
}

LengthRuns::const_iterator LengthRuns::lower_bound_tokens(std::int64_t tokens) const {
  const auto run = runs_.lower_bound(tokens);
  return {run, &runs_, run == runs_.end() ? 0 : run->second.head};
}

LengthRuns::const_iterator LengthRuns::begin() const {
  return {runs_.begin(), &runs_, runs_.empty() ? 0 : runs_.begin()->second.head};
}

}  // namespace tokenbatch::internal
