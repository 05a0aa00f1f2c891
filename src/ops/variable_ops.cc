// Resource variables. The graph holds only handles; values live in the session's ResourceMgr,
// so two sessions on one graph hold separate values.
#include <atomic>
#include <cstring>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/elementwise.h"
#include "ops/var_memory.h"

namespace flowstone {
namespace {

// Records that `var` lives in `device`'s memory; a value already there (restored from a
// checkpoint before the first run) is moved into that memory. A handle op on the CPU leaves the
// variable where it is.
Status MoveToDevice(Var* var, Device* device) {
  if (device->host_memory()) return Status::OK();
  std::lock_guard<std::mutex> lock(var->mu());
  return MoveVarToMemoryOf(var, device);
}

// What a resource variable may hold: kAllTypes and strings (TensorFlow's string variables, such
// as tf.train.match_filenames_once's and TF2 SavedModels' asset paths); the update ops take
// numbers only. Reads share the value's buffer and assignments replace it, so no kernel here
// depends on the element type. Listed, not built from kAllTypes: static initialization order
// across files is not defined.
const std::vector<DType> kVariableTypes = {DType::kFloat32,    DType::kFloat64,  DType::kInt32,
                                           DType::kInt64,      DType::kUInt8,    DType::kBool,
                                           DType::kFloat16,    DType::kBFloat16, DType::kComplex64,
                                           DType::kComplex128, DType::kString};

// Looks up the variable once per session (kernels are per session), then hands out the handle.
class VarHandleKernel final : public OpKernel {
 public:
  explicit VarHandleKernel(const Node& node) : OpKernel(node) {}
  Status Compute(KernelContext& ctx) override {
    Var* var = var_.load(std::memory_order_acquire);
    if (var == nullptr) {
      var = ctx.resources()->LookupOrCreateVar(
          VarNameOf(node()), node().attrs().GetOr<DType>("dtype", DType::kFloat32),
          node().attrs().GetOr<PartialShape>("shape", PartialShape::Unknown()));
      FS_RETURN_IF_ERROR(MoveToDevice(var, ctx.device()));
      var_.store(var, std::memory_order_release);
    }
    Tensor* out;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{}, &out));
    std::memcpy(out->raw_data(), &var, sizeof(var));
    return Status::OK();
  }

 private:
  std::atomic<Var*> var_{nullptr};
};

FS_REGISTER_OP(OpBuilder("VarHandleOp")
                   .Output("resource", "resource")
                   .TypeAttr("dtype", kVariableTypes)
                   .RequiredAttr("shape", AttrType::kShape)
                   .Attr("shared_name", "")
                   .Attr("container", "")
                   .Stateful()
                   .Shape(shape_fns::Scalar)
                   .KernelClass<VarHandleKernel>("CPU")
                   .NotDifferentiable()
                   .Doc("A handle to a variable owned by the session."));

Status UninitializedError(const Var& var) {
  return errors::FailedPrecondition(
      "Attempting to use uninitialized value ", var.name(),
      ". Initialize it first: run "
      "sess.run(tf.global_variables_initializer()) after building the model, or "
      "sess.run(",
      var.name(), ".initializer) for this variable alone.");
}

Status ReadVariable(KernelContext& ctx) {
  Var* var = VarFromHandle(ctx.input(0));
  std::lock_guard<std::mutex> lock(var->mu());
  if (!var->initialized()) return UninitializedError(*var);
  // The handle may be any resource (a reader's or a queue's slot holds a variant): a value of
  // another dtype than the node's would reach consumers that read it as that dtype.
  if (var->value().dtype() != ctx.output_type(0)) {
    return errors::InvalidArgument("Trying to read variable ", var->name(),
                                   " with wrong dtype. Expected ", DTypeName(ctx.output_type(0)),
                                   " got ", DTypeName(var->value().dtype()));
  }
  FS_RETURN_IF_ERROR(MoveVarToMemoryOf(var, ctx.device()));
  ctx.SetOutput(0, var->value());
  return Status::OK();
}

Status ReadVariableShape(InferenceContext& ctx) {
  // A handle carries no shape, so the variable's shape comes as an attr.
  ctx.set_output(0, ctx.attrs().GetOr<PartialShape>("value_shape", PartialShape::Unknown()));
  return Status::OK();
}

// The gradient with respect to a variable is the gradient of its value, accumulated at the
// handle (so that every read of the variable contributes).
Status ReadVariableGrad(GradientContext& ctx) {
  ctx.SetInputGrad(0, ctx.output_grad(0));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("ReadVariableOp")
                   .Input("resource", "resource")
                   .Output("value", "dtype")
                   .TypeAttr("dtype", kVariableTypes)
                   .Attr("value_shape", AttrValue(PartialShape::Unknown()))
                   .Shape(ReadVariableShape)
                   .Kernel("CPU", ReadVariable)
                   .Gradient(ReadVariableGrad)
                   .Doc("The current value of a variable."));

Status CheckAssignable(const Var& var, const Tensor& value) {
  if (value.dtype() != var.dtype()) {
    return errors::InvalidArgument("Trying to assign a value of dtype ", DTypeName(value.dtype()),
                                   " to variable '", var.name(), "' of dtype ",
                                   DTypeName(var.dtype()));
  }
  if (!var.declared_shape().IsCompatibleWith(value.shape())) {
    return errors::InvalidArgument("Trying to assign a value of shape ", value.shape().ToString(),
                                   " to variable '", var.name(), "' of shape ",
                                   var.declared_shape().ToString());
  }
  return Status::OK();
}

Status AssignVariable(KernelContext& ctx) {
  Var* var = VarFromHandle(ctx.input(0));
  const Tensor& value = ctx.input(1);
  FS_RETURN_IF_ERROR(CheckAssignable(*var, value));
  std::lock_guard<std::mutex> lock(var->mu());
  var->value() = value;
  // The value is in this kernel's memory now.
  var->set_device(ctx.device()->host_memory() ? nullptr : ctx.device());
  return Status::OK();
}

Status NoOutputShape(InferenceContext&) { return Status::OK(); }

FS_REGISTER_OP(OpBuilder("AssignVariableOp")
                   .Input("resource", "resource")
                   .Input("value", "dtype")
                   .TypeAttr("dtype", kVariableTypes)
                   .Stateful()
                   .Shape(NoOutputShape)
                   .Kernel("CPU", AssignVariable)
                   .NotDifferentiable()
                   .Doc("Sets a variable's value."));

// var <- var + sign * delta, in place when no fetched value still shares the buffer.
template <int kSign>
Status AssignUpdate(KernelContext& ctx) {
  Var* var = VarFromHandle(ctx.input(0));
  const Tensor& delta = ctx.input(1);
  std::lock_guard<std::mutex> lock(var->mu());
  if (!var->initialized()) return UninitializedError(*var);
  FS_RETURN_IF_ERROR(MoveVarToMemoryOf(var, ctx.device()));
  Tensor& current = var->value();
  if (current.dtype() != delta.dtype() || current.shape() != delta.shape()) {
    return errors::InvalidArgument("Cannot update variable '", var->name(), "' of ",
                                   DTypeName(current.dtype()), current.shape().ToString(),
                                   " with a value of ", DTypeName(delta.dtype()),
                                   delta.shape().ToString(), ": shapes and dtypes must match");
  }
  // Copy on write: a value fetched or read earlier must not change under its holder.
  bool shared = !current.RefCountIsOne();
  Tensor result;
  if (shared) {
    FS_RETURN_IF_ERROR(ctx.AllocateTemp(current.dtype(), current.shape(), &result));
  } else {
    result = current;
  }
  return DispatchDType<float, double, int32_t, int64_t, complex64, complex128>(
      current.dtype(), ctx.node().type().c_str(), [&]<typename T>() -> Status {
        const T* a = current.data<T>();
        const T* d = delta.data<T>();
        T* out = result.data<T>();
        for (int64_t i = 0; i < current.num_elements(); ++i) {
          // Integers wrap around on overflow, as in TensorFlow.
          out[i] = kSign > 0 ? WrapAdd(a[i], d[i]) : WrapSub(a[i], d[i]);
        }
        var->value() = result;
        return Status::OK();
      });
}

FS_REGISTER_OP(OpBuilder("AssignAddVariableOp")
                   .Input("resource", "resource")
                   .Input("value", "dtype")
                   .TypeAttr("dtype", kRealAndComplexTypes)
                   .Stateful()
                   .Shape(NoOutputShape)
                   .Kernel("CPU", AssignUpdate<1>)
                   .NotDifferentiable()
                   .Doc("Adds to a variable's value."));

FS_REGISTER_OP(OpBuilder("AssignSubVariableOp")
                   .Input("resource", "resource")
                   .Input("value", "dtype")
                   .TypeAttr("dtype", kRealAndComplexTypes)
                   .Stateful()
                   .Shape(NoOutputShape)
                   .Kernel("CPU", AssignUpdate<-1>)
                   .NotDifferentiable()
                   .Doc("Subtracts from a variable's value."));

// The variable's old value, incremented by one, unless it reached `limit`: then OutOfRange (as TF's
// ResourceCountUpTo; tf.train.limit_epochs counts epochs with it).
Status CountUpTo(KernelContext& ctx) {
  Var* var = VarFromHandle(ctx.input(0));
  const int64_t limit = ctx.attrs().GetOr<int64_t>("limit", 0);
  std::lock_guard<std::mutex> lock(var->mu());
  if (!var->initialized()) return UninitializedError(*var);
  FS_RETURN_IF_ERROR(MoveVarToMemoryOf(var, ctx.device()));
  const Tensor& current = var->value();
  if (current.rank() != 0 || current.dtype() != ctx.output_type(0)) {
    return errors::InvalidArgument(
        "ResourceCountUpTo needs a scalar ", DTypeName(ctx.output_type(0)), " variable, but '",
        var->name(), "' holds ", DTypeName(current.dtype()), current.shape().ToString());
  }
  const int64_t before = current.ElementAsInt64(0);
  if (before >= limit) return errors::OutOfRange("Reached limit of ", limit);
  return DispatchDType<int32_t, int64_t>(
      current.dtype(), "ResourceCountUpTo", [&]<typename T>() -> Status {
        ctx.SetOutput(0, Tensor::Scalar<T>(static_cast<T>(before)));
        var->value() = Tensor::Scalar<T>(static_cast<T>(before + 1));
        return Status::OK();
      });
}

FS_REGISTER_OP(OpBuilder("ResourceCountUpTo")
                   .Input("resource", "resource")
                   .Output("output", "T")
                   .RequiredAttr("limit", AttrType::kInt)
                   .TypeAttr("T", {DType::kInt32, DType::kInt64})
                   .Stateful()
                   .Shape(shape_fns::Scalar)
                   .Kernel("CPU", CountUpTo)
                   .NotDifferentiable()
                   .Doc("Increments a scalar integer variable until it reaches `limit`; returns "
                        "the value before the increment (OutOfRange at the limit)."));

FS_REGISTER_OP(OpBuilder("VarIsInitializedOp")
                   .Input("resource", "resource")
                   .Output("is_initialized", "bool")
                   .Shape(shape_fns::Scalar)
                   .Kernel("CPU",
                           [](KernelContext& ctx) {
                             Var* var = VarFromHandle(ctx.input(0));
                             Tensor* out;
                             FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{}, &out));
                             std::lock_guard<std::mutex> lock(var->mu());
                             *out->data<bool>() = var->initialized();
                             return Status::OK();
                           })
                   .NotDifferentiable()
                   .Doc("Whether a variable has a value."));

}  // namespace
}  // namespace flowstone

namespace flowstone {
namespace {

// One bool per variable: true where it has no value yet (report_uninitialized_variables).
Status ReportUninitialized(KernelContext& ctx) {
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{ctx.num_inputs()}, &out));
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    Var* var = VarFromHandle(ctx.input(i));
    std::lock_guard<std::mutex> lock(var->mu());
    out->data<bool>()[i] = !var->initialized();
  }
  return Status::OK();
}

Status ReportUninitializedShape(InferenceContext& ctx) {
  ctx.set_output(0, PartialShape({ctx.num_inputs()}));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("ReportUninitializedVariables")
                   .InputList("resources", "resource", "N")
                   .Output("uninitialized", "bool")
                   .Shape(ReportUninitializedShape)
                   .Kernel("CPU", ReportUninitialized)
                   .NotDifferentiable()
                   .Doc("A mask of the variables that have no value yet."));

}  // namespace
}  // namespace flowstone
