// ReduceDataset (Dataset.reduce): folds a dataset into a state with a user function,
// state = f(state..., element..., captured...), starting from initial_state, and outputs the
// final state. The whole walk runs in this kernel, through the same FunctionCaller as the
// functional ops, with no Python per element.
#include "dataset.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/control_flow/function_call.h"

namespace flowstone::data {
namespace {

class ReduceDatasetKernel final : public OpKernel {
 public:
  explicit ReduceDatasetKernel(const Node& node)
      : OpKernel(node), function_(node.attrs().GetOr<FunctionRef>("f", {}).name) {}

  Status Init() override { return node().attrs().Get("Tstate", &state_types_); }

  Status Compute(KernelContext& ctx) override {
    DatasetPtr input;
    FS_RETURN_IF_ERROR(GetInputDataset(ctx, 0, &input));
    const int num_state = static_cast<int>(state_types_.size());
    std::vector<Tensor> state(num_state);
    for (int i = 0; i < num_state; ++i) state[i] = ctx.input(1 + i);
    std::unique_ptr<IteratorBase> iterator = input->MakeIterator();
    while (true) {
      Element element;
      bool end = false;
      FS_RETURN_IF_ERROR(iterator->GetNext(ctx, &element, &end));
      if (end) break;
      std::vector<Tensor> args = state;
      args.insert(args.end(), element.begin(), element.end());
      for (int i = 1 + num_state; i < ctx.num_inputs(); ++i) args.push_back(ctx.input(i));
      std::vector<Tensor> next;
      FS_RETURN_IF_ERROR(Annotate(function_.Call(ctx, args, &next)));
      FS_RETURN_IF_ERROR(Annotate(CheckState(next)));
      state = std::move(next);
    }
    for (int i = 0; i < num_state; ++i) ctx.SetOutput(i, std::move(state[i]));
    return Status::OK();
  }

 private:
  // The function must return a state of the initial state's dtypes.
  Status CheckState(const std::vector<Tensor>& next) const {
    if (next.size() != state_types_.size()) {
      return errors::InvalidArgument("The reduce function returned ", next.size(),
                                     " components, but the state has ", state_types_.size());
    }
    for (size_t i = 0; i < next.size(); ++i) {
      if (next[i].dtype() != state_types_[i]) {
        return errors::InvalidArgument("The reduce function returned ", DTypeName(next[i].dtype()),
                                       " for state component ", i, ", which is ",
                                       DTypeName(state_types_[i]));
      }
    }
    return Status::OK();
  }

  Status Annotate(const Status& s) const {
    if (s.ok()) return s;
    return Status(s.code(), StrCat(s.message(), "\n\t [[in ReduceDataset '", node().name(), "']]"));
  }

  FunctionCaller function_;
  std::vector<DType> state_types_;
};

Status ReduceDatasetShape(InferenceContext& ctx) {
  std::vector<PartialShape> shapes;
  FS_RETURN_IF_ERROR(ctx.GetAttr("output_shapes", &shapes));
  for (int i = 0; i < ctx.num_outputs() && i < static_cast<int>(shapes.size()); ++i) {
    ctx.set_output(i, shapes[i]);
  }
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("ReduceDataset")
                   .Input("input_dataset", "variant")
                   .InputTypeList("initial_state", "Tstate")
                   .InputTypeList("other_arguments", "Targuments")
                   .OutputTypeList("components", "output_types")
                   .RequiredAttr("f", AttrType::kFunc)
                   .RequiredAttr("output_types", AttrType::kTypeList)
                   .RequiredAttr("output_shapes", AttrType::kShapeList)
                   .Attr("use_inter_op_parallelism", true)
                   .Attr("metadata", "")
                   .Stateful()
                   .Shape(ReduceDatasetShape)
                   .KernelClass<ReduceDatasetKernel>("CPU")
                   .NotDifferentiable()
                   .Doc("The state f leaves after folding every element of the input into "
                        "initial_state (Dataset.reduce)."));

}  // namespace
}  // namespace flowstone::data
