// Eager execution bindings: TensorHandle (the C++ side of an EagerTensor), eager_execute (the
// one entry every eagerly run op goes through) and GradientTape.
#include "flowstone/eager.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include "common.h"
#include "eager_operators.h"
#include "flowstone/op_registry.h"
#include "numpy_conversion.h"

namespace flowstone::python {
namespace {

std::vector<const TensorHandle*> Handles(nb::handle list) {
  std::vector<const TensorHandle*> out;
  out.reserve(nb::len(list));
  for (nb::handle h : list) out.push_back(nb::cast<const TensorHandle*>(h));
  return out;
}

// Attr values from Python, typed by the op's declared attrs.
AttrMap AttrsFromPython(const OpDef* def, nb::dict attrs) {
  AttrMap out;
  for (auto [key, value] : attrs) {
    std::string name = nb::cast<std::string>(key);
    const AttrDef* attr_def = def ? def->FindAttr(name) : nullptr;
    out.Set(name, AttrFromPython(value, attr_def, name));
  }
  return out;
}

nb::list ToPython(std::vector<TensorHandle>& handles) {
  nb::list out;
  for (TensorHandle& h : handles) out.append(nb::cast(std::move(h), nb::rv_policy::move));
  return out;
}

nb::tuple ShapeTuple(const Tensor& t) {
  nb::list dims;
  for (int i = 0; i < t.rank(); ++i) dims.append(t.dim(i));
  return nb::tuple(dims);
}

}  // namespace

void RegisterEager(nb::module_& m) {
  RegisterEagerOperators(m);
  nb::class_<TensorHandle>(m, "TensorHandle",
                           "An eagerly computed tensor: a reference-counted value on a device.")
      .def_prop_ro("id", &TensorHandle::id)
      .def_prop_ro("dtype",
                   [](const TensorHandle& h) { return static_cast<int>(h.tensor().dtype()); })
      .def_prop_ro("shape", [](const TensorHandle& h) { return ShapeTuple(h.tensor()); })
      .def_prop_ro("device",
                   [](const TensorHandle& h) { return h.device() ? h.device()->name() : ""; })
      .def_prop_ro("device_type",
                   [](const TensorHandle& h) { return h.device() ? h.device()->type() : "CPU"; })
      .def(
          "numpy",
          [](const TensorHandle& h) {
            Tensor host;
            ThrowIfError(EagerContext::Global().ToHost(h, &host));
            ThrowIfError(CheckNumpyCanHold(host));
            PyObject* array = TensorToNumpy(host, /*share=*/true);
            if (array == nullptr) throw nb::python_error();
            return nb::steal(array);
          },
          "The value as a numpy array sharing the tensor's memory (host tensors).");

  m.def(
      "eager_execute",
      [](const std::string& op_type, nb::list inputs, nb::dict attrs, const std::string& device,
         const std::string& name) {
        AttrMap attr_map;
        if (attrs.size() != 0)
          attr_map = AttrsFromPython(OpRegistry::Global().Find(op_type), attrs);
        std::vector<const TensorHandle*> handles = Handles(inputs);
        std::vector<TensorHandle> outputs;
        Status s;
        {
          nb::gil_scoped_release release;
          s = EagerContext::Global().Execute(op_type, handles, attr_map, device, name, &outputs);
        }
        ThrowIfError(s);
        return ToPython(outputs);
      },
      nb::arg("op_type"), nb::arg("inputs"), nb::arg("attrs"), nb::arg("device") = "",
      nb::arg("name") = "",
      "Runs one op eagerly through the cached kernel of its signature; returns its outputs.");
  m.def(
      "eager_tensor",
      [](nb::handle value, int dtype, const std::string& device) {
        Tensor t;
        ThrowIfError(NumpyToTensor(value.ptr(), static_cast<DType>(dtype), &t));
        std::unique_ptr<TensorHandle> handle;
        ThrowIfError(EagerContext::Global().MakeHandle(std::move(t), device, &handle));
        return handle;
      },
      nb::arg("value"), nb::arg("dtype"), nb::arg("device") = "",
      "A handle holding a copy of a numpy value, on `device` (default CPU:0).");
  m.def(
      "eager_copy_to_device",
      [](const TensorHandle& h, const std::string& device) {
        std::unique_ptr<TensorHandle> out;
        ThrowIfError(EagerContext::Global().CopyToDevice(h, device, &out));
        return out;
      },
      "A copy of the tensor on the device `device` names.");
  m.def(
      "eager_initialized", [] { return EagerContext::Global().initialized(); },
      "Whether an op has run eagerly (devices are then fixed).");
  m.def("eager_cache_size", [] { return EagerContext::Global().cache_size(); });
  m.def(
      "eager_num_variables", [] { return EagerContext::Global().num_variables(); },
      "Eager variables alive now (each lives while a tensor holds its handle).");
  m.def("eager_set_log_device_placement",
        [](bool enabled) { EagerContext::Global().set_log_device_placement(enabled); });
  m.def("eager_set_soft_device_placement",
        [](bool enabled) { EagerContext::Global().set_soft_device_placement(enabled); });
  m.def("eager_soft_device_placement",
        [] { return EagerContext::Global().soft_device_placement(); });
  m.def("eager_devices", [] {
    nb::list out;
    for (const DeviceAttributes& d : EagerContext::Global().ListDevices()) {
      out.append(nb::make_tuple(d.name, d.device_type, d.memory_limit_bytes));
    }
    return out;
  });

  nb::class_<GradientTape>(m, "GradientTape", "Records eager ops for one backward pass.")
      .def(nb::new_([](bool persistent, bool watch_accessed_variables) {
             return std::make_shared<GradientTape>(persistent, watch_accessed_variables);
           }),
           nb::arg("persistent") = false, nb::arg("watch_accessed_variables") = true)
      .def_prop_ro("persistent", &GradientTape::persistent)
      .def_prop_ro("watch_accessed_variables", &GradientTape::watch_accessed_variables)
      .def_prop_rw("recording", &GradientTape::recording, &GradientTape::set_recording)
      .def("watch", &GradientTape::Watch)
      .def("is_watched", &GradientTape::IsWatched)
      .def("reset", &GradientTape::Reset)
      .def_prop_ro("watch_order", &GradientTape::watch_order)
      .def_prop_ro("held_ids", &GradientTape::HeldIds,
                   "Ids of the tensors whose values the tape holds.")
      .def(
          "push",
          [](std::shared_ptr<GradientTape> tape) {
            EagerContext::ThreadTapes().push_back(std::move(tape));
          },
          "Makes the tape record on this thread (innermost).")
      .def(
          "pop",
          [](const std::shared_ptr<GradientTape>& tape) {
            auto& tapes = EagerContext::ThreadTapes();
            for (auto it = tapes.begin(); it != tapes.end(); ++it) {
              if (*it == tape) {
                tapes.erase(it);
                return;
              }
            }
          },
          "Stops the tape recording on this thread.")
      .def(
          "gradient",
          [](GradientTape& tape, nb::list targets, nb::list sources, nb::list output_gradients) {
            std::vector<const TensorHandle*> t = Handles(targets), s = Handles(sources);
            std::vector<const TensorHandle*> g;
            for (nb::handle h : output_gradients) {
              g.push_back(h.is_none() ? nullptr : nb::cast<const TensorHandle*>(h));
            }
            std::vector<std::optional<TensorHandle>> out;
            Status status;
            {
              nb::gil_scoped_release release;
              status = tape.Gradient(EagerContext::Global(), t, s, g, &out);
            }
            ThrowIfError(status);
            nb::list result;
            for (auto& h : out) {
              result.append(h ? nb::cast(std::move(*h), nb::rv_policy::move) : nb::none());
            }
            return result;
          },
          "d(targets)/d(source) per source (None where unconnected).");
  m.def(
      "eager_tape_recording",
      [] {
        for (const auto& tape : EagerContext::ThreadTapes())
          if (tape->recording()) return true;
        return false;
      },
      "Whether a gradient tape records on this thread.");
  m.def("eager_variable_accessed", [](const TensorHandle& handle) {
    for (const auto& tape : EagerContext::ThreadTapes()) {
      if (tape->recording() && tape->watch_accessed_variables()) tape->Watch(handle);
    }
  });
}

}  // namespace flowstone::python
