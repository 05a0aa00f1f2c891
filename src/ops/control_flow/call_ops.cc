// PartitionedCall and StatefulPartitionedCall: call a library function with inputs (TF's op
// defs: Tin, Tout, f). The body runs as a nested plan compiled once per kernel instance.
#include "flowstone/op_registry.h"
#include "function_call.h"
#include "function_gradient.h"

namespace flowstone {
namespace {

Status CallShape(InferenceContext& ctx) {
  std::vector<DType> tin, tout;
  FS_RETURN_IF_ERROR(ctx.GetAttr("Tin", &tin));
  FS_RETURN_IF_ERROR(ctx.GetAttr("Tout", &tout));
  const FunctionDef* function;
  FS_RETURN_IF_ERROR(CheckCallSignature(ctx, "f", tin, &tout, &function));
  ctx.outputs() = ReturnShapes(*function);
  return Status::OK();
}

class CallKernel final : public OpKernel {
 public:
  explicit CallKernel(const Node& node)
      : OpKernel(node), function_(node.attrs().GetOr<FunctionRef>("f", {}).name) {}

  Status Compute(KernelContext& ctx) override {
    std::vector<Tensor> args(ctx.num_inputs());
    for (int i = 0; i < ctx.num_inputs(); ++i) args[i] = ctx.input(i);
    std::vector<Tensor> rets;
    FS_RETURN_IF_ERROR(function_.Call(ctx, args, &rets));
    for (int i = 0; i < ctx.num_outputs(); ++i) ctx.SetOutput(i, std::move(rets[i]));
    return Status::OK();
  }

 private:
  FunctionCaller function_;
};

// The two ops differ only in TF's statefulness mark (a stateful call is never deduplicated).
struct CallOpRow {
  const char* name;
  bool stateful;
};
constexpr CallOpRow kCallOps[] = {{"PartitionedCall", false}, {"StatefulPartitionedCall", true}};

bool RegisterCallOps() {
  for (const CallOpRow& row : kCallOps) {
    OpBuilder b(row.name);
    b.InputTypeList("args", "Tin")
        .OutputTypeList("output", "Tout")
        .RequiredAttr("f", AttrType::kFunc)
        .Attr("config", "")
        .Attr("config_proto", "")
        .Attr("executor_type", "")
        .Shape(CallShape)
        .KernelClass<CallKernel>("CPU")
        .Gradient([](GradientContext& ctx) { return CallGradient(ctx, "f"); });
    if (row.stateful) b.Stateful();
    OpRegistrar registrar(b);
  }
  return true;
}
const bool kCallOpsRegistered = RegisterCallOps();

}  // namespace
}  // namespace flowstone
