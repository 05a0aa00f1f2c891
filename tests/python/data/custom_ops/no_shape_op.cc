// A custom op library with a mistake, for tests/python/test_load_op_library.py: an op declared
// without a shape function, which loading reports as an error instead of aborting.
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"

FS_REGISTER_OP(flowstone::OpBuilder("CustomOpWithoutShapeFn")
                   .Input("x", "float32")
                   .Output("y", "float32")
                   .Kernel("CPU", [](flowstone::KernelContext&) { return flowstone::Status::OK(); })
                   .NotDifferentiable());
