// Shared pieces of the bindings: the Status -> Python exception bridge and the graph handle.
#pragma once

#include <nanobind/nanobind.h>

#include <memory>

#include "flowstone/graph.h"
#include "flowstone/status.h"

namespace flowstone::python {

namespace nb = nanobind;

// Thrown by binding code for a non-OK Status; becomes `_C.StatusError(code, message, payloads)`.
struct StatusException {
  Status status;
};

inline void ThrowIfError(const Status& status) {
  if (!status.ok()) throw StatusException{status};
}

// A node together with the graph that owns it, so Python can never hold a dangling node.
struct NodeRef {
  std::shared_ptr<Graph> graph;
  Node* node;
};

void RegisterErrors(nb::module_& m);
void RegisterGraph(nb::module_& m);
void RegisterSession(nb::module_& m);
void RegisterRuntime(nb::module_& m);
void RegisterCheckpoint(nb::module_& m);
// GraphDef export and import (graph_def.cc).
void RegisterGraphDef(nb::module_& m);
void RegisterDevices(nb::module_& m);
void RegisterBuildInfo(nb::module_& m);
// Installs the runner that PyFunc kernels call (py_func.cc).
void RegisterPyFunc(nb::module_& m);
void RegisterInterrupts(nb::module_& m);
void RegisterEager(nb::module_& m);
// tf.io.TFRecordWriter and tf_record_iterator (record_io.cc).
void RegisterRecordIO(nb::module_& m);
// TensorBoard event files (summary.cc).
void RegisterSummary(nb::module_& m);
void RegisterCollectives(nb::module_& m);

// Whether a run called now should stop on Ctrl-C: on Python's main thread, with the SIGINT hook
// placed (interrupts.cc).
bool RunShouldWatchInterrupts();
// For a run stopped by an interrupt, runs Python's signal handlers and throws what they raise
// (KeyboardInterrupt by default).
void RaiseIfInterrupted(const Status& status);

// Attr values to and from Python (by the attr's declared type where one is declared).
AttrValue AttrFromPython(nb::handle value, const AttrDef* def, const std::string& name);
nb::object AttrToPython(const AttrValue& value);

}  // namespace flowstone::python
