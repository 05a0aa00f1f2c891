// Python callables as graph ops (tf.py_func, tf.numpy_function). The core has no Python in it: the
// Python bindings install the runner below at import, and the PyFunc kernels call it.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "flowstone/status.h"
#include "flowstone/tensor.h"

namespace flowstone {

// Runs the callable registered under `token` on `inputs` and returns one tensor per entry of
// `output_types`, of that dtype. It is called from executor threads that hold no executor lock;
// the runner takes the interpreter's lock itself. An exception in the callable is a non-OK
// Status carrying its traceback.
using PyFuncRunner =
    std::function<Status(const std::string& token, const std::vector<Tensor>& inputs,
                         const std::vector<DType>& output_types, std::vector<Tensor>* outputs)>;

// Installs the runner (replacing any earlier one). Thread-safe.
void SetPyFuncRunner(PyFuncRunner runner);

// The installed runner, or null when none is (a program using the C++ API alone). Thread-safe.
std::shared_ptr<PyFuncRunner> CurrentPyFuncRunner();

}  // namespace flowstone
