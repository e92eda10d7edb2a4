#include "python/py_tokenizer.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "python/thread_signals.h"

namespace tokenbatch::python {
namespace {

// Below this many texts, encode_batch encodes on the calling thread: a thread
// start costs more than encoding a few short texts.
constexpr std::size_t kTextsPerThread = 16;

[[noreturn]] void RaiseTokenizerError(const absl::Status& status) {
  if (absl::IsNotFound(status)) {
    PyErr_SetString(PyExc_FileNotFoundError, std::string(status.message()).c_str());
    throw nb::python_error();
  }
  throw nb::value_error(std::string(status.message()).c_str());
}

// The UTF-8 bytes of a str, valid while the str lives (its cached UTF-8).
std::string_view Utf8(nb::handle text) {
  if (!PyUnicode_Check(text.ptr())) {
    throw nb::type_error(
        ("texts must be str, not " + nb::cast<std::string>(nb::handle(Py_TYPE(text.ptr())).attr("__name__"))).c_str());
  }
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(text.ptr(), &size);
  if (data == nullptr) throw nb::python_error();
  return {data, static_cast<std::size_t>(size)};
}

}  // namespace

void BindTokenizer(nb::module_& m) {
  nb::class_<tokenizer::Encoding>(m, "Encoding", "One encoded text (Hugging Face tokenizers' Encoding fields).")
      .def_ro("ids", &tokenizer::Encoding::ids, "Token ids, special tokens included when added.")
      .def_ro("offsets", &tokenizer::Encoding::offsets,
              "(begin, end) byte offsets into the UTF-8 text per token; (0, 0) for added special tokens.")
      .def_ro("special_tokens_mask", &tokenizer::Encoding::special,
              "1 for each token the post-processor added ([CLS], [SEP]), else 0.")
      .def("__len__", [](const tokenizer::Encoding& e) { return e.ids.size(); })
      .def("__repr__", [](const tokenizer::Encoding& e) {
        return "Encoding(num_tokens=" + std::to_string(e.ids.size()) + ")";
      });

  nb::class_<PyTokenizer>(m, "Tokenizer",
                          "A Hugging Face tokenizer.json, encoded in C++ with the same ids as `tokenizers`.\n\n"
                          "Thread-safe; every method releases the GIL while it encodes.")
      .def_static(
          "from_file",
          [](const std::string& path) {
            absl::StatusOr<std::unique_ptr<tokenizer::Tokenizer>> t;
            {
              nb::gil_scoped_release release;
              t = tokenizer::Tokenizer::FromFile(path);
            }
            if (!t.ok()) RaiseTokenizerError(t.status());
            return new PyTokenizer(std::move(*t));
          },
          nb::arg("path"), nb::rv_policy::take_ownership,
          "Loads tokenizer.json at `path`. Blocks on the read and parse. Raises FileNotFoundError when it "
          "cannot be read, ValueError naming the file's problem (malformed JSON, an unsupported component).")
      .def(
          "encode",
          [](const PyTokenizer& self, nb::handle text, bool add_special_tokens) {
            std::string_view utf8 = Utf8(text);
            absl::StatusOr<tokenizer::Encoding> e;
            {
              nb::gil_scoped_release release;
              e = self.get().Encode(utf8, {.add_special_tokens = add_special_tokens, .with_offsets = true});
            }
            if (!e.ok()) RaiseTokenizerError(e.status());
            return std::move(*e);
          },
          nb::arg("text"), nb::arg("add_special_tokens") = true,
          "Encodes one str. ValueError for text the tokenizer refuses (4 GiB or more).")
      .def(
          "encode_batch",
          [](const PyTokenizer& self, nb::handle texts, bool add_special_tokens) {
            nb::object sequence = nb::steal(PySequence_Fast(texts.ptr(), "encode_batch takes a sequence of str"));
            if (!sequence.is_valid()) throw nb::python_error();
            const std::size_t n = static_cast<std::size_t>(PySequence_Fast_GET_SIZE(sequence.ptr()));
            std::vector<std::string_view> views(n);
            for (std::size_t i = 0; i < n; ++i) views[i] = Utf8(PySequence_Fast_GET_ITEM(sequence.ptr(), i));
            std::vector<absl::StatusOr<tokenizer::Encoding>> out(n);
            {
              nb::gil_scoped_release release;
              const tokenizer::EncodeOptions options{.add_special_tokens = add_special_tokens, .with_offsets = true};
              const std::size_t threads = std::clamp<std::size_t>(
                  n / kTextsPerThread, 1, std::max(1u, std::thread::hardware_concurrency()));
              auto encode = [&](std::size_t first) {
                for (std::size_t i = first; i < n; i += threads) out[i] = self.get().Encode(views[i], options);
              };
              std::vector<std::jthread> pool;
              {
                const ThreadsWithoutSignals no_signals;
                for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(encode, t);
              }
              encode(0);
            }
            std::vector<tokenizer::Encoding> encodings;
            encodings.reserve(n);
            for (auto& e : out) {
              if (!e.ok()) RaiseTokenizerError(e.status());
              encodings.push_back(std::move(*e));
            }
            return encodings;
          },
          nb::arg("texts"), nb::arg("add_special_tokens") = true,
          "Encodes a sequence of str on up to one thread per core, without the GIL; same order.")
      .def(
          "count",
          [](const PyTokenizer& self, nb::handle text, bool add_special_tokens) {
            std::string_view utf8 = Utf8(text);
            absl::StatusOr<std::size_t> n;
            {
              nb::gil_scoped_release release;
              n = self.get().Count(utf8, add_special_tokens);
            }
            if (!n.ok()) RaiseTokenizerError(n.status());
            return *n;
          },
          nb::arg("text"), nb::arg("add_special_tokens") = true,
          "len(encode(text).ids), without building the ids: the fast count for budgets.")
      .def(
          "decode",
          [](const PyTokenizer& self, const std::vector<std::uint32_t>& ids, bool skip_special_tokens) {
            absl::StatusOr<std::string> text;
            {
              nb::gil_scoped_release release;
              text = self.get().Decode(ids, skip_special_tokens);
            }
            if (!text.ok()) RaiseTokenizerError(text.status());
            return *text;
          },
          nb::arg("ids"), nb::arg("skip_special_tokens") = true,
          "The text of `ids`, as tokenizers' decode. ValueError naming an id outside the vocabulary.")
      .def_prop_ro("vocab_size", [](const PyTokenizer& self) { return self.get().VocabSize(); },
                   "Vocabulary size, added tokens included.")
      .def("token_to_id", [](const PyTokenizer& self, const std::string& token) { return self.get().TokenToId(token); },
           nb::arg("token"), "The id of `token`, or None.");
}

}  // namespace tokenbatch::python
