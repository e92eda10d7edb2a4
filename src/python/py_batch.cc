#include "python/py_batch.h"

#include <nanobind/ndarray.h>

#include <algorithm>
#include <cstring>

namespace tokenbatch::python {
namespace {

// A new, uninitialised numpy array of `shape` that owns its buffer.
template <typename T>
nb::object NewArray(std::initializer_list<std::size_t> shape, T** data) {
  std::size_t n = 1;
  for (std::size_t d : shape) n *= d;
  T* buffer = new T[std::max<std::size_t>(n, 1)];
  nb::capsule owner(buffer, [](void* p) noexcept { delete[] static_cast<T*>(p); });
  *data = buffer;
  return nb::cast(nb::ndarray<nb::numpy, T>(buffer, shape, owner));
}

// int64 [rows, cols]: row i's first lengths[i] values written by write(i, row),
// the rest `pad`.
template <typename Write>
nb::object PaddedRows(const std::vector<std::int64_t>& lengths, std::int64_t cols, std::int64_t pad, Write write) {
  const std::size_t rows = lengths.size();
  const auto width = static_cast<std::size_t>(cols);
  std::int64_t* data = nullptr;
  nb::object array = NewArray<std::int64_t>({rows, width}, &data);
  for (std::size_t i = 0; i < rows; ++i) {
    std::int64_t* row = data + i * width;
    write(i, row);
    std::fill(row + lengths[i], row + width, pad);
  }
  return array;
}

}  // namespace

Batch::Batch(std::span<const PyItem> items, std::int64_t cost, std::int64_t pad_token_id)
    : items_(items), cost_(cost), pad_token_id_(pad_token_id) {
  counts_.reserve(items.size());
  for (const PyItem& item : items) {
    texts_.append(nb::handle(item.text->get()));
    counts_.push_back(item.tokens);
    max_tokens_ = std::max(max_tokens_, item.tokens);
    sum_tokens_ += item.tokens;
  }
}

std::span<const PyItem> Batch::ItemsWithIds(const char* what) const {
  if (items_.empty() && !counts_.empty()) {
    throw nb::builtin_exception(
        nb::exception_type::runtime_error,
        (std::string("Batch.") + what + " was first read after the worker returned; read it inside the worker").c_str());
  }
  for (const PyItem& item : items_) {
    if (item.ids.empty()) {
      throw nb::value_error((std::string("Batch.") + what +
                             " needs token ids: give the Scheduler a tokenbatch.Tokenizer, or submit token ids "
                             "(this one counts tokens with a callable or len())")
                                .c_str());
    }
  }
  return items_;
}

nb::object Batch::token_counts() const {
  std::int64_t* data = nullptr;
  nb::object array = NewArray<std::int64_t>({counts_.size()}, &data);
  std::copy(counts_.begin(), counts_.end(), data);
  return array;
}

nb::object Batch::input_ids() {
  if (!input_ids_.is_valid()) {
    std::span<const PyItem> items = ItemsWithIds("input_ids");
    input_ids_ = PaddedRows(counts_, max_tokens_, pad_token_id_, [&](std::size_t i, std::int64_t* row) {
      std::copy(items[i].ids.begin(), items[i].ids.end(), row);
    });
  }
  return input_ids_;
}

nb::object Batch::attention_mask() {
  if (!attention_mask_.is_valid()) {
    ItemsWithIds("attention_mask");
    attention_mask_ = PaddedRows(counts_, max_tokens_, 0, [&](std::size_t i, std::int64_t* row) {
      std::fill(row, row + counts_[i], 1);
    });
  }
  return attention_mask_;
}

nb::object Batch::packed_input_ids() {
  if (packed_.is_valid()) return packed_;
  std::span<const PyItem> items = ItemsWithIds("packed_input_ids");
  std::int64_t* data = nullptr;
  packed_ = NewArray<std::int64_t>({static_cast<std::size_t>(sum_tokens_)}, &data);
  for (const PyItem& item : items) data = std::copy(item.ids.begin(), item.ids.end(), data);
  return packed_;
}

nb::object Batch::cu_seqlens() const {
  std::int32_t* data = nullptr;
  nb::object array = NewArray<std::int32_t>({counts_.size() + 1}, &data);
  data[0] = 0;
  for (std::size_t i = 0; i < counts_.size(); ++i) data[i + 1] = data[i] + static_cast<std::int32_t>(counts_[i]);
  return array;
}

void BindBatch(nb::module_& m) {
  nb::class_<Batch>(m, "Batch",
                    "One batch chosen by the scheduler, as the worker receives it: B inputs and their tokens.\n\n"
                    "Iterating, indexing and len() go over the submitted texts (or token-id lists). The arrays "
                    "are built on first access, inside the worker; see the properties for their shapes.")
      .def("__len__", &Batch::size, "B, the number of inputs.")
      .def("__iter__", [](const Batch& b) -> nb::object { return b.texts().attr("__iter__")(); }, "The submitted inputs, in order.")
      .def("__getitem__", [](const Batch& b, nb::handle i) -> nb::object { return nb::steal(PyObject_GetItem(b.texts().ptr(), i.ptr())); }, "The i-th submitted input.")
      .def_prop_ro("texts", &Batch::texts,
                   "The submitted inputs (str, or the token-id sequence given), in batch order. A truncated or "
                   "split input's text is the whole text when ids are in use (its window is in input_ids), "
                   "or the window's characters when tokens are counted by len().")
      .def_prop_ro("cost", &Batch::cost,
                   "The batch's cost in the cost model's unit (tokens; padded tokens B x Lmax; or bytes).")
      .def_prop_ro("max_tokens", &Batch::max_tokens, "Lmax, tokens of the longest input.")
      .def_prop_ro("sum_tokens", &Batch::sum_tokens, "Σ tokens of all inputs.")
      .def_prop_ro("token_counts", &Batch::token_counts, "int64 numpy array [B]: each input's tokens.")
      .def_prop_ro("input_ids", &Batch::input_ids,
                   "int64 numpy array [B, Lmax], right-padded with the scheduler's pad_token_id. ValueError "
                   "without ids (a scheduler counting with a callable or len()).")
      .def_prop_ro("attention_mask", &Batch::attention_mask,
                   "int64 numpy array [B, Lmax]: 1 for each input's tokens, 0 for padding.")
      .def_prop_ro("packed_input_ids", &Batch::packed_input_ids,
                   "int64 numpy array [Σ tokens]: the inputs' ids back to back, for padding-free models.")
      .def_prop_ro("cu_seqlens", &Batch::cu_seqlens,
                   "int32 numpy array [B + 1]: input i is packed_input_ids[cu_seqlens[i]:cu_seqlens[i + 1]].");
}

}  // namespace tokenbatch::python
