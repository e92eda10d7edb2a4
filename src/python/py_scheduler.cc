#include "python/py_scheduler.h"

#include <nanobind/stl/string.h>

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "python/py_batch.h"
#include "python/py_errors.h"
#include "python/py_tokenizer.h"
#include "python/thread_signals.h"
#include "service/input_tokens.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::python {
namespace {

// Texts at least this long are tokenised without the GIL, so that other
// threads (the worker's, other submitters) run meanwhile. A shorter text is
// encoded faster than the GIL changes hands: releasing it with a worker thread
// waiting would hand the GIL over and make this thread wait to get it back.
constexpr Py_ssize_t kReleaseGilFromBytes = 512;

std::string ExceptionText(nb::python_error& e) {
  return absl::StrCat(nb::cast<std::string>(e.type().attr("__name__")), ": ",
                      nb::cast<std::string>(nb::str(e.value())));
}

// A request's callback: resolves `future` (an owned reference) through
// `channel`, or directly when there is none. Two pointers, so that
// std::function keeps it without an allocation.
struct Resolver {
  CompletionChannel* channel;
  PyObject* future;
  void operator()(absl::StatusOr<Outcome> result) const {
    if (channel != nullptr) {
      channel->Push(PyRef::Steal(future), std::move(result));
      return;
    }
    nb::gil_scoped_acquire gil;
    ResolveFuture(nb::handle(future), std::move(result));
    Py_DECREF(future);
  }
};

}  // namespace

PyScheduler::PyScheduler(const BatcherOptions& options, PySchedulerHooks hooks)
    : hooks_(std::move(hooks)), cost_model_(options.scheduler.cost_model) {
  if (!hooks_.tokenizer.is_none()) tokenizer_ = &nb::cast<const PyTokenizer&>(hooks_.tokenizer).get();
  PyBatcher::Hooks batcher_hooks;
  if (options.scheduler.oversize != OversizePolicy::kReject) {
    batcher_hooks.slice = [this](const PyItem& item, TokenWindow window) { return Slice(item, window); };
  }
  if (options.scheduler.oversize == OversizePolicy::kSplit) {
    batcher_hooks.merge = [this](std::span<const Outcome> parts, std::span<const TokenWindow> windows) {
      return Merge(parts, windows);
    };
  }
  absl::StatusOr<std::unique_ptr<PyBatcher>> batcher;
  {
    nb::gil_scoped_release release;
    const ThreadsWithoutSignals no_signals;  // the Batcher's threads (thread_signals.h)
    batcher = PyBatcher::Create(
        options, [this](std::span<const PyItem> items) { return RunBatch(items); }, std::move(batcher_hooks));
  }
  if (!batcher.ok()) throw nb::value_error(std::string(batcher.status().message()).c_str());
  batcher_ = std::move(*batcher);
}

PyScheduler::~PyScheduler() {
  nb::gil_scoped_release release;
  batcher_.reset();
}

PyItem PyScheduler::Count(nb::handle item) {
  PyItem out;
  out.text = std::make_shared<PyRef>(PyRef::Borrow(item.ptr()));
  if (PyUnicode_Check(item.ptr())) {
    if (tokenizer_ != nullptr) {
      Py_ssize_t size = 0;
      const char* utf8 = PyUnicode_AsUTF8AndSize(item.ptr(), &size);
      if (utf8 == nullptr) throw nb::python_error();
      server::EmbedInput input;
      input.text.assign(utf8, static_cast<std::size_t>(size));
      const server::InputTokenLimits limits{.vocab_size = static_cast<std::int64_t>(tokenizer_->VocabSize())};
      absl::StatusOr<server::InputTokens> tokens;
      if (size >= kReleaseGilFromBytes) {
        nb::gil_scoped_release release;
        tokens = server::InputToTokens(*tokenizer_, input, limits);
      } else {
        tokens = server::InputToTokens(*tokenizer_, input, limits);
      }
      if (!tokens.ok()) RaiseStatus(tokens.status());
      out.ids = std::move(tokens->ids);
      out.specials = tokens->specials;
      out.tokens = static_cast<std::int64_t>(out.ids.size());
    } else if (!hooks_.counter.is_none()) {
      nb::object counted = hooks_.counter(item);
      if (!PyLong_Check(counted.ptr())) {
        throw nb::type_error(absl::StrCat("the tokenizer callable must return an int, it returned ",
                                          nb::cast<std::string>(nb::str(counted.type().attr("__name__"))))
                                 .c_str());
      }
      out.tokens = nb::cast<std::int64_t>(counted);
    } else {
      out.tokens = PyUnicode_GetLength(item.ptr());
    }
  } else if (PySequence_Check(item.ptr()) && !PyBytes_Check(item.ptr()) && !PyByteArray_Check(item.ptr())) {
    nb::object sequence = nb::steal(PySequence_Fast(item.ptr(), "token ids must be a sequence"));
    if (!sequence.is_valid()) throw nb::python_error();
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(sequence.ptr());
    PyObject** elements = PySequence_Fast_ITEMS(sequence.ptr());
    const std::int64_t vocab = tokenizer_ != nullptr ? static_cast<std::int64_t>(tokenizer_->VocabSize()) : (1LL << 31);
    out.ids.reserve(static_cast<std::size_t>(n));
    for (Py_ssize_t i = 0; i < n; ++i) {
      const long long id = PyLong_AsLongLong(elements[i]);
      if (id == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        throw nb::type_error(absl::StrCat("token ids must be ints; element ", i, " is ",
                                          nb::cast<std::string>(nb::handle(Py_TYPE(elements[i])).attr("__name__")))
                                 .c_str());
      }
      if (id < 0 || id >= vocab) {
        throw nb::value_error(absl::StrCat("token id ", id, " at position ", i, " is outside [0, ", vocab, ")").c_str());
      }
      out.ids.push_back(static_cast<std::int32_t>(id));
    }
    out.tokens = n;
  } else {
    throw nb::type_error(absl::StrCat("submit takes a str or a sequence of token ids, not ",
                                      nb::cast<std::string>(nb::handle(Py_TYPE(item.ptr())).attr("__name__")))
                             .c_str());
  }
  out.window = {0, out.tokens};
  return out;
}

std::uint64_t PyScheduler::Submit(nb::handle item, nb::handle future, CompletionChannel* channel, int priority,
                                  std::optional<double> deadline) {
  ReleaseDeferredReferences();
  PyItem counted = Count(item);
  SubmitOptions options{.priority = priority};
  if (deadline) {
    options.deadline = TimePoint(std::chrono::duration_cast<Duration>(std::chrono::duration<double>(*deadline)));
  }
  const std::int64_t tokens = counted.tokens;
  // The callback owns a reference to the future from here; a refused request's
  // callback is never called, so its reference is dropped below.
  PyObject* owned_future = nb::borrow(future).release().ptr();
  // With the GIL: the Batcher's Submit only takes its intake lock for a few
  // stores (or slices outside its locks), and no thread holding one of its
  // locks waits for the GIL (PyRef defers), so holding it cannot deadlock,
  // while releasing it would hand it to a waiting worker on every submit.
  const absl::StatusOr<RequestId> id =
      batcher_->Submit(std::move(counted), tokens, options, Resolver{channel, owned_future});
  if (!id.ok()) {
    Py_DECREF(owned_future);
    nb::object exception = StatusToException(id.status());
    if (GetErrorKind(id.status()) == ErrorKind::kQueueFull) exception.attr("retry_after") = RetryAfterSeconds();
    RaiseException(exception);
  }
  return *id;
}

int PyScheduler::Traverse(visitproc visit, void* arg) const {
  for (const nb::object* o : {&hooks_.runner, &hooks_.tokenizer, &hooks_.counter, &hooks_.merge,
                              &hooks_.out_of_memory}) {
    Py_VISIT(o->ptr());
  }
  return 0;
}

void PyScheduler::Clear() {
  Shutdown("cancel");
  hooks_.runner = nb::none();
  hooks_.counter = nb::none();
  hooks_.merge = nb::none();
}

bool PyScheduler::Cancel(std::uint64_t id) { return batcher_->Cancel(id); }

void PyScheduler::Shutdown(const std::string& mode) {
  absl::StatusOr<ShutdownMode> parsed = kShutdownModeNames.Parse(mode);
  if (!parsed.ok()) throw nb::value_error(std::string(parsed.status().message()).c_str());
  nb::gil_scoped_release release;
  batcher_->Shutdown(*parsed);
}

absl::StatusOr<std::vector<Outcome>> PyScheduler::RunBatch(std::span<const PyItem> items) {
  nb::gil_scoped_acquire gil;
  ReleaseDeferredReferences();
  BatchShape shape;
  for (const PyItem& item : items) shape = shape.With(item.tokens);
  auto* batch = new Batch(items, cost_model_.Cost(shape), hooks_.pad_token_id);
  nb::object handle = nb::cast(batch, nb::rv_policy::take_ownership);
  nb::object returned;
  try {
    returned = hooks_.runner(handle);
  } catch (nb::python_error& e) {
    batch->Expire();
    if (PyErr_GivenExceptionMatches(e.type().ptr(), hooks_.out_of_memory.ptr())) {
      return OutOfMemoryError(absl::StrCat("the worker ran out of memory on a batch of ", items.size(),
                                           " inputs (", shape.sum_tokens, " tokens): ", ExceptionText(e)));
    }
    if (items.size() == 1) {
      std::vector<Outcome> out(1);
      out[0] = MakeOutcome(PyRef::Borrow(e.value().ptr()), true);
      return out;
    }
    // Bisected by the runtime (isolation.h) until the input that fails alone
    // gets the worker's own exception.
    return BackendError(absl::StrCat("the worker raised ", ExceptionText(e)));
  }
  batch->Expire();
  std::vector<Outcome> out(items.size());
  const Py_ssize_t length = PySequence_Check(returned.ptr()) ? PySequence_Size(returned.ptr()) : -1;
  if (length != static_cast<Py_ssize_t>(items.size())) {
    PyErr_Clear();
    const std::string what = length < 0 ? absl::StrCat("a ", nb::cast<std::string>(returned.type().attr("__name__")))
                                        : absl::StrCat(length, " results");
    nb::object error = StatusToException(BackendError(absl::StrCat(
        "the worker returned ", what, " for a batch of ", items.size(),
        " inputs; it must return a sequence of one result (or exception) per input, in order")));
    for (Outcome& o : out) o = MakeOutcome(PyRef::Borrow(error.ptr()), true);
    return out;
  }
  for (std::size_t i = 0; i < items.size(); ++i) {
    PyObject* value = PySequence_GetItem(returned.ptr(), static_cast<Py_ssize_t>(i));
    if (value == nullptr) throw nb::python_error();
    out[i] = MakeOutcome(PyRef::Steal(value), PyExceptionInstance_Check(value) != 0);
  }
  return out;
}

absl::StatusOr<PyItem> PyScheduler::Slice(const PyItem& item, TokenWindow window) const {
  PyItem out;
  out.tokens = window.size();
  out.window = window;
  out.specials = item.specials;
  if (!item.ids.empty()) {
    out.ids = server::WindowIds(item.ids, window, item.specials);
    out.text = item.text;
    return out;
  }
  // Counted by len(): the window is characters, so it is the text's own slice.
  // Counted by a callable: no position maps to a token, so nothing can be cut.
  if (!hooks_.counter.is_none()) {
    return InvalidArgumentError(
        "truncating or splitting needs token ids: give the Scheduler a tokenbatch.Tokenizer (a counting "
        "callable cannot say where a token ends)");
  }
  nb::gil_scoped_acquire gil;
  PyObject* slice = PySequence_GetSlice(item.text->get(), window.begin, window.end);
  if (slice == nullptr) {
    PyErr_Clear();
    return InvalidArgumentError("the input cannot be sliced");
  }
  out.text = std::make_shared<PyRef>(PyRef::Steal(slice));
  return out;
}

absl::StatusOr<Outcome> PyScheduler::Merge(std::span<const Outcome> parts, std::span<const TokenWindow> windows) const {
  nb::gil_scoped_acquire gil;
  nb::list values, spans;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].raised) return MakeOutcome(PyRef::Borrow(parts[i].value->get()), true);
    values.append(nb::handle(parts[i].value->get()));
    spans.append(nb::make_tuple(windows[i].begin, windows[i].end));
  }
  try {
    nb::object merged = hooks_.merge(values, spans);
    return MakeOutcome(PyRef::Borrow(merged.ptr()), PyExceptionInstance_Check(merged.ptr()) != 0);
  } catch (nb::python_error& e) {
    return MakeOutcome(PyRef::Borrow(e.value().ptr()), true);
  }
}

}  // namespace tokenbatch::python
