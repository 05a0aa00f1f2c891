// Custom op libraries: shared libraries, built against these headers, that register ops and
// kernels with FS_REGISTER_OP as they load (tf.load_op_library in Python).
//
//   g++ -shared -fPIC zero_out.cc -o zero_out.so $(python -c "import flowstone as tf; print(
//       ' '.join(tf.sysconfig.get_compile_flags() + tf.sysconfig.get_link_flags()))")
#pragma once

#include <string>
#include <vector>

#include "flowstone/status.h"

namespace flowstone {

// Loads the shared library at `path`; its static registrars add its ops to the registry. On
// success `op_names` lists the ops it added, sorted. Errors: NotFound when the library cannot be
// loaded (the dynamic loader's message), AlreadyExists when it registers an op whose name is
// taken, InvalidArgument for an op without a shape function. A library with errors stays loaded
// (its other ops are registered), as a loaded library cannot safely be unloaded.
Status LoadOpLibrary(const std::string& path, std::vector<std::string>* op_names);

}  // namespace flowstone
