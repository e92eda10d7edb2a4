// The bindings of PyScheduler, CompletionChannel and the error registry, and
// PyScheduler's metrics as Python values.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <algorithm>

#include "backend/calibration_file.h"
#include "python/py_errors.h"
#include "python/py_scheduler.h"
#include "tokenbatch/core/enum_names.h"

namespace tokenbatch::python {
namespace {

nb::dict HistogramSummary(const Histogram& h) {
  nb::dict d;
  d["count"] = h.count();
  d["mean"] = h.mean();
  d["p50"] = h.QuantileUpperBound(0.5);
  d["p90"] = h.QuantileUpperBound(0.9);
  d["p99"] = h.QuantileUpperBound(0.99);
  return d;
}

nb::dict CountsByName(const std::map<std::string, std::uint64_t>& counts) {
  nb::dict d;
  for (const auto& [name, count] : counts) d[nb::str(name.c_str(), name.size())] = count;
  return d;
}

// Takes what the channel holds and resolves each future, on the loop's thread.
void Drain(CompletionChannel& channel) {
  ReleaseDeferredReferences();
  std::vector<CompletionChannel::Completion> taken = channel.Take();
  for (CompletionChannel::Completion& c : taken) ResolveFuture(nb::handle(c.future.get()), std::move(c.result));
}

BatcherOptions MakeOptions(const std::string& cost_model, double c0, double c1, double c2,
                           std::int64_t max_batch_tokens, std::int64_t max_batch_size, double max_wait_s,
                           const std::string& packing, const std::string& batch_window, const std::string& oversize,
                           std::int64_t max_input_tokens, std::int64_t split_overlap_tokens,
                           std::size_t max_queue_size, std::int64_t max_queued_tokens, int num_workers) {
  auto check = [](const auto& parsed) {
    if (!parsed.ok()) throw nb::value_error(std::string(parsed.status().message()).c_str());
    return *parsed;
  };
  BatcherOptions o;
  SchedulerOptions& s = o.scheduler;
  s.cost_model = cost_model == "memory" ? check(CostModel::Memory(c0, c1, c2)) : check(CostModel::Parse(cost_model));
  s.max_batch_tokens = max_batch_tokens;
  s.max_batch_size = max_batch_size;
  if (!(max_wait_s >= 0) || max_wait_s > 3600) {
    throw nb::value_error(("max_wait must be in [0, 3600] seconds, got " + std::to_string(max_wait_s)).c_str());
  }
  s.max_wait = std::chrono::duration_cast<Duration>(std::chrono::duration<double>(max_wait_s));
  s.policy = check(kPackingPolicyNames.Parse(packing));
  s.adaptive_wait = check(kBatchWindowNames.Parse(batch_window)) == BatchWindow::kAdaptive;
  s.oversize = check(kOversizePolicyNames.Parse(oversize));
  s.max_input_tokens = max_input_tokens;
  s.split_overlap_tokens = split_overlap_tokens;
  s.max_queue_size = max_queue_size;
  s.max_queued_tokens = max_queued_tokens;
  o.num_workers = num_workers;
  // A Scheduler dropped without close() must not run what is queued on a loop
  // that may be gone: its queue is failed with ShuttingDown.
  o.shutdown_on_destroy = ShutdownMode::kCancelQueued;
  const absl::Status valid = Validate(s);
  if (!valid.ok()) throw nb::value_error(std::string(valid.message()).c_str());
  return o;
}

int TraverseScheduler(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  if (!nb::inst_ready(self)) return 0;
  return nb::inst_ptr<PyScheduler>(self)->Traverse(visit, arg);
}

int ClearScheduler(PyObject* self) {
  if (nb::inst_ready(self)) nb::inst_ptr<PyScheduler>(self)->Clear();
  return 0;
}

PyType_Slot kSchedulerSlots[] = {{Py_tp_traverse, reinterpret_cast<void*>(TraverseScheduler)},
                                 {Py_tp_clear, reinterpret_cast<void*>(ClearScheduler)},
                                 {0, nullptr}};

}  // namespace

nb::dict PyScheduler::Stats() const {
  const MetricsSnapshot m = batcher_->metrics();
  nb::dict d;
  d["requests_submitted"] = m.requests_submitted;
  d["requests_succeeded"] = m.requests_succeeded;
  d["failures"] = CountsByName(m.failures_by_kind);
  d["batches"] = m.batches_dispatched;
  d["dispatch_reasons"] = CountsByName(m.dispatch_reasons);
  d["queue_requests"] = m.queue_requests;
  d["queue_tokens"] = m.queue_tokens;
  d["max_batch_tokens"] = m.max_batch_tokens;
  d["effective_budget"] = m.effective_budget;
  d["isolation_retries"] = m.isolation_retries;
  d["oom_events"] = m.oom_events;
  d["batch_size"] = HistogramSummary(m.batch_size);
  d["batch_tokens"] = HistogramSummary(m.batch_tokens);
  d["batch_cost"] = HistogramSummary(m.batch_cost);
  d["padding_efficiency"] = HistogramSummary(m.padding_efficiency);
  d["queue_wait_us"] = HistogramSummary(m.queue_wait_us);
  d["batch_exec_us"] = HistogramSummary(m.batch_exec_us);
  return d;
}

double PyScheduler::RetryAfterSeconds() const {
  const MetricsSnapshot m = batcher_->metrics();
  if (m.batch_exec_us.count() == 0 || m.batch_size.mean() <= 0) return 1.0;
  const double batches = static_cast<double>(m.queue_requests) / m.batch_size.mean();
  return std::max(0.001, batches * m.batch_exec_us.mean() / 1e6);
}

void BindScheduler(nb::module_& m) {
  m.def("_register_error_types", &RegisterErrorTypes, nb::arg("types"),
        "Hands the exception classes of tokenbatch.errors to the extension (at import).");
  m.def(
      "_read_calibration",
      [](const std::string& path) {
        absl::StatusOr<backend::CalibrationFile> file;
        {
          nb::gil_scoped_release release;
          file = backend::ReadCalibrationFile(path);
        }
        if (!file.ok()) throw nb::value_error(std::string(file.status().message()).c_str());
        nb::dict d;
        d["c0"] = file->memory.c0;
        d["c1"] = file->memory.c1;
        d["c2"] = file->memory.c2;
        d["device"] = file->device;
        d["max_input_tokens"] = file->limits.max_input_tokens;
        d["max_batch_size"] = file->limits.max_batch_size;
        d["recommended_max_batch_tokens"] =
            file->recommendation ? nb::cast(file->recommendation->memory_bytes) : nb::none();
        return d;
      },
      nb::arg("path"),
      "Reads and checks a `tokenbatch calibrate` file (the checks serve --calibration applies). ValueError "
      "naming the file and why it is refused.");

  nb::class_<CompletionChannel>(m, "_CompletionChannel",
                                "Completions for one asyncio loop: watch fileno() with loop.add_reader(fd, drain).")
      .def_static(
          "create",
          [] {
            absl::StatusOr<std::unique_ptr<CompletionChannel>> c = CompletionChannel::Create();
            if (!c.ok()) throw nb::builtin_exception(nb::exception_type::runtime_error,
                                                     std::string(c.status().message()).c_str());
            return c->release();
          },
          nb::rv_policy::take_ownership)
      .def("fileno", &CompletionChannel::fd)
      .def_prop_ro("wakeups", &CompletionChannel::wakeups, "How many times completions have woken the loop.")
      .def("drain", &Drain, "Resolves every queued completion's future (on the loop's thread).");

  nb::class_<PyScheduler>(m, "_Scheduler", "The C++ Batcher behind tokenbatch.Scheduler (see scheduler.py).",
                          nb::type_slots(kSchedulerSlots))
      .def(
          "__init__",
          [](PyScheduler* self, nb::object runner, nb::object tokenizer, nb::object counter, nb::object merge,
             nb::object out_of_memory, std::int64_t pad_token_id, const std::string& cost_model, double c0,
             double c1, double c2, std::int64_t max_batch_tokens, std::int64_t max_batch_size, double max_wait_s,
             const std::string& packing, const std::string& batch_window, const std::string& oversize,
             std::int64_t max_input_tokens, std::int64_t split_overlap_tokens, std::size_t max_queue_size,
             std::int64_t max_queued_tokens, int num_workers) {
            BatcherOptions options = MakeOptions(cost_model, c0, c1, c2, max_batch_tokens, max_batch_size, max_wait_s,
                                                 packing, batch_window, oversize, max_input_tokens,
                                                 split_overlap_tokens, max_queue_size, max_queued_tokens, num_workers);
            new (self) PyScheduler(options, PySchedulerHooks{.runner = runner,
                                                             .tokenizer = tokenizer,
                                                             .counter = counter,
                                                             .merge = merge,
                                                             .out_of_memory = out_of_memory,
                                                             .pad_token_id = pad_token_id});
          },
          nb::kw_only(), nb::arg("runner"), nb::arg("tokenizer").none(), nb::arg("counter").none(),
          nb::arg("merge").none(), nb::arg("out_of_memory"), nb::arg("pad_token_id"), nb::arg("cost_model"),
          nb::arg("c0"), nb::arg("c1"), nb::arg("c2"), nb::arg("max_batch_tokens"), nb::arg("max_batch_size"),
          nb::arg("max_wait_s"), nb::arg("packing"), nb::arg("batch_window"), nb::arg("oversize"),
          nb::arg("max_input_tokens"), nb::arg("split_overlap_tokens"), nb::arg("max_queue_size"),
          nb::arg("max_queued_tokens"), nb::arg("num_workers"))
      .def("keep_alive", &PyScheduler::KeepAlive, nb::arg("channel"),
           "Keeps `channel` alive as long as this scheduler (its requests hold it).")
      .def("submit", &PyScheduler::Submit, nb::arg("item"), nb::arg("future"), nb::arg("channel").none(),
           nb::arg("priority"), nb::arg("deadline").none())
      .def("cancel", &PyScheduler::Cancel, nb::arg("request_id"))
      .def("shutdown", &PyScheduler::Shutdown, nb::arg("mode"))
      .def("stats", &PyScheduler::Stats)
      .def("retry_after", &PyScheduler::RetryAfterSeconds);
}

}  // namespace tokenbatch::python
