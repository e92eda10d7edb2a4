// DeviceMemoryBudget: one device's memory for batches, shared by several models.
//
// Each model batches on its own (its own Scheduler, cost model and
// max_batch_tokens), but their batches run on one device. Budgets that know
// nothing of each other (Infinity's design: one batch size per model) run out of
// memory when two models' large batches coincide. This is the one admission step
// across models: before a model's batch starts, it takes the batch's bytes (its
// memory cost model, from `tokenbatch calibrate`) from this budget, and gives them
// back when the batch ends, so that the bytes in flight, all models together,
// never exceed the limit.
//
// The rule (Allowance(i): the most bytes model i's next batch may take now):
//   held    = Σ_{j≠i} max(0, guaranteed_j − in_flight_j)
//             (the unused guarantees of the others, never lent: memory.min of
//             Linux cgroup v2, "Memory Interface Files", works the same way)
//   free    = limit − Σ_j in_flight_j − held
//   reserve = Σ over waiting models j≠i that come before i of
//             max(0, need_j − max(0, guaranteed_j − in_flight_j))
//   allowance = max(own, free − reserve),  own = max(0, guaranteed_i − in_flight_i)
// Every allowance taken keeps Σ_j max(in_flight_j, guaranteed_j) <= limit, so
// the bytes in flight never pass the limit and free >= own: a model can always
// start a batch within its unused guarantee.
// A model waits (Wait) when its next batch's anchor alone needs more than its
// allowance; `need` is those bytes. Models come in the order of their usage
// beyond their guarantee per unit of weight, max(0, in_flight − guaranteed) /
// weight, lowest first; among equals a waiting model before one that is not,
// and waiting models in the order they began to wait. So the memory a finished
// batch frees goes first to the model furthest below its weighted share: with
// every model busy the bytes in flight tend to the weights' proportions
// (weighted max-min fairness, as weighted fair queueing shares a link), and with
// one model busy it may use everything but the others' guarantees.
// No model waits forever: a waiting model's usage only falls while it waits and
// the others' rises as they start batches, so it comes first after finitely many
// batches, and from then on the memory it needs is reserved for it. Create
// checks that each model's largest batch fits beside the others' guarantees, so
// the reserve can always be met once enough batches end.
//
// Plain data in, decisions out: no clock, no threads, no locks. The runtime
// (runtime/shared_device_memory.h) holds one behind a mutex for every model's
// engine; the simulator drives one on its virtual clock. Not thread-safe; no
// method blocks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tokenbatch {

// One model's claim on the device's memory.
struct ModelMemoryShare {
  std::string name;  // for messages; unique among the models
  // Its share of the memory beyond all guarantees while models contend, against
  // the other models' weights. > 0, finite. Default 1: equal shares.
  double weight = 1.0;
  // Bytes held for this model alone: no other model's batch may use them, even
  // while this model is idle. >= 0. Default 0: none.
  std::int64_t guaranteed_bytes = 0;
  // The most bytes one of its batches can need alone: its longest admissible
  // input as a batch of one under its memory cost model. Create refuses a model
  // whose largest batch does not fit beside the other models' guarantees. >= 0;
  // 0: unchecked.
  std::int64_t largest_batch_bytes = 0;
};

struct DeviceMemoryBudgetOptions {
  // Bytes all models' batches in flight may hold together (their activations;
  // the models' weights are not counted here). > 0.
  std::int64_t limit_bytes = 0;
  std::vector<ModelMemoryShare> models;  // >= 1, indexed by the methods' `model`
};

class DeviceMemoryBudget {
 public:
  // Errors: InvalidArgument naming the model and the numbers: limit_bytes < 1, no
  // models, a duplicate or empty name, a weight that is not a finite number > 0,
  // a negative guarantee or largest batch, guarantees that add up to more than the
  // limit, or a model whose largest batch exceeds the limit less the other
  // models' guarantees ("the memory models do not fit the limit together").
  [[nodiscard]] static absl::StatusOr<DeviceMemoryBudget> Create(DeviceMemoryBudgetOptions options);

  // The most bytes `model`'s next batch may take now (the rule in the overview).
  // O(models).
  [[nodiscard]] std::int64_t Allowance(std::size_t model) const;

  // A batch of `bytes` (>= 0, at most Allowance(model)) starts: counted in flight
  // until Release. Ends the model's wait.
  void Acquire(std::size_t model, std::int64_t bytes);
  // A batch of `bytes` acquired earlier ends.
  void Release(std::size_t model, std::int64_t bytes);

  // `model` cannot start its next batch: its anchor alone needs `need_bytes` (> 0)
  // and its allowance is less. Until it acquires or StopWaiting, the models after
  // it leave it that much (the overview's reserve). A model already waiting keeps
  // its place and takes the new need.
  void Wait(std::size_t model, std::int64_t need_bytes);
  // `model` no longer needs memory (its queue emptied, or it formed no batch).
  void StopWaiting(std::size_t model);

  // The waiting models whose need their allowance now covers: the ones to wake.
  // In model order. O(models²).
  [[nodiscard]] std::vector<std::size_t> Satisfiable() const;

  [[nodiscard]] std::int64_t limit_bytes() const { return options_.limit_bytes; }
  [[nodiscard]] std::size_t models() const { return options_.models.size(); }
  [[nodiscard]] const ModelMemoryShare& share(std::size_t model) const { return options_.models[model]; }
  // Bytes of `model`'s batches in flight.
  [[nodiscard]] std::int64_t in_flight(std::size_t model) const { return state_[model].in_flight; }
  // Bytes of every model's batches in flight.
  [[nodiscard]] std::int64_t in_flight_total() const { return in_flight_total_; }
  // The largest in_flight_total() since Create.
  [[nodiscard]] std::int64_t peak_in_flight_total() const { return peak_in_flight_total_; }
  // The need `model` waits with; unset when it does not wait.
  [[nodiscard]] std::optional<std::int64_t> need(std::size_t model) const;
  // How many times `model` began to wait (Wait while not waiting).
  [[nodiscard]] std::uint64_t waits(std::size_t model) const { return state_[model].waits; }

 private:
  struct ModelState {
    std::int64_t in_flight = 0;
    std::int64_t need = 0;      // > 0 while waiting
    std::uint64_t wait_seq = 0;  // when it began to wait (a counter)
    std::uint64_t waits = 0;
  };
  explicit DeviceMemoryBudget(DeviceMemoryBudgetOptions options);
  // Whether model `j` comes before model `i` (the overview's order).
  [[nodiscard]] bool ComesBefore(std::size_t j, std::size_t i) const;
  // Bytes of `model`'s guarantee not in use.
  [[nodiscard]] std::int64_t UnusedGuarantee(std::size_t model) const;

  DeviceMemoryBudgetOptions options_;
  std::vector<ModelState> state_;
  std::int64_t in_flight_total_ = 0;
  std::int64_t peak_in_flight_total_ = 0;
  std::uint64_t next_wait_seq_ = 1;
};

}  // namespace tokenbatch
