// The noop encoder: fixed, checkable vectors without a model, for load tests of
// the serving path and for tests that need no model. Thread-safe like every
// Encoder; Embed blocks only for NoopEncoderOptions::delay.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tokenbatch/backend/encoder.h"

namespace tokenbatch::backend {

struct NoopEncoderOptions {
  int hidden_size = 384;  // H, floats per embedding
  // Sleep per batch, to stand in for a forward pass in tests (e.g. to keep inputs
  // queued). 0 = return at once.
  std::chrono::microseconds delay{0};
  bool normalize = true;  // default when an input does not say
  // >= 0: a batch holding an input with this token id fails with BackendError, so
  // tests can exercise failure isolation and HTTP 500. -1 = never fail.
  std::int32_t fail_on_id = -1;
  // > 0: a batch holding more than this many tokens in total fails with
  // OutOfMemory, as a device that runs out of memory on large batches would;
  // failure isolation then retries its halves (runtime/isolation.h), so only an
  // input longer than this alone fails. 0 = never.
  std::int64_t oom_above_tokens = 0;
  // Non-empty: the encoder is a classifier with these labels (EncoderInfo::
  // classifier, sigmoid activation, token types read); hidden_size is then ignored
  // and each input gets labels.size() values by the formula below, unnormalised,
  // with x_0 + 31·n + 7·(the sum of its token type ids) as the offset, so that a
  // test sees whether a pair's types reached the encoder.
  std::vector<std::string> labels;
  // true (and no labels): a sparse model (EncoderInfo::sparse, pooling
  // "splade") whose weight for id v of an input is the number of times v occurs
  // in it, so that a test can check every (index, value) pair from the ids.
  bool sparse = false;
};

// An encoder that computes nothing: embedding value j of an input with ids
// x_0..x_{n-1} is ((x_0 + 31·n + j) mod 97) / 97 (then truncated to `dimensions`
// and normalised as asked), so distinct inputs get distinct, checkable vectors
// at a cost of O(H) per input. Fails only as NoopEncoderOptions::fail_on_id and
// oom_above_tokens ask. info(): name "noop", no vocabulary or position limit.
// It has no memory to measure (Encoder's ResetPeakMemory and PeakMemoryBytes:
// Unimplemented).
[[nodiscard]] std::unique_ptr<Encoder> MakeNoopEncoder(const NoopEncoderOptions& options);

}  // namespace tokenbatch::backend
