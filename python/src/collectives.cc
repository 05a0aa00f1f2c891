// Bindings for flowstone.horovod: starting and stopping the collectives' background thread and
// the process's place in the job. The collectives themselves are graph ops.
#include "flowstone/collectives.h"

#include <nanobind/stl/string.h>

#include "common.h"

namespace flowstone::python {

void RegisterCollectives(nb::module_& m) {
  m.def(
      "collectives_init",
      [](bool force_local, const std::string& plugin_path) {
        CollectiveOptions options = CollectiveOptionsFromEnvironment();
        options.force_local = force_local;
        options.plugin_path = plugin_path;
        Status s;
        {
          nb::gil_scoped_release release;
          s = InitCollectives(options);
        }
        ThrowIfError(s);
      },
      nb::arg("force_local") = false, nb::arg("plugin_path") = "",
      "Starts the collectives (hvd.init()): MPI under a launcher, else a single process.");
  m.def(
      "collectives_shutdown",
      [] {
        nb::gil_scoped_release release;
        ThrowIfError(ShutdownCollectives());
      },
      "Stops the collectives (hvd.shutdown()); waits for the other ranks to agree.");
  m.def("collectives_initialized", &CollectivesInitialized);
  m.def("collectives_topology", [] {
    CollectiveTopology t;
    ThrowIfError(GetCollectiveTopology(&t));
    nb::dict d;
    d["rank"] = t.rank;
    d["size"] = t.size;
    d["local_rank"] = t.local_rank;
    d["local_size"] = t.local_size;
    d["cross_rank"] = t.cross_rank;
    d["cross_size"] = t.cross_size;
    d["threads_supported"] = t.threads_supported;
    d["transport"] = t.transport;
    return d;
  });
}

}  // namespace flowstone::python
