// tokenbatch.Tokenizer: the exact Hugging Face tokenizer.json encoder
// (tokenizer/tokenizer.h) for Python.
//
// encode, count and decode release the GIL while they run; encode_batch also
// spreads its texts over threads. The ids equal Hugging Face `tokenizers`'
// for the files the C++ tokenizer supports (python/tests/test_tokenizer.py).
// Thread-safety: every method may be called from any thread at once.
#pragma once

#include <nanobind/nanobind.h>

#include <memory>

#include "tokenbatch/tokenizer/tokenizer.h"

namespace tokenbatch::python {

namespace nb = nanobind;

class PyTokenizer {
 public:
  explicit PyTokenizer(std::unique_ptr<tokenizer::Tokenizer> tokenizer) : tokenizer_(std::move(tokenizer)) {}
  [[nodiscard]] const tokenizer::Tokenizer& get() const { return *tokenizer_; }

 private:
  std::unique_ptr<tokenizer::Tokenizer> tokenizer_;
};

// Registers Tokenizer and Encoding in `m`.
void BindTokenizer(nb::module_& m);

}  // namespace tokenbatch::python
