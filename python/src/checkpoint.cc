// Bindings for checkpoints (flowstone/train/saver.py). Values are taken from and put into the
// session while holding the GIL, and the file I/O runs without it: Python code closes a session
// only while holding the GIL, so the session cannot be closed under the first and last steps,
// and other Python threads keep running during a long write or read.
#include "flowstone/checkpoint.h"

#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "common.h"
#include "flowstone/tensor_bundle.h"
#include "numpy_conversion.h"

namespace flowstone::python {
namespace {

using PyVars = std::vector<std::pair<std::string, NodeRef>>;
using PyValues = std::vector<std::pair<std::string, nb::object>>;

// (key, numpy array) pairs as tensors, appended to `out`.
void AppendValues(const PyValues& values, std::vector<std::pair<std::string, Tensor>>* out) {
  for (const auto& [key, array] : values) {
    Tensor t;
    ThrowIfError(NumpyToTensor(array.ptr(), DTypeOfNumpy(array.ptr()), &t));
    out->emplace_back(key, std::move(t));
  }
}

CheckpointVars ToCheckpointVars(const PyVars& vars) {
  CheckpointVars out;
  out.reserve(vars.size());
  for (const auto& [key, ref] : vars) out.emplace_back(key, ref.node);
  return out;
}

}  // namespace

void RegisterCheckpoint(nb::module_& m) {
  m.def(
      "save_checkpoint",
      [](Session& session, const PyVars& vars, const std::string& path, bool tensor_bundle,
         const PyValues& extra) {
        std::vector<std::pair<std::string, Tensor>> values;
        ThrowIfError(SnapshotVariables(session, ToCheckpointVars(vars), &values));
        AppendValues(extra, &values);
        Status s;
        {
          nb::gil_scoped_release release;
          s = tensor_bundle ? WriteTensorBundle(values, path) : WriteCheckpoint(values, path);
        }
        ThrowIfError(s);
      },
      nb::arg("session"), nb::arg("vars"), nb::arg("path"), nb::arg("tensor_bundle") = true,
      nb::arg("extra") = PyValues{},
      "Saves the variables [(key, VarHandleOp node)] of `session` at `path`: TensorFlow's V2 "
      "bundle (path.index, path.data-00000-of-00001), or Flowstone's one-file format. `extra` "
      "[(key, numpy array)] are saved beside them (an object-based checkpoint's object graph).");
  m.def(
      "write_tensor_bundle",
      [](const PyValues& values, const std::string& path) {
        std::vector<std::pair<std::string, Tensor>> tensors;
        AppendValues(values, &tensors);
        Status s;
        {
          nb::gil_scoped_release release;
          s = WriteTensorBundle(tensors, path);
        }
        ThrowIfError(s);
      },
      nb::arg("values"), nb::arg("path"),
      "Writes [(key, numpy array)] as a V2 checkpoint at `path` (eager tf.train.Checkpoint).");
  m.def("is_tensor_bundle", &IsTensorBundle, nb::arg("path"),
        "Whether `path` is the prefix of a V2 checkpoint (path.index exists).");

  m.def(
      "restore_checkpoint",
      [](Session& session, const PyVars& vars, const std::string& path) {
        CheckpointVars cvars = ToCheckpointVars(vars);
        std::vector<Tensor> values;
        Status s;
        {
          nb::gil_scoped_release release;
          s = ReadCheckpointForVariables(cvars, path, &values);
        }
        ThrowIfError(s);
        ThrowIfError(AssignVariables(session, cvars, values));
      },
      nb::arg("session"), nb::arg("vars"), nb::arg("path"),
      "Sets the variables [(key, VarHandleOp node)] of `session` from the checkpoint `path`.");

  m.def(
      "list_checkpoint",
      [](const std::string& path) {
        std::vector<CheckpointEntry> entries;
        Status s;
        {
          nb::gil_scoped_release release;
          s = ListCheckpoint(path, &entries);
        }
        ThrowIfError(s);
        nb::list out;
        for (const CheckpointEntry& e : entries) {
          out.append(nb::make_tuple(e.key, static_cast<int>(e.dtype), e.shape.ToVector()));
        }
        return out;
      },
      nb::arg("path"), "[(key, dtype enum, dims)] of a checkpoint, sorted by key.");

  m.def(
      "load_checkpoint_tensor",
      [](const std::string& path, const std::string& key) {
        std::vector<Tensor> values;
        Status s;
        {
          nb::gil_scoped_release release;
          s = ReadCheckpointTensors(path, {key}, &values);
        }
        ThrowIfError(s);
        PyObject* array = TensorToNumpy(values[0]);
        if (array == nullptr) throw nb::python_error();
        return nb::steal(array);
      },
      nb::arg("path"), nb::arg("key"), "The value stored under `key` as a numpy array.");

  m.def(
      "load_checkpoint_tensors",
      [](const std::string& path, const std::vector<std::string>& keys) {
        std::vector<Tensor> values;
        Status s;
        {
          nb::gil_scoped_release release;
          s = ReadCheckpointTensors(path, keys, &values);
        }
        ThrowIfError(s);
        nb::list out;
        for (const Tensor& value : values) {
          PyObject* array = TensorToNumpy(value);
          if (array == nullptr) throw nb::python_error();
          out.append(nb::steal(array));
        }
        return out;
      },
      nb::arg("path"), nb::arg("keys"),
      "The values stored under `keys` as numpy arrays, the checkpoint opened once.");

  m.def(
      "write_file_atomically",
      [](const std::string& path, nb::bytes contents) {
        std::string data(contents.c_str(), contents.size());
        Status s;
        {
          nb::gil_scoped_release release;
          s = WriteFileAtomically(path, data);
        }
        ThrowIfError(s);
      },
      nb::arg("path"), nb::arg("contents"),
      "Replaces the file at `path` with `contents` (bytes); a crash leaves the old or the new "
      "file, never a mix.");
}

}  // namespace flowstone::python
