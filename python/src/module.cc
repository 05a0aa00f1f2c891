// The flowstone._C extension module: one file per area (errors, graph, session, runtime, build
// and CPU info).
#include "common.h"
#include "numpy_conversion.h"

namespace flowstone::python {

NB_MODULE(_C, m) {
  if (!InitNumpy()) throw nb::python_error();
  m.doc() = "Flowstone's C++ core";
  RegisterErrors(m);
  RegisterGraph(m);
  RegisterSession(m);
  RegisterRuntime(m);
  RegisterCheckpoint(m);
  RegisterGraphDef(m);
  RegisterDevices(m);
  RegisterBuildInfo(m);
  RegisterPyFunc(m);
  RegisterInterrupts(m);
  RegisterEager(m);
  RegisterRecordIO(m);
  RegisterSummary(m);
  RegisterCollectives(m);
}

}  // namespace flowstone::python
