// An Encoder whose calls wait at a gate that the test opens: a test that needs a
// batch to be running (the worker taken, inputs queued behind it) holds it there
// for as long as it checks, instead of relying on a backend delay outlasting
// the check. Test-only (beside the service, whose Encoder it wraps; the
// including test links the backend it wraps).
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "testing/wait_until.h"
#include "tokenbatch/backend/encoder.h"

namespace tokenbatch::testing {

// Counts the calls that reach it and holds each until it is let through: by a
// pass (Let) or for good (Open). Thread-safe.
class Gate {
 public:
  // A call held longer than this was never let through: a test that failed
  // before releasing it. It then goes through, with a failure, so that the
  // service's shutdown ends and the test reports instead of hanging until CTest
  // kills it.
  static constexpr std::chrono::seconds kMaxHold{120};

  // Lets `n` more calls through, held or later ones.
  void Let(int n) {
    std::lock_guard<std::mutex> lock(mu_);
    passes_ += n;
    cv_.notify_all();
  }
  // Lets every held and later call through.
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  // Calls that have reached the gate, held or through.
  int arrived() const {
    std::lock_guard<std::mutex> lock(mu_);
    return arrived_;
  }
  // Waits until `n` calls have reached the gate; false if they have not within `limit`.
  bool WaitForArrivals(int n, std::chrono::milliseconds limit = kWaitLimit) const {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, limit, [&] { return arrived_ >= n; });
  }
  // What a gated call does first: counts itself and waits to be let through.
  void Pass() {
    std::unique_lock<std::mutex> lock(mu_);
    ++arrived_;
    cv_.notify_all();
    if (!cv_.wait_for(lock, kMaxHold, [&] { return open_ || passes_ > 0; })) {
      ADD_FAILURE() << "a backend call waited " << kMaxHold.count() << " s at a gate the test never opened";
      open_ = true;
      cv_.notify_all();
    }
    if (!open_) --passes_;
  }

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  int arrived_ = 0;
  int passes_ = 0;
  bool open_ = false;
};

// `inner` behind `gate`: each Embed passes the gate first.
class GatedEncoder final : public backend::Encoder {
 public:
  GatedEncoder(std::unique_ptr<backend::Encoder> inner, std::shared_ptr<Gate> gate)
      : inner_(std::move(inner)), gate_(std::move(gate)) {}
  absl::StatusOr<std::vector<backend::Embedding>> Embed(
      std::span<const backend::EmbeddingInput> inputs) const override {
    gate_->Pass();
    return inner_->Embed(inputs);
  }
  int hidden_size() const override { return inner_->hidden_size(); }
  backend::EncoderInfo info() const override { return inner_->info(); }
  bool on_cuda() const override { return inner_->on_cuda(); }

 private:
  std::unique_ptr<backend::Encoder> inner_;
  std::shared_ptr<Gate> gate_;
};

}  // namespace tokenbatch::testing
