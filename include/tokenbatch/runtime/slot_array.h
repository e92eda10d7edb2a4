// SlotArray: a table beside a RequestSlab, one T per slot, addressed by request id
// (its slot, RequestSlot). Batcher keeps each request's typed payload here while
// the compiled engine keeps the request's record in its slab.
//
// Storage: chunks of RequestSlab's chunk size, allocated by GrowTo and never freed
// before the array, behind a fixed table of chunk pointers, so a T never moves and
// growing never touches a chunk another thread may be using.
//
// Thread-safety: none inside. GrowTo must be serialised with itself; a slot is
// accessed by whoever owns its id (the owner's synchronisation publishes it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "tokenbatch/runtime/request_slab.h"

namespace tokenbatch {

template <typename T>
class SlotArray {
 public:
  static constexpr std::uint32_t kChunkSize = RequestSlab<T>::kChunkSize;
  static constexpr std::uint32_t kMaxChunks = RequestSlab<T>::kMaxChunks;

  SlotArray() : chunks_(std::make_unique<std::unique_ptr<T[]>[]>(kMaxChunks)) {}

  // Makes slots [0, slots) exist (default-constructed Ts). `slots` <= 2^26.
  void GrowTo(std::size_t slots) {
    while (std::size_t{num_chunks_} * kChunkSize < slots && num_chunks_ < kMaxChunks) {
      chunks_[num_chunks_++] = std::make_unique<T[]>(kChunkSize);
    }
  }

  // The T of live request id `id` (its slot must exist).
  [[nodiscard]] T& Get(std::uint64_t id) {
    const std::uint32_t slot = RequestSlot(id);
    return chunks_[slot / kChunkSize][slot % kChunkSize];
  }

 private:
  std::unique_ptr<std::unique_ptr<T[]>[]> chunks_;
  std::uint32_t num_chunks_ = 0;
};

}  // namespace tokenbatch
