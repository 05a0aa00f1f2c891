// Bindings for sessions and compiled callables. The GIL is released while a plan runs, so many
// Python threads can run one session at once.
#include "flowstone/session.h"

#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include "common.h"
#include "flowstone/eager.h"
#include "numpy_conversion.h"

namespace flowstone::python {
namespace {

SessionOptions OptionsFromDict(nb::dict d) {
  SessionOptions o;
  if (d.contains("inter_op_threads")) o.inter_op_threads = nb::cast<int>(d["inter_op_threads"]);
  if (d.contains("intra_op_threads")) o.intra_op_threads = nb::cast<int>(d["intra_op_threads"]);
  if (d.contains("allow_soft_placement"))
    o.allow_soft_placement = nb::cast<bool>(d["allow_soft_placement"]);
  if (d.contains("log_device_placement"))
    o.log_device_placement = nb::cast<bool>(d["log_device_placement"]);
  if (d.contains("cpu_memory_limit_bytes"))
    o.cpu_memory_limit_bytes = nb::cast<int64_t>(d["cpu_memory_limit_bytes"]);
  if (d.contains("gpu_visible_device_list"))
    o.gpu_visible_device_list = nb::cast<std::string>(d["gpu_visible_device_list"]);
  if (d.contains("gpu_memory_fraction"))
    o.gpu_memory_fraction = nb::cast<double>(d["gpu_memory_fraction"]);
  if (d.contains("gpu_allow_growth")) o.gpu_allow_growth = nb::cast<bool>(d["gpu_allow_growth"]);
  if (d.contains("operation_timeout_in_ms"))
    o.operation_timeout_in_ms = nb::cast<int64_t>(d["operation_timeout_in_ms"]);
  if (d.contains("gpu_memory_limit_bytes"))
    o.gpu_memory_limit_bytes = nb::cast<int64_t>(d["gpu_memory_limit_bytes"]);
  auto toggle = [&](const char* key, RewriterConfig::Toggle* out) {
    if (!d.contains(key)) return;
    const int value = nb::cast<int>(d[key]);
    if (value < RewriterConfig::kDefault || value > 5) {
      throw nb::value_error(StrCat("RewriterConfig.", key,
                                   " must be a Toggle (DEFAULT=0, ON=1, OFF=2, AGGRESSIVE=3, "
                                   "EXPERIMENTAL_MLIR=4, EXPERIMENTAL_BOTH=5), got ",
                                   value)
                                .c_str());
    }
    *out = static_cast<RewriterConfig::Toggle>(value);
  };
  RewriterConfig& rewrites = o.rewrites;
  toggle("constant_folding", &rewrites.constant_folding);
  toggle("arithmetic_optimization", &rewrites.arithmetic_optimization);
  toggle("dependency_optimization", &rewrites.dependency_optimization);
  toggle("common_subgraph_elimination", &rewrites.common_subgraph_elimination);
  toggle("remapping", &rewrites.remapping);
  if (d.contains("disable_meta_optimizer"))
    rewrites.disable_meta_optimizer = nb::cast<bool>(d["disable_meta_optimizer"]);
  if (d.contains("fold_time_budget_ms"))
    rewrites.fold_time_budget_ms = nb::cast<int64_t>(d["fold_time_budget_ms"]);
  if (d.contains("max_folded_constant_bytes"))
    rewrites.max_folded_constant_bytes = nb::cast<int64_t>(d["max_folded_constant_bytes"]);
  if (d.contains("device_count")) {
    for (auto [k, v] : nb::cast<nb::dict>(d["device_count"]))
      o.device_count[nb::cast<std::string>(k)] = nb::cast<int>(v);
  }
  return o;
}

// A compiled (feeds, fetches, targets) signature; calling it runs the plan.
struct Callable {
  std::shared_ptr<Session> session;
  Session::CallableHandle handle;
  std::vector<DType> feed_dtypes;

  ~Callable() {
    if (session && !session->closed()) session->ReleaseCallable(handle);
  }

  nb::list Call(nb::args feed_values) { return CallWithOptions(RunOptions{}, feed_values); }

  // With `metadata`, a traced run's statistics are returned through it.
  nb::list CallWithOptions(const RunOptions& options, nb::args feed_values,
                           RunMetadata* metadata = nullptr) {
    if (feed_values.size() != feed_dtypes.size()) {
      throw StatusException{errors::InvalidArgument("expected ", feed_dtypes.size(),
                                                    " feed values, got ", feed_values.size())};
    }
    std::vector<Tensor> feeds(feed_dtypes.size());
    for (size_t i = 0; i < feed_dtypes.size(); ++i) {
      ThrowIfError(NumpyToTensor(feed_values[i].ptr(), feed_dtypes[i], &feeds[i]));
    }
    std::vector<Tensor> outputs;
    RunOptions run_options = options;
    run_options.cancel_on_interrupt = RunShouldWatchInterrupts();
    Status s;
    {
      nb::gil_scoped_release release;
      s = session->RunCallable(handle, feeds, &outputs, run_options, metadata);
      feeds.clear();
    }
    RaiseIfInterrupted(s);
    ThrowIfError(s);
    nb::list result;
    for (const Tensor& t : outputs) {
      if (t.dtype() == DType::kResource) {
        result.append(nb::none());
        continue;
      }
      ThrowIfError(CheckNumpyCanHold(t));
      PyObject* value = FetchedValue(t);
      if (value == nullptr) throw nb::python_error();
      result.append(nb::steal(value));
    }
    return result;
  }
};

}  // namespace

void RegisterSession(nb::module_& m) {
  nb::class_<Callable>(m, "Callable")
      .def("__call__", &Callable::Call)
      .def(
          "call_with_options",
          [](Callable& c, int64_t timeout_in_ms, bool report_tensor_allocations_upon_oom,
             int trace_level, nb::args feed_values) {
            RunOptions options;
            options.timeout_in_ms = timeout_in_ms;
            options.report_tensor_allocations_upon_oom = report_tensor_allocations_upon_oom;
            if (trace_level < RunOptions::kNoTrace || trace_level > RunOptions::kFullTrace) {
              throw StatusException{errors::InvalidArgument(
                  "RunOptions.trace_level must be NO_TRACE (0), SOFTWARE_TRACE (1), "
                  "HARDWARE_TRACE (2) or FULL_TRACE (3), got ",
                  trace_level)};
            }
            options.trace_level = static_cast<RunOptions::TraceLevel>(trace_level);
            RunMetadata metadata;
            nb::list outputs = c.CallWithOptions(options, feed_values, &metadata);
            std::string serialized;
            if (!metadata.step_stats.dev_stats.empty()) {
              serialized = SerializeStepStats(metadata.step_stats);
            }
            return nb::make_tuple(outputs, nb::bytes(serialized.data(), serialized.size()));
          },
          "Runs like __call__ with RunOptions' timeout_in_ms (0: the session's), "
          "report_tensor_allocations_upon_oom and trace_level; returns (outputs, the serialized "
          "StepStats of a traced run, else b'').")
      .def(
          "call_eager",
          [](Callable& c, nb::list inputs) {
            // tf.function's calls: eager tensors in and out, no numpy conversion.
            EagerContext& eager = EagerContext::Global();
            std::vector<Tensor> feeds(nb::len(inputs));
            for (size_t i = 0; i < feeds.size(); ++i) {
              ThrowIfError(eager.ToHost(*nb::cast<const TensorHandle*>(inputs[i]), &feeds[i]));
            }
            std::vector<Tensor> outputs;
            RunOptions run_options;
            run_options.cancel_on_interrupt = RunShouldWatchInterrupts();
            Status s;
            {
              nb::gil_scoped_release release;
              s = c.session->RunCallable(c.handle, feeds, &outputs, run_options);
              feeds.clear();
            }
            RaiseIfInterrupted(s);
            ThrowIfError(s);
            nb::list result;
            for (Tensor& t : outputs) {
              std::unique_ptr<TensorHandle> handle;
              ThrowIfError(eager.MakeHandle(std::move(t), "", &handle));
              result.append(nb::cast(std::move(handle)));
            }
            return result;
          },
          "Runs with eager tensors (TensorHandles) as feeds; returns TensorHandles.")
      .def_prop_ro("feed_dtypes", [](const Callable& c) {
        std::vector<int> out;
        for (DType t : c.feed_dtypes) out.push_back(static_cast<int>(t));
        return out;
      });

  nb::class_<Session>(m, "Session")
      .def_static(
          "create",
          [](std::shared_ptr<Graph> graph, nb::dict options) {
            std::unique_ptr<Session> session;
            ThrowIfError(Session::Create(std::move(graph), OptionsFromDict(options), &session));
            return std::shared_ptr<Session>(std::move(session));
          })
      .def(
          "make_callable",
          [](std::shared_ptr<Session> self, const std::vector<std::pair<NodeRef, int>>& feeds,
             const std::vector<std::pair<NodeRef, int>>& fetches,
             const std::vector<NodeRef>& targets) {
            std::vector<Endpoint> feed_eps, fetch_eps;
            std::vector<Node*> target_nodes;
            auto c = std::make_unique<Callable>();
            for (const auto& [ref, i] : feeds) {
              feed_eps.push_back({ref.node, i});
              c->feed_dtypes.push_back(ref.node->output_type(i));
            }
            for (const auto& [ref, i] : fetches) {
              // Variants (TensorLists) have no numpy value; C++ callers may fetch them.
              if (ref.node->output_type(i) == DType::kVariant) {
                Status s = errors::InvalidArgument(
                    "Fetch argument ", ref.node->name(), ":", i, " (op ", ref.node->type(),
                    ") has dtype variant, which has no numpy value. Fetch a tensor read from it "
                    "instead, e.g. TensorArray.stack() or TensorListStack.");
                s.SetPayload("py_type", "TypeError");
                ThrowIfError(s);
              }
              fetch_eps.push_back({ref.node, i});
            }
            for (const NodeRef& ref : targets) target_nodes.push_back(ref.node);
            Status s;
            {
              nb::gil_scoped_release release;
              s = self->MakeCallable(feed_eps, fetch_eps, target_nodes, &c->handle);
            }
            ThrowIfError(s);
            c->session = std::move(self);
            return c.release();
          },
          nb::rv_policy::take_ownership)
      .def("close",
           [](Session& s) {
             nb::gil_scoped_release release;
             ThrowIfError(s.Close());
           })
      .def_prop_ro("closed", &Session::closed)
      .def("list_devices", [](Session& s) {
        nb::list out;
        for (const DeviceAttributes& d : s.ListDevices())
          out.append(nb::make_tuple(d.name, d.device_type, d.memory_limit_bytes));
        return out;
      });
}

}  // namespace flowstone::python
