#include "tokenbatch/core/device_memory_budget.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch {

absl::StatusOr<DeviceMemoryBudget> DeviceMemoryBudget::Create(DeviceMemoryBudgetOptions options) {
  if (options.limit_bytes < 1) {
    return InvalidArgumentError(absl::StrCat("the device memory limit must be >= 1 byte, got ", options.limit_bytes));
  }
  if (options.models.empty()) return InvalidArgumentError("a device memory budget needs at least one model");
  std::set<std::string> names;
  std::int64_t guaranteed = 0;
  for (const ModelMemoryShare& m : options.models) {
    if (m.name.empty()) return InvalidArgumentError("every model sharing the device memory needs a name");
    if (!names.insert(m.name).second) {
      return InvalidArgumentError(absl::StrCat("two models are named \"", m.name, "\": give each its own name"));
    }
    if (!(m.weight > 0) || !std::isfinite(m.weight)) {
      return InvalidArgumentError(
          absl::StrCat("model ", m.name, ": the memory weight must be a finite number > 0, got ", m.weight));
    }
    if (m.guaranteed_bytes < 0 || m.largest_batch_bytes < 0) {
      return InvalidArgumentError(absl::StrCat("model ", m.name, ": guaranteed and largest batch bytes must be >= 0"));
    }
    if (__builtin_add_overflow(guaranteed, m.guaranteed_bytes, &guaranteed) || guaranteed > options.limit_bytes) {
      return InvalidArgumentError(absl::StrCat("the models' guaranteed memory adds up to more than the limit of ",
                                               options.limit_bytes, " bytes"));
    }
  }
  for (const ModelMemoryShare& m : options.models) {
    // What the others' guarantees leave this model when nothing else runs.
    const std::int64_t room = options.limit_bytes - (guaranteed - m.guaranteed_bytes);
    if (m.largest_batch_bytes > room) {
      return InvalidArgumentError(absl::StrCat(
          "the memory models do not fit the limit together: model ", m.name, "'s longest input alone needs ",
          m.largest_batch_bytes, " bytes, and the limit of ", options.limit_bytes,
          " bytes less the other models' guarantees leaves it ", room,
          " (raise the limit, lower its longest input or the others' guarantees)"));
    }
  }
  return DeviceMemoryBudget(std::move(options));
}

DeviceMemoryBudget::DeviceMemoryBudget(DeviceMemoryBudgetOptions options)
    : options_(std::move(options)), state_(options_.models.size()) {}

std::int64_t DeviceMemoryBudget::UnusedGuarantee(std::size_t model) const {
  return std::max<std::int64_t>(0, options_.models[model].guaranteed_bytes - state_[model].in_flight);
}

bool DeviceMemoryBudget::ComesBefore(std::size_t j, std::size_t i) const {
  auto usage = [&](std::size_t m) {
    const double beyond = static_cast<double>(
        std::max<std::int64_t>(0, state_[m].in_flight - options_.models[m].guaranteed_bytes));
    return beyond / options_.models[m].weight;
  };
  const double uj = usage(j), ui = usage(i);
  if (uj != ui) return uj < ui;
  const bool wj = state_[j].need > 0, wi = state_[i].need > 0;
  if (wj != wi) return wj;
  if (wj) return state_[j].wait_seq < state_[i].wait_seq;
  return false;
}

std::int64_t DeviceMemoryBudget::Allowance(std::size_t model) const {
  // Each term is at most the limit, whose sum over models may pass 2^63.
  auto add = [](std::int64_t& sum, std::int64_t x) {
    if (__builtin_add_overflow(sum, x, &sum)) sum = std::numeric_limits<std::int64_t>::max();
  };
  std::int64_t held = 0, reserve = 0;
  for (std::size_t j = 0; j < state_.size(); ++j) {
    if (j == model) continue;
    const std::int64_t unused = UnusedGuarantee(j);
    add(held, unused);
    if (state_[j].need > 0 && ComesBefore(j, model)) add(reserve, std::max<std::int64_t>(0, state_[j].need - unused));
  }
  const std::int64_t free = options_.limit_bytes - in_flight_total_ - held;
  // Its own unused guarantee is its own whatever the others wait for.
  return std::max({std::int64_t{0}, UnusedGuarantee(model), free - reserve});
}

void DeviceMemoryBudget::Acquire(std::size_t model, std::int64_t bytes) {
  StopWaiting(model);
  state_[model].in_flight += bytes;
  in_flight_total_ += bytes;
  peak_in_flight_total_ = std::max(peak_in_flight_total_, in_flight_total_);
}

void DeviceMemoryBudget::Release(std::size_t model, std::int64_t bytes) {
  state_[model].in_flight -= bytes;
  in_flight_total_ -= bytes;
}

void DeviceMemoryBudget::Wait(std::size_t model, std::int64_t need_bytes) {
  ModelState& s = state_[model];
  if (s.need == 0) {
    s.wait_seq = next_wait_seq_++;
    ++s.waits;
  }
  s.need = std::max<std::int64_t>(1, need_bytes);
}

void DeviceMemoryBudget::StopWaiting(std::size_t model) { state_[model].need = 0; }

std::vector<std::size_t> DeviceMemoryBudget::Satisfiable() const {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < state_.size(); ++i) {
    if (state_[i].need > 0 && state_[i].need <= Allowance(i)) out.push_back(i);
  }
  return out;
}

std::optional<std::int64_t> DeviceMemoryBudget::need(std::size_t model) const {
  if (state_[model].need == 0) return std::nullopt;
  return state_[model].need;
}

}  // namespace tokenbatch
