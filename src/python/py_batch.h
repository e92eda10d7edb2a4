// Batch: what the user's worker receives, one batch chosen by the scheduler.
//
// It reads the runtime's inputs in place for as long as the worker runs (the
// Batcher's span, valid until the backend call returns); the arrays are built
// on first access, so a worker that reads only `texts` pays for nothing else.
// After the worker returns, the texts and counts stay readable and the arrays
// already built stay valid, while building one raises RuntimeError.
//
// Shapes (B = len(batch), Lmax = the longest input's tokens, N = Σ tokens):
//   input_ids, attention_mask   int64 [B, Lmax], right-padded with pad_token_id
//                               and 0, as Hugging Face tokenizers pad
//   packed_input_ids            int64 [N]: the inputs back to back, no padding
//   cu_seqlens                  int32 [B + 1]: input i is packed[cu[i]:cu[i+1]]
//                               (flash-attention's varlen convention)
//   token_counts                int64 [B]
// The id arrays need ids: a scheduler with a tokenbatch.Tokenizer, or inputs
// submitted as token ids; otherwise they raise ValueError.
//
// Thread-safety: used by one worker call at a time, with the GIL.
#pragma once

#include <nanobind/nanobind.h>

#include <cstdint>
#include <span>
#include <vector>

#include "python/py_item.h"

namespace tokenbatch::python {

namespace nb = nanobind;

class Batch {
 public:
  Batch(std::span<const PyItem> items, std::int64_t cost, std::int64_t pad_token_id);

  [[nodiscard]] std::size_t size() const { return counts_.size(); }
  [[nodiscard]] const nb::list& texts() const { return texts_; }
  [[nodiscard]] std::int64_t cost() const { return cost_; }
  [[nodiscard]] std::int64_t max_tokens() const { return max_tokens_; }
  [[nodiscard]] std::int64_t sum_tokens() const { return sum_tokens_; }
  [[nodiscard]] nb::object token_counts() const;
  [[nodiscard]] nb::object input_ids();
  [[nodiscard]] nb::object attention_mask();
  [[nodiscard]] nb::object packed_input_ids();
  [[nodiscard]] nb::object cu_seqlens() const;
  // Ends access to the runtime's inputs (called when the worker returns).
  void Expire() { items_ = {}; }

 private:
  // The inputs, or an error saying why they cannot be read.
  std::span<const PyItem> ItemsWithIds(const char* what) const;

  std::span<const PyItem> items_;
  nb::list texts_;
  std::vector<std::int64_t> counts_;
  std::int64_t cost_ = 0;
  std::int64_t pad_token_id_ = 0;
  std::int64_t max_tokens_ = 0;
  std::int64_t sum_tokens_ = 0;
  nb::object input_ids_, attention_mask_, packed_;
};

// Registers the Batch class in `m`.
void BindBatch(nb::module_& m);

}  // namespace tokenbatch::python
