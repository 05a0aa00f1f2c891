// Ops that read a dataset into ordinary tensors: DatasetCardinality (Dataset.cardinality(), the
// count each dataset reports without running) and DatasetToSingleElement
// (Dataset.get_single_element(), which runs the pipeline and wants exactly one element).
#include "dataset.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"

namespace flowstone::data {
namespace {

Status CardinalityKernel(KernelContext& ctx) {
  DatasetPtr input;
  FS_RETURN_IF_ERROR(GetInputDataset(ctx, 0, &input));
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{}, &out));
  *out->data<int64_t>() = input->Cardinality();
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("DatasetCardinality")
                   .Input("input_dataset", "variant")
                   .Output("cardinality", "int64")
                   .Attr("cardinality_options", "")
                   .Shape(shape_fns::Scalar)
                   .Kernel("CPU", CardinalityKernel)
                   .NotDifferentiable()
                   .Doc("The number of elements of the input dataset: -1 when it never ends, "
                        "-2 when it is not known without running it (a filter, a file)."));

Status SingleElementKernel(KernelContext& ctx) {
  DatasetPtr input;
  FS_RETURN_IF_ERROR(GetInputDataset(ctx, 0, &input));
  std::unique_ptr<IteratorBase> iterator = input->MakeIterator();
  Element element;
  bool end = false;
  FS_RETURN_IF_ERROR(iterator->GetNext(ctx, &element, &end));
  if (end) {
    return errors::InvalidArgument("Dataset was empty. get_single_element (node '",
                                   ctx.node().name(), "') needs a dataset of exactly one element.");
  }
  Element extra;
  bool extra_end = false;
  FS_RETURN_IF_ERROR(iterator->GetNext(ctx, &extra, &extra_end));
  if (!extra_end) {
    return errors::InvalidArgument("Dataset had more than one element. get_single_element (node '",
                                   ctx.node().name(),
                                   "') needs exactly one; use take(1) or batch first.");
  }
  std::vector<DType> types;
  FS_RETURN_IF_ERROR(ctx.attrs().Get("output_types", &types));
  if (element.size() != types.size() || ctx.num_outputs() != static_cast<int>(types.size())) {
    return errors::InvalidArgument("DatasetToSingleElement (node '", ctx.node().name(),
                                   "'): the dataset's element has ", element.size(),
                                   " components, but output_types has ", types.size());
  }
  for (size_t i = 0; i < element.size(); ++i) {
    if (element[i].dtype() != types[i]) {
      return errors::InvalidArgument(
          "DatasetToSingleElement (node '", ctx.node().name(), "'): component ", i, " has dtype ",
          DTypeName(element[i].dtype()), ", but output_types says ", DTypeName(types[i]));
    }
    ctx.SetOutput(static_cast<int>(i), std::move(element[i]));
  }
  return Status::OK();
}

Status SingleElementShape(InferenceContext& ctx) {
  std::vector<PartialShape> shapes;
  FS_RETURN_IF_ERROR(ctx.GetAttr("output_shapes", &shapes));
  for (int i = 0; i < ctx.num_outputs() && i < static_cast<int>(shapes.size()); ++i) {
    ctx.set_output(i, shapes[i]);
  }
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("DatasetToSingleElement")
                   .Input("dataset", "variant")
                   .OutputTypeList("components", "output_types")
                   .RequiredAttr("output_types", AttrType::kTypeList)
                   .RequiredAttr("output_shapes", AttrType::kShapeList)
                   .Attr("metadata", "")
                   .Stateful()
                   .Shape(SingleElementShape)
                   .Kernel("CPU", SingleElementKernel)
                   .NotDifferentiable()
                   .Doc("The one element of the input dataset (Dataset.get_single_element); "
                        "InvalidArgument when it has none or more than one."));

}  // namespace
}  // namespace flowstone::data
