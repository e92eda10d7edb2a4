// RequestSlab: stable storage for the Batcher's per-request records, addressed by
// generation-tagged request ids instead of a hash map.
//
// Why: the Batcher looks a request up on every dispatch, completion and cancel.
// With a slab that is one shift and one mask instead of a hash probe, records
// never move (so a producer can fill a record while a worker reads others), and
// freed slots are reused, so memory stays proportional to the requests in flight.
//
// Ids: id = generation << 26 | slot (slot < 2^26), generation >= 1, so 0 is
// never an id and an id that outlived its request (its slot was freed and
// reused) does not match the slot's current id: Find returns nullptr for it. An
// id can only come back after 2^38 reuses of one slot (over 300 days of
// 10,000 requests/s all landing on that slot).
//
// Storage: chunks of kChunkSize records, allocated on demand and never freed
// before the slab; a fixed table of kMaxChunks chunk pointers (so the table never
// reallocates while another thread reads it). Capacity: kMaxChunks·kChunkSize =
// 67,108,864 live records; Allocate fails beyond that.
//
// Thread-safety: none inside. The Batcher calls Allocate and Release under its
// intake mutex and publishes a slot to its workers through the same mutex; a
// record is written only by whoever owns its slot (the submitter until it is
// published, then the worker side). Find reads the slot's id and must be called
// with Allocate/Release excluded (under the intake mutex).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace tokenbatch {

// The slot of request id `id` (its low 26 bits): tables kept beside a slab, such
// as the typed payloads of SlotArray, index by it.
inline constexpr int kRequestSlotBits = 26;
[[nodiscard]] inline std::uint32_t RequestSlot(std::uint64_t id) {
  return static_cast<std::uint32_t>(id & ((std::uint64_t{1} << kRequestSlotBits) - 1));
}

template <typename Record>
class RequestSlab {
 public:
  static constexpr std::uint32_t kChunkBits = 10;
  static constexpr std::uint32_t kChunkSize = 1u << kChunkBits;  // records per chunk
  static constexpr std::uint32_t kMaxChunks = 1u << 16;

  // Record must have a public `std::uint64_t id` member (0 = free).
  RequestSlab() : chunks_(std::make_unique<std::unique_ptr<Record[]>[]>(kMaxChunks)) {}

  // Takes a free slot, stamps it with a fresh id and returns the id; nullopt when
  // every one of the 67M slots is live. The record is default-state except `id`.
  [[nodiscard]] std::optional<std::uint64_t> Allocate() {
    if (free_.empty() && !Grow()) return std::nullopt;
    const std::uint32_t slot = free_.back();
    free_.pop_back();
    std::uint64_t& generation = generations_[slot];
    if (++generation == kGenerationLimit) generation = 1;  // wrapped after 2^38 reuses
    const std::uint64_t id = (generation << kSlotBits) | slot;
    At(slot).id = id;
    return id;
  }

  // Returns the slot of `id` to the free list. The caller has reset the record's
  // contents (id 0); `id` must be live.
  void Release(std::uint64_t id) { free_.push_back(SlotOf(id)); }

  // The live record with this id, or nullptr (never allocated, or already released).
  [[nodiscard]] Record* Find(std::uint64_t id) {
    if (id == 0) return nullptr;  // the id of every free record
    const std::uint32_t slot = SlotOf(id);
    if (slot >= num_chunks_ * kChunkSize) return nullptr;
    Record& r = At(slot);
    return r.id == id ? &r : nullptr;
  }

  // The record of a live id (no check): for callers that know it is live.
  [[nodiscard]] Record& Get(std::uint64_t id) { return At(SlotOf(id)); }

  // Calls f(record) for every live record, in slot order. O(capacity).
  template <typename F>
  void ForEachLive(F&& f) {
    for (std::uint32_t slot = 0; slot < num_chunks_ * kChunkSize; ++slot) {
      if (At(slot).id != 0) f(At(slot));
    }
  }

  // Free slots: 0 means the next Allocate grows the slab by kChunkSize slots
  // (or fails at the 67M limit).
  [[nodiscard]] std::size_t free_slots() const { return free_.size(); }

  // Slots ever created (live + free).
  [[nodiscard]] std::size_t capacity() const { return std::size_t{num_chunks_} * kChunkSize; }

 private:
  static constexpr int kSlotBits = kRequestSlotBits;  // kChunkBits + 16: kMaxChunks · kChunkSize = 2^26 slots
  static constexpr std::uint64_t kGenerationLimit = std::uint64_t{1} << (64 - kSlotBits);
  static std::uint32_t SlotOf(std::uint64_t id) { return RequestSlot(id); }
  Record& At(std::uint32_t slot) { return chunks_[slot >> kChunkBits][slot & (kChunkSize - 1)]; }

  bool Grow() {
    if (num_chunks_ == kMaxChunks) return false;
    chunks_[num_chunks_] = std::make_unique<Record[]>(kChunkSize);
    const std::uint32_t first = num_chunks_ * kChunkSize;
    ++num_chunks_;
    generations_.resize(std::size_t{num_chunks_} * kChunkSize, 0);
    // Highest slot first on the free list, so slots are handed out in ascending order.
    for (std::uint32_t s = first + kChunkSize; s-- > first;) free_.push_back(s);
    return true;
  }

  static_assert(std::uint64_t{kMaxChunks} * kChunkSize == std::uint64_t{1} << kSlotBits);

  std::unique_ptr<std::unique_ptr<Record[]>[]> chunks_;
  std::uint32_t num_chunks_ = 0;
  std::vector<std::uint64_t> generations_;  // per slot; kept apart from the records
  std::vector<std::uint32_t> free_;         // slots, next to hand out at the back
};

}  // namespace tokenbatch
