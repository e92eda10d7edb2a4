// Fuzz target: the Batcher (runtime/batcher.h) driven by a byte-coded sequence
// of operations, with exactly-once checked at the end. Each operation is one
// byte (its low 3 bits pick it) and the bytes after it are its arguments:
//   0 submit            tokens 1 + b % 48
//   1 submit, poisoned  the backend fails any batch holding it
//   2 submit, deadline  tokens, then a deadline b µs from now
//   3 submit, priority  tokens, then priority b % 5 - 2
//   4 cancel            the b-th request submitted so far
//   5 let workers run   a yield
//   6 shutdown          drain (b even) or cancel queued (b odd); later submits
//                       must be refused (ShuttingDown, or Oversize if too long)
//   7 submit, long      tokens 60 + b % 40 (over max_input_tokens = 64 mostly:
//                       refused as Oversize)
// The backend returns each input's token sum, fails batches with a poisoned
// input, and runs out of memory above 96 tokens, so isolation bisects.
// Checked: every accepted request is resolved exactly once; a refused one
// never; a result is the input's own sum; only a poisoned request gets the
// backend's error, and a poisoned one never succeeds; Cancelled only for a
// request that was cancelled, ShuttingDown only after a cancel-queued
// shutdown, DeadlineExceeded only with a deadline, and no other kind.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "tokenbatch/core/errors.h"
#include "tokenbatch/runtime/batcher.h"

namespace {

using tokenbatch::ErrorKind;
using tokenbatch::GetErrorKind;
using Input = std::vector<int>;  // token values; a negative one poisons the batch
using SumBatcher = tokenbatch::Batcher<Input, long>;

constexpr std::int64_t kOomAboveTokens = 96;

absl::StatusOr<std::vector<long>> SumBackend(std::span<const Input> batch) {
  std::vector<long> out;
  std::int64_t tokens = 0;
  for (const Input& in : batch) {
    for (const int v : in) {
      if (v < 0) return tokenbatch::BackendError("poisoned input");
    }
    tokens += static_cast<std::int64_t>(in.size());
    out.push_back(std::accumulate(in.begin(), in.end(), 0L));
  }
  if (tokens > kOomAboveTokens) return tokenbatch::OutOfMemoryError("over the fuzz backend's memory");
  return out;
}

struct Tracked {
  long expected = 0;
  bool poisoned = false;
  bool has_deadline = false;
  bool accepted = false;
  bool cancel_requested = false;
  std::atomic<int> calls{0};
  std::atomic<int> kind{0};  // ErrorKind of the result
  std::atomic<long> value{0};
};

class Reader {
 public:
  Reader(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  bool done() const { return at_ >= size_; }
  std::uint8_t Next() { return at_ < size_ ? data_[at_++] : 0; }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t at_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tokenbatch::BatcherOptions options;
  options.scheduler.cost_model = tokenbatch::CostModel::Sum();
  options.scheduler.max_batch_tokens = 128;
  options.scheduler.max_input_tokens = 64;
  options.scheduler.max_wait = std::chrono::microseconds(50);
  options.scheduler.max_queue_size = 32;
  options.num_workers = 2;
  auto created = SumBatcher::Create(options, SumBackend);
  FUZZ_CHECK(created.ok());
  std::unique_ptr<SumBatcher> batcher = *std::move(created);

  std::vector<std::unique_ptr<Tracked>> tracked;
  std::vector<tokenbatch::RequestId> ids;  // of accepted requests, for cancel
  std::vector<Tracked*> accepted;          // the same, by index
  bool shut_down = false;
  bool cancel_shutdown = false;  // a shutdown that fails queued requests
  Reader in(data, size);
  while (!in.done() && tracked.size() < 256) {
    const std::uint8_t op = in.Next() & 7;
    if (op == 4) {
      if (!ids.empty()) {
        const std::size_t k = in.Next() % ids.size();
        accepted[k]->cancel_requested = true;
        (void)batcher->Cancel(ids[k]);
      }
      continue;
    }
    if (op == 5) {
      std::this_thread::yield();
      continue;
    }
    if (op == 6) {
      const bool drain = in.Next() % 2 == 0;
      batcher->Shutdown(drain ? tokenbatch::ShutdownMode::kDrain : tokenbatch::ShutdownMode::kCancelQueued);
      cancel_shutdown = cancel_shutdown || (!shut_down && !drain);
      shut_down = true;
      continue;
    }
    const int tokens = op == 7 ? 60 + in.Next() % 40 : 1 + in.Next() % 48;
    auto t = std::make_unique<Tracked>();
    t->poisoned = op == 1;
    Input input(static_cast<std::size_t>(tokens));
    std::iota(input.begin(), input.end(), static_cast<int>(tracked.size()));
    if (t->poisoned) input.back() = -1;
    t->expected = std::accumulate(input.begin(), input.end(), 0L);
    tokenbatch::SubmitOptions submit;
    if (op == 2) {
      submit.deadline = tokenbatch::SteadyClock::now() + std::chrono::microseconds(in.Next());
      t->has_deadline = true;
    }
    if (op == 3) submit.priority = in.Next() % 5 - 2;
    Tracked* raw = t.get();
    auto id = batcher->Submit(std::move(input), tokens, submit, [raw](SumBatcher::Result r) {
      raw->kind.store(static_cast<int>(GetErrorKind(r.status())));
      if (r.ok()) raw->value.store(*r);
      raw->calls.fetch_add(1);
    });
    if (id.ok()) {
      FUZZ_CHECK(!shut_down);
      FUZZ_CHECK(tokens <= options.scheduler.max_input_tokens);
      t->accepted = true;
      ids.push_back(*id);
      accepted.push_back(t.get());
    } else {
      const ErrorKind kind = GetErrorKind(id.status());
      // After a shutdown an input too long for any batch may be refused as
      // Oversize first: refused either way, never queued.
      FUZZ_CHECK(!shut_down || kind == ErrorKind::kShuttingDown || kind == ErrorKind::kOversize);
      FUZZ_CHECK(kind == ErrorKind::kShuttingDown || kind == ErrorKind::kOversize || kind == ErrorKind::kQueueFull);
      FUZZ_CHECK(kind != ErrorKind::kOversize || tokens > options.scheduler.max_input_tokens);
    }
    tracked.push_back(std::move(t));
  }
  batcher.reset();  // drains (shutdown_on_destroy) unless shut down above; joins the workers

  for (const auto& t : tracked) {
    FUZZ_CHECK(t->calls.load() == (t->accepted ? 1 : 0));
    if (!t->accepted) continue;
    const auto kind = static_cast<ErrorKind>(t->kind.load());
    switch (kind) {
      case ErrorKind::kNone:
        FUZZ_CHECK(!t->poisoned);
        FUZZ_CHECK(t->value.load() == t->expected);
        break;
      case ErrorKind::kBackend:
        FUZZ_CHECK(t->poisoned);
        break;
      case ErrorKind::kDeadlineExceeded:
        FUZZ_CHECK(t->has_deadline);
        break;
      case ErrorKind::kCancelled:
        FUZZ_CHECK(t->cancel_requested);
        break;
      case ErrorKind::kShuttingDown:
        FUZZ_CHECK(cancel_shutdown);
        break;
      default:
        FUZZ_CHECK(false && "an error kind no operation causes");
    }
  }
  return 0;
}
