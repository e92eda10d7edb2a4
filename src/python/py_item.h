// What the Python scheduler's Batcher carries: one submitted input (PyItem,
// the Batcher's In) and one worker result (Outcome, its Out). Both are moved
// across the runtime's threads without the GIL; their Python references are
// PyRefs (py_ref.h).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "python/py_ref.h"
#include "service/input_tokens.h"
#include "tokenbatch/core/request.h"

namespace tokenbatch::python {

struct PyItem {
  // The object given to submit (a str, or the token-id sequence), shared by the
  // windows of a split input; for an input counted by characters and then
  // truncated or split, the window's own slice of the text.
  std::shared_ptr<PyRef> text;
  // The token ids, when the scheduler has a tokenizer or ids were submitted;
  // empty when tokens are counted by a callable or by len().
  std::vector<std::int32_t> ids;
  // The special tokens the tokenizer put at each end of `ids`, kept on every
  // window of a truncated or split input (server::WindowIds).
  server::SpecialEnds specials;
  // Tokens this input costs: ids.size(), or the count of the callable or len().
  std::int64_t tokens = 0;
  // The part of the submitted input this item holds: [0, tokens) when whole.
  TokenWindow window;
};

// One item's result from the worker: the object it returned, or an exception
// (raised: from a worker that returned an exception instance for this item,
// or that raised on a batch of this item alone). Shared, because the Batcher
// copies its results (a copy must not touch the reference count without the GIL).
struct Outcome {
  std::shared_ptr<PyRef> value;
  bool raised = false;
};

// An Outcome holding `ref`.
inline Outcome MakeOutcome(PyRef ref, bool raised) { return Outcome{std::make_shared<PyRef>(std::move(ref)), raised}; }

}  // namespace tokenbatch::python
