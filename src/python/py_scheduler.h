// PyScheduler: the C++ Batcher behind tokenbatch.Scheduler, with Python
// objects as its inputs and results.
//
// The Python layer (python/tokenbatch/scheduler.py) parses the options and
// owns the event-loop side; this class counts each input's tokens (with a
// tokenbatch.Tokenizer, a counting callable, or len()), submits it to
// Batcher<PyItem, Outcome>, and runs each batch the Batcher chooses through
// `runner` (the Python function that calls the user's worker) on the
// runtime's worker thread. So batching, bisection of failed batches, the OOM
// budget (AIMD), deadlines, queue limits, oversize policies and the exactly-
// once guarantee are the C++ runtime's own (runtime/batcher.h).
//
// GIL: Submit is called with it and releases it while tokenising and
// queueing; the worker thread takes it only for the runner call and to build
// the Batch; completions reach a CompletionChannel without it (asyncio), or
// take it to resolve a concurrent.futures.Future (threads); Shutdown releases
// it while it waits.
#pragma once

#include <nanobind/nanobind.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "python/completion_channel.h"
#include "python/py_item.h"
#include "tokenbatch/runtime/batcher.h"
#include "tokenbatch/tokenizer/tokenizer.h"

namespace tokenbatch::python {

namespace nb = nanobind;

using PyBatcher = Batcher<PyItem, Outcome>;

// How a PyScheduler counts tokens and calls Python.
struct PySchedulerHooks {
  // Called with one Batch (py_batch.h) per batch; returns a sequence of B
  // results, any of which may be an exception instance. Required.
  nb::object runner;
  // The tokenbatch.Tokenizer counting and encoding text inputs, or None.
  nb::object tokenizer;
  // Without a tokenizer: a callable text -> tokens (int >= 1), or None for len().
  nb::object counter;
  // The split oversize policy: merge(parts, windows) -> one result, where
  // windows are (begin, end) token positions. None otherwise.
  nb::object merge;
  // Exception classes that mean out of memory (a tuple of classes).
  nb::object out_of_memory;
  // The id that pads Batch.input_ids.
  std::int64_t pad_token_id = 0;
};

class PyScheduler {
 public:
  // Starts the Batcher's threads. Throws ValueError for invalid options (the
  // Batcher's InvalidArgument message).
  PyScheduler(const BatcherOptions& options, PySchedulerHooks hooks);
  // Shuts the Batcher down (cancelling what is queued) without the GIL.
  ~PyScheduler();
  PyScheduler(const PyScheduler&) = delete;
  PyScheduler& operator=(const PyScheduler&) = delete;

  // Counts `item` (a str, or a sequence of token ids) and queues it; `future`
  // is resolved exactly once, through `channel` (an asyncio future, resolved
  // on its loop) or directly (channel null: a concurrent.futures.Future).
  // `deadline` is a time.monotonic() value in seconds. Returns the request id
  // for Cancel. Raises (nothing is queued): TypeError for an item that is
  // neither; ValueError for invalid UTF-8, no tokens, or ids out of range;
  // tokenbatch.OversizeError, Overloaded (queue full, with retry_after),
  // ShuttingDown, or the counter's own exception.
  std::uint64_t Submit(nb::handle item, nb::handle future, CompletionChannel* channel, int priority,
                       std::optional<double> deadline);
  // Keeps `channel` (a CompletionChannel) alive until this scheduler is
  // destroyed, after its Batcher: requests hold the channel by pointer.
  void KeepAlive(nb::object channel) { channels_.push_back(std::move(channel)); }
  // Resolves request `id` with Cancelled if it is not resolved yet (a queued
  // one is removed). Returns whether it was still pending.
  bool Cancel(std::uint64_t id);
  // Stops accepting, then drains ("drain") or fails with ShuttingDown
  // ("cancel") what is queued, and waits for the batches in flight. Blocks,
  // without the GIL. Idempotent.
  void Shutdown(const std::string& mode);
  // The garbage collector's slots: a worker that refers back to its scheduler
  // (a bound method of an object holding it) makes a cycle through this C++
  // object, which the collector can break only if it sees these references.
  // Clear shuts the Batcher down first (queued requests fail with
  // ShuttingDown), so no worker thread calls a cleared runner.
  int Traverse(visitproc visit, void* arg) const;
  void Clear();
  // The runtime's metrics (MetricsSnapshot) as a dict of plain values.
  [[nodiscard]] nb::dict Stats() const;
  // Seconds until the queue is likely to have room: the queued batches times
  // the measured mean batch time; 1.0 before any batch has run.
  [[nodiscard]] double RetryAfterSeconds() const;

 private:
  // The Batcher's backend: runs one batch through hooks_.runner.
  absl::StatusOr<std::vector<Outcome>> RunBatch(std::span<const PyItem> items);
  // The ids or the count of `item`, with the GIL held on entry and exit.
  PyItem Count(nb::handle item);
  absl::StatusOr<PyItem> Slice(const PyItem& item, TokenWindow window) const;
  absl::StatusOr<Outcome> Merge(std::span<const Outcome> parts, std::span<const TokenWindow> windows) const;

  PySchedulerHooks hooks_;
  std::vector<nb::object> channels_;  // destroyed after batcher_, which may still push to them
  const tokenizer::Tokenizer* tokenizer_ = nullptr;  // hooks_.tokenizer's, when set
  CostModel cost_model_;
  std::unique_ptr<PyBatcher> batcher_;
};

// Registers PyScheduler (as _Scheduler), CompletionChannel (as
// _CompletionChannel, with its drain) and the error registry in `m`.
void BindScheduler(nb::module_& m);

}  // namespace tokenbatch::python
