// PyFunc and PyFuncStateless: a Python callable as a graph op (tf.py_func, tf.numpy_function). The
// kernel hands its inputs to the runner the Python bindings installed (flowstone/py_func.h).
#include <memory>
#include <mutex>

#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/py_func.h"
#include "flowstone/shape_inference.h"

namespace flowstone {
namespace {

std::mutex& RunnerMutex() {
  static std::mutex mu;
  return mu;
}

std::shared_ptr<PyFuncRunner>& Runner() {
  static std::shared_ptr<PyFuncRunner> runner;
  return runner;
}

Status PyFuncKernel(KernelContext& ctx) {
  std::shared_ptr<PyFuncRunner> runner = CurrentPyFuncRunner();
  if (runner == nullptr) {
    return errors::FailedPrecondition(ctx.node().type(),
                                      " needs the Python runtime to call its function; it "
                                      "cannot run from the C++ API.");
  }
  const std::string token = ctx.attrs().GetOr<std::string>("token", "");
  std::vector<Tensor> inputs(ctx.num_inputs());
  for (int i = 0; i < ctx.num_inputs(); ++i) inputs[i] = ctx.input(i);
  std::vector<DType> output_types(ctx.num_outputs());
  for (int i = 0; i < ctx.num_outputs(); ++i) output_types[i] = ctx.output_type(i);
  std::vector<Tensor> outputs;
  FS_RETURN_IF_ERROR((*runner)(token, inputs, output_types, &outputs));
  if (outputs.size() != output_types.size()) {
    return errors::InvalidArgument("pyfunc ", token, " returned ", outputs.size(),
                                   " values, but expects ", output_types.size());
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].dtype() != output_types[i]) {
      return errors::InvalidArgument(i, "-th value returned by pyfunc ", token, " is ",
                                     DTypeShortName(outputs[i].dtype()), ", but expects ",
                                     DTypeShortName(output_types[i]));
    }
    ctx.SetOutput(static_cast<int>(i), std::move(outputs[i]));
  }
  return Status::OK();
}

Status PyFuncShape(InferenceContext& ctx) {
  for (int i = 0; i < ctx.num_outputs(); ++i) ctx.set_output(i, PartialShape::Unknown());
  return Status::OK();
}

OpBuilder PyFuncOp(const char* name) {
  return std::move(OpBuilder(name)
                       .InputTypeList("input", "Tin")
                       .OutputTypeList("output", "Tout")
                       .RequiredAttr("token", AttrType::kString)
                       .Shape(PyFuncShape)
                       .Kernel("CPU", PyFuncKernel)
                       // As in TensorFlow: a gradient comes from gradient_override_map.
                       .NotDifferentiable());
}

FS_REGISTER_OP(PyFuncOp("PyFunc").Stateful().Doc(
    "Calls the Python function registered under token (tf.py_func, "
    "tf.numpy_function)."));
FS_REGISTER_OP(PyFuncOp("PyFuncStateless")
                   .Doc("PyFunc for a function without side effects (stateful=False)."));

}  // namespace

std::shared_ptr<PyFuncRunner> CurrentPyFuncRunner() {
  std::lock_guard<std::mutex> lock(RunnerMutex());
  return Runner();
}

void SetPyFuncRunner(PyFuncRunner runner) {
  auto shared = runner ? std::make_shared<PyFuncRunner>(std::move(runner)) : nullptr;
  std::lock_guard<std::mutex> lock(RunnerMutex());
  Runner() = std::move(shared);
}

}  // namespace flowstone
