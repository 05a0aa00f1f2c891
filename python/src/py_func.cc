// Runs tf.py_func / tf.numpy_function callables for the PyFunc kernels (flowstone/py_func.h). The
// callables live in flowstone.ops.script_ops, keyed by the op's token.
#include "flowstone/py_func.h"

#include <nanobind/stl/string.h>

#include "common.h"
#include "numpy_conversion.h"

namespace flowstone::python {
namespace {

Status RunPyFunc(const std::string& token, const std::vector<Tensor>& inputs,
                 const std::vector<DType>& output_types, std::vector<Tensor>* outputs) {
  if (!Py_IsInitialized()) {
    return errors::Cancelled("pyfunc ", token, " cannot run: the Python interpreter has exited");
  }
  // Executor threads hold no lock of the runtime here, so waiting for the interpreter is safe.
  nb::gil_scoped_acquire gil;
  nb::list args;
  for (const Tensor& t : inputs) {
    PyObject* array = TensorToNumpy(t);
    if (array == nullptr) {
      std::string message = nb::python_error().what();
      return errors::InvalidArgument("pyfunc ", token,
                                     ": an input cannot be passed to Python: ", message);
    }
    args.append(nb::steal(array));
  }
  nb::list dtypes;
  for (DType t : output_types) dtypes.append(static_cast<int>(t));
  nb::object result;
  try {
    nb::object call = nb::module_::import_("flowstone.ops.script_ops").attr("_call_for_kernel");
    result = call(token, args, dtypes);
  } catch (const nb::python_error& e) {
    return errors::Internal("pyfunc ", token, ": the runner failed: ", e.what());
  }
  // (error code, message, None) when the callable failed; (0, "", [arrays]) otherwise.
  nb::tuple outcome = nb::cast<nb::tuple>(result);
  const int code = nb::cast<int>(outcome[0]);
  if (code != 0) return Status(static_cast<Code>(code), nb::cast<std::string>(outcome[1]));
  nb::list values = nb::cast<nb::list>(outcome[2]);
  outputs->resize(values.size());
  for (size_t i = 0; i < values.size() && i < output_types.size(); ++i) {
    FS_RETURN_IF_ERROR(NumpyToTensor(values[i].ptr(), output_types[i], &(*outputs)[i]));
  }
  return Status::OK();
}

}  // namespace

void RegisterPyFunc(nb::module_& m) { SetPyFuncRunner(RunPyFunc); }

}  // namespace flowstone::python
