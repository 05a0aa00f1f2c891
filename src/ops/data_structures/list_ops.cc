// TensorList ops, with TensorFlow's op definitions (tf.raw_ops.TensorList*) and gradients. A list
// is a scalar variant tensor; ops that change a list output a new value, updating the input's list
// in place only when they hold its last reference (see tensor_list.h).
#include <cstring>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/data_structures/tensor_list.h"

namespace flowstone {
namespace {

const std::vector<DType> kShapeTypes = {DType::kInt32, DType::kInt64};

// Element dtypes of the ops that move whole elements: every dtype, and variants (lists of lists,
// such as the histories a loop's gradient keeps of TensorArrays). Ops that copy element data
// (stack, gather, scatter, concat, split) take kAllTypes only.
// Spelled out: kAllTypes lives in another file, whose static initialization may come later.
const std::vector<DType> kElementTypes = {DType::kFloat32, DType::kFloat64,  DType::kInt32,
                                          DType::kInt64,   DType::kUInt8,    DType::kBool,
                                          DType::kFloat16, DType::kBFloat16, DType::kVariant};

// --- Element shapes -------------------------------------------------------------------------

// An element_shape input: -1 (a scalar) for an unknown rank, or a vector with -1 for each
// unknown dimension.
Status ReadElementShape(KernelContext& ctx, int input, PartialShape* shape) {
  const Tensor& t = ctx.input(input);
  if (t.dtype() != DType::kInt32 && t.dtype() != DType::kInt64) {
    return errors::InvalidArgument(
        ctx.node().type(), ": element_shape must be int32 or int64, got ", DTypeName(t.dtype()));
  }
  if (t.rank() == 0) {
    if (t.ElementAsInt64(0) != -1) {
      return errors::InvalidArgument(ctx.node().type(),
                                     ": a scalar element_shape must be -1 (unknown rank), got ",
                                     t.ElementAsInt64(0));
    }
    *shape = PartialShape::Unknown();
    return Status::OK();
  }
  if (t.rank() != 1) {
    return errors::InvalidArgument(ctx.node().type(),
                                   ": element_shape must be a scalar or a vector, got shape ",
                                   t.shape().ToString());
  }
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    int64_t d = t.ElementAsInt64(i);
    if (d < -1) {
      return errors::InvalidArgument(ctx.node().type(), ": element_shape has dimension ", d,
                                     " at index ", i, "; dimensions must be >= -1");
    }
    dims.push_back(d < 0 ? PartialShape::kUnknownDim : d);
  }
  *shape = PartialShape(dims);
  return Status::OK();
}

// The static counterpart for shape functions.
Status ElementShapeOfInput(InferenceContext& ctx, int input, PartialShape* shape) {
  if (ctx.input(input).known_rank() && ctx.input(input).rank() == 0) {
    *shape = PartialShape::Unknown();
    return Status::OK();
  }
  return ctx.InputAsShape(input, shape);
}

// A shape as an element_shape tensor of `dtype` (int32 or int64).
Tensor ElementShapeTensor(const PartialShape& shape, DType dtype) {
  if (!shape.known_rank()) {
    return dtype == DType::kInt64 ? Tensor::Scalar<int64_t>(-1) : Tensor::Scalar<int32_t>(-1);
  }
  Tensor t = Tensor::Host(dtype, TensorShape{shape.rank()});
  for (int i = 0; i < shape.rank(); ++i) {
    int64_t d = shape.dim(i) < 0 ? -1 : shape.dim(i);
    if (dtype == DType::kInt64) {
      t.data<int64_t>()[i] = d;
    } else {
      t.data<int32_t>()[i] = static_cast<int32_t>(d);
    }
  }
  return t;
}

// Merges the shapes that describe a list's elements; fails naming the op.
Status MergeShapes(const std::string& op, const PartialShape& a, const PartialShape& b,
                   PartialShape* out) {
  Status s = a.Merge(b, out);
  if (!s.ok()) {
    return errors::InvalidArgument(op, ": incompatible element shapes ", a.ToString(), " and ",
                                   b.ToString());
  }
  return Status::OK();
}

// The shape of the list's elements as far as the list, the op's element_shape and the elements
// already set tell it.
Status ResolveElementShape(const std::string& op, const TensorList& list,
                           const PartialShape& requested, PartialShape* out) {
  FS_RETURN_IF_ERROR(MergeShapes(op, list.element_shape, requested, out));
  for (const Tensor& t : list.tensors) {
    if (out->IsFullyDefined()) break;
    if (t.initialized()) FS_RETURN_IF_ERROR(MergeShapes(op, *out, PartialShape(t.shape()), out));
  }
  return Status::OK();
}

Status Zeros(KernelContext& ctx, DType dtype, const TensorShape& shape, Tensor* out) {
  FS_RETURN_IF_ERROR(ctx.AllocateTemp(dtype, shape, out));
  // Variants are allocated empty; other dtypes are zero in all-zero bytes.
  if (dtype != DType::kVariant) std::memset(out->raw_data(), 0, out->bytes());
  return Status::OK();
}

// Element `index` of the list, or zeros when it was never set and its shape is known.
Status ReadElement(KernelContext& ctx, const TensorList& list, int64_t index,
                   const PartialShape& requested, Tensor* out) {
  const Tensor& t = list.tensors[index];
  if (t.initialized()) {
    *out = t;
    return Status::OK();
  }
  PartialShape shape;
  FS_RETURN_IF_ERROR(ResolveElementShape(ctx.node().type(), list, requested, &shape));
  if (!shape.IsFullyDefined()) {
    return errors::InvalidArgument(
        ctx.node().type(), ": trying to read element ", index,
        " of a list, which was never set, and its element shape ", shape.ToString(),
        " is not fully defined, so it cannot be read as zeros. Set the element first, or give "
        "the list a fully defined element_shape.");
  }
  return Zeros(ctx, list.element_dtype, shape.ToTensorShape(), out);
}

Status CheckDType(KernelContext& ctx, const TensorList& list) {
  DType requested = ctx.attrs().GetOr<DType>("element_dtype", DType::kInvalid);
  if (requested != list.element_dtype) {
    return errors::InvalidArgument("Invalid data types; op elements ", DTypeShortName(requested),
                                   " but list elements ", DTypeShortName(list.element_dtype), " (",
                                   ctx.node().type(), ")");
  }
  return Status::OK();
}

Status CheckElement(KernelContext& ctx, const TensorList& list, const Tensor& item) {
  if (item.dtype() != list.element_dtype) {
    return errors::InvalidArgument("Invalid data types; op elements ", DTypeShortName(item.dtype()),
                                   " but list elements ", DTypeShortName(list.element_dtype), " (",
                                   ctx.node().type(), ")");
  }
  if (!list.element_shape.IsCompatibleWith(item.shape())) {
    return errors::InvalidArgument(ctx.node().type(),
                                   ": tried to add a tensor of incompatible shape to a list. "
                                   "Item shape: ",
                                   item.shape().ToString(),
                                   ", list element shape: ", list.element_shape.ToString());
  }
  return Status::OK();
}

// TensorFlow's message ("Trying to access element 7 in a list with 3 elements.") with the valid
// range and the op.
Status CheckIndex(KernelContext& ctx, const TensorList& list, int64_t index,
                  const char* verb = "access") {
  const int64_t size = static_cast<int64_t>(list.tensors.size());
  if (index < 0 || index >= size) {
    return errors::InvalidArgument(
        "Trying to ", verb, " element ", index, " in a list with ", size,
        " elements; valid indices are ",
        size == 0 ? std::string("none (the list is empty)") : StrCat("0 to ", size - 1), " (",
        ctx.node().type(), ")");
  }
  return Status::OK();
}

// Copies `elements` (all of `shape`) into one tensor of shape [n] + shape.
Status StackElements(KernelContext& ctx, int output, const std::vector<Tensor>& elements,
                     const TensorShape& shape) {
  TensorShape stacked = shape;
  stacked.mutable_dims().insert(0, static_cast<int64_t>(elements.size()));
  Tensor* out = nullptr;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(output, stacked, &out));
  char* dst = static_cast<char*>(out->raw_data());
  for (size_t k = 0; k < elements.size(); ++k) {
    const Tensor& t = elements[k];
    if (t.shape() != shape) {
      return errors::InvalidArgument(ctx.node().type(),
                                     ": all elements must have the same shape to be stacked, "
                                     "but element ",
                                     k, " has shape ", t.shape().ToString(), " and others ",
                                     shape.ToString());
    }
    std::memcpy(dst, t.raw_data(), t.bytes());
    dst += t.bytes();
  }
  return Status::OK();
}

// Rows [begin, begin + count) of `tensor` (rank >= 1) as a new tensor.
Status Rows(KernelContext& ctx, const Tensor& tensor, int64_t begin, int64_t count, Tensor* out) {
  TensorShape shape = tensor.shape();
  shape.set_dim(0, count);
  FS_RETURN_IF_ERROR(ctx.AllocateTemp(tensor.dtype(), shape, out));
  const size_t row_bytes =
      tensor.dim(0) == 0 ? 0 : tensor.bytes() / static_cast<size_t>(tensor.dim(0));
  std::memcpy(out->raw_data(), static_cast<const char*>(tensor.raw_data()) + begin * row_bytes,
              count * row_bytes);
  return Status::OK();
}

// Element k of a list made from the rows of `tensor`.
Status Row(KernelContext& ctx, const Tensor& tensor, int64_t k, Tensor* out) {
  Tensor rows;
  FS_RETURN_IF_ERROR(Rows(ctx, tensor, k, 1, &rows));
  TensorShape element = tensor.shape();
  element.mutable_dims().erase(0);
  *out = rows.Reshaped(element);
  return Status::OK();
}

Status CheckRankAtLeastOne(KernelContext& ctx, const Tensor& tensor, const char* what) {
  if (tensor.rank() < 1) {
    return errors::InvalidArgument(ctx.node().type(), ": ", what,
                                   " must be at least a vector, but has shape ",
                                   tensor.shape().ToString());
  }
  return Status::OK();
}

Status Indices(KernelContext& ctx, int input, std::vector<int64_t>* indices) {
  const Tensor& t = ctx.input(input);
  if (t.rank() != 1) {
    return errors::InvalidArgument(ctx.node().type(), ": indices must be a vector, got shape ",
                                   t.shape().ToString());
  }
  indices->resize(t.num_elements());
  for (int64_t i = 0; i < t.num_elements(); ++i) (*indices)[i] = t.ElementAsInt64(i);
  return Status::OK();
}

AttrMap DTypeAttrs(DType element_dtype) {
  AttrMap attrs;
  attrs.Set("element_dtype", element_dtype);
  return attrs;
}

AttrMap ListAttrs(DType element_dtype, DType shape_type = DType::kInt32) {
  AttrMap attrs = DTypeAttrs(element_dtype);
  attrs.Set("shape_type", shape_type);
  return attrs;
}

DType ElementDType(GradientContext& ctx) {
  return ctx.attrs().GetOr<DType>("element_dtype", DType::kFloat32);
}

// The int32 element shape of the list `list`, as a graph tensor.
Endpoint ElementShapeOf(GradientContext& ctx, Endpoint list) {
  AttrMap attrs;
  attrs.Set("shape_type", DType::kInt32);
  return ctx.Op("TensorListElementShape", {list}, attrs);
}

// x.shape[1:] as an int32 graph tensor.
Endpoint ShapeAfterFirst(GradientContext& ctx, Endpoint x) {
  return ctx.Op("Slice", {ctx.Shape(x), ctx.Const(Tensor::FromVector<int32_t>({1}, {1})),
                          ctx.Const(Tensor::FromVector<int32_t>({-1}, {1}))});
}

// [-1] + x.shape[1:]: the element shape of pieces of x along dimension 0.
Endpoint PieceShape(GradientContext& ctx, Endpoint x) {
  return ctx.Op("ConcatV2", {ctx.Const(Tensor::FromVector<int32_t>({-1}, {1})),
                             ShapeAfterFirst(ctx, x), ctx.Const(Tensor::Scalar<int32_t>(0))});
}

// A scalar index input, checked.
Status ScalarIndex(KernelContext& ctx, int input, int64_t* index) {
  const Tensor& t = ctx.input(input);
  if (t.num_elements() != 1 || t.rank() != 0) {
    return errors::InvalidArgument(ctx.node().type(), ": index must be a scalar, got shape ",
                                   t.shape().ToString());
  }
  *index = t.ElementAsInt64(0);
  return Status::OK();
}

Status HandleShape(InferenceContext& ctx) { return shape_fns::Scalar(ctx); }

// --- EmptyTensorList, TensorListReserve -------------------------------------------------------

Status EmptyTensorListKernel(KernelContext& ctx) {
  PartialShape shape;
  FS_RETURN_IF_ERROR(ReadElementShape(ctx, 0, &shape));
  const Tensor& max = ctx.input(1);
  if (max.num_elements() != 1) {
    return errors::InvalidArgument("EmptyTensorList: max_num_elements must be a scalar, got shape ",
                                   max.shape().ToString());
  }
  int64_t max_num_elements = max.ElementAsInt64(0);
  if (max_num_elements < -1) {
    return errors::InvalidArgument(
        "EmptyTensorList: max_num_elements must be -1 (unbounded) or >= 0, got ", max_num_elements);
  }
  return OutputNewList(
      ctx, 0,
      std::make_unique<TensorList>(ctx.attrs().GetOr<DType>("element_dtype", DType::kFloat32),
                                   shape, max_num_elements));
}

FS_REGISTER_OP(OpBuilder("EmptyTensorList")
                   .Input("element_shape", "shape_type")
                   .Input("max_num_elements", "int32")
                   .Output("handle", "variant")
                   .TypeAttr("element_dtype", kElementTypes)
                   .TypeAttr("shape_type", kShapeTypes)
                   .Shape(HandleShape)
                   .Kernel("CPU", EmptyTensorListKernel)
                   .NotDifferentiable()
                   .Doc("An empty list of tensors of element_dtype and element_shape."));

Status TensorListReserveKernel(KernelContext& ctx) {
  PartialShape shape;
  FS_RETURN_IF_ERROR(ReadElementShape(ctx, 0, &shape));
  const Tensor& count = ctx.input(1);
  if (count.num_elements() != 1) {
    return errors::InvalidArgument("TensorListReserve: num_elements must be a scalar, got shape ",
                                   count.shape().ToString());
  }
  const int64_t n = count.ElementAsInt64(0);
  if (n < 0) {
    return errors::InvalidArgument(
        "The num_elements to reserve must be a non negative number, but got ", n);
  }
  auto list = std::make_unique<TensorList>(
      ctx.attrs().GetOr<DType>("element_dtype", DType::kFloat32), shape);
  FS_RETURN_IF_ERROR(ResizeList(ctx, list.get(), n));
  return OutputNewList(ctx, 0, std::move(list));
}

FS_REGISTER_OP(OpBuilder("TensorListReserve")
                   .Input("element_shape", "shape_type")
                   .Input("num_elements", "int32")
                   .Output("handle", "variant")
                   .TypeAttr("element_dtype", kElementTypes)
                   .TypeAttr("shape_type", kShapeTypes)
                   .Shape(HandleShape)
                   .Kernel("CPU", TensorListReserveKernel)
                   .NotDifferentiable()
                   .Doc("A list of num_elements unset elements (read as zeros)."));

// --- TensorListFromTensor, TensorListStack ----------------------------------------------------

Status FromTensorKernel(KernelContext& ctx) {
  const Tensor& tensor = ctx.input(0);
  FS_RETURN_IF_ERROR(CheckRankAtLeastOne(ctx, tensor, "tensor"));
  PartialShape shape;
  FS_RETURN_IF_ERROR(ReadElementShape(ctx, 1, &shape));
  TensorShape element = tensor.shape();
  element.mutable_dims().erase(0);
  if (!shape.IsCompatibleWith(element)) {
    return errors::InvalidArgument("Specified a list with shape ", shape.ToString(),
                                   " from a tensor with shape ", tensor.shape().ToString());
  }
  auto list = std::make_unique<TensorList>(tensor.dtype(), shape);
  list->tensors.resize(tensor.dim(0));
  for (int64_t k = 0; k < tensor.dim(0); ++k) {
    FS_RETURN_IF_ERROR(Row(ctx, tensor, k, &list->tensors[k]));
  }
  return OutputNewList(ctx, 0, std::move(list));
}

// d(list from tensor) = stack(dlist).
Status FromTensorGrad(GradientContext& ctx) {
  Endpoint tensor = ctx.input(0);
  AttrMap attrs = DTypeAttrs(ElementDType(ctx));
  const PartialShape& shape = tensor.node->output_shape(tensor.index);
  attrs.Set("num_elements",
            shape.known_rank() && shape.rank() > 0 && shape.dim(0) >= 0 ? shape.dim(0) : -1);
  ctx.SetInputGrad(
      0, ctx.Op("TensorListStack", {ctx.output_grad(0), ShapeAfterFirst(ctx, tensor)}, attrs));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("TensorListFromTensor")
                   .Input("tensor", "element_dtype")
                   .Input("element_shape", "shape_type")
                   .Output("output_handle", "variant")
                   .TypeAttr("element_dtype", kAllTypes)
                   .TypeAttr("shape_type", kShapeTypes)
                   .Shape(HandleShape)
                   .Kernel("CPU", FromTensorKernel)
                   .Gradient(FromTensorGrad)
                   .Doc("A list of the rows of tensor (its slices along dimension 0)."));

Status StackKernel(KernelContext& ctx) {
  const TensorList* list = nullptr;
  FS_RETURN_IF_ERROR(GetInputList(ctx, 0, &list));
  FS_RETURN_IF_ERROR(CheckDType(ctx, *list));
  PartialShape requested;
  FS_RETURN_IF_ERROR(ReadElementShape(ctx, 1, &requested));
  const int64_t expected = ctx.attrs().GetOr<int64_t>("num_elements", -1);
  const int64_t size = static_cast<int64_t>(list->tensors.size());
  if (expected != -1 && expected != size) {
    return errors::InvalidArgument("Operation expected a list with ", expected,
                                   " elements but got a list with ", size, " elements.");
  }
  PartialShape shape;
  FS_RETURN_IF_ERROR(ResolveElementShape(ctx.node().type(), *list, requested, &shape));
  if (!shape.IsFullyDefined()) {
    return errors::InvalidArgument(
        "TensorListStack: tried to stack elements of a list whose element shape ", shape.ToString(),
        " is not fully defined and which has no element set to learn it from. Give the list "
        "(or the TensorArray) a fully defined element_shape.");
  }
  std::vector<Tensor> elements(size);
  for (int64_t k = 0; k < size; ++k) {
    FS_RETURN_IF_ERROR(ReadElement(ctx, *list, k, shape, &elements[k]));
  }
  return StackElements(ctx, 0, elements, shape.ToTensorShape());
}

Status StackShape(InferenceContext& ctx) {
  PartialShape element;
  FS_RETURN_IF_ERROR(ElementShapeOfInput(ctx, 1, &element));
  const int64_t n = ctx.attrs().GetOr<int64_t>("num_elements", -1);
  if (!element.known_rank()) {
    ctx.set_output(0, PartialShape::Unknown());
    return Status::OK();
  }
  std::vector<int64_t> dims = element.ToVector();
  dims.insert(dims.begin(), n >= 0 ? n : PartialShape::kUnknownDim);
  ctx.set_output(0, PartialShape(dims));
  return Status::OK();
}

// d(stack(list)) = a list of the rows of dtensor.
Status StackGrad(GradientContext& ctx) {
  Endpoint dtensor = ctx.output_grad(0);
  ctx.SetInputGrad(0, ctx.Op("TensorListFromTensor", {dtensor, ShapeAfterFirst(ctx, dtensor)},
                             ListAttrs(ElementDType(ctx))));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("TensorListStack")
                   .Input("input_handle", "variant")
                   .Input("element_shape", "int32")
                   .Output("tensor", "element_dtype")
                   .TypeAttr("element_dtype", kAllTypes)
                   .Attr("num_elements", -1)
                   .Shape(StackShape)
                   .Kernel("CPU", StackKernel)
                   .Gradient(StackGrad)
                   .Doc("The list's elements stacked into one tensor along a new dimension 0."));

// --- TensorListGetItem, TensorListSetItem -----------------------------------------------------

Status GetItemKernel(KernelContext& ctx) {
  const TensorList* list = nullptr;
  FS_RETURN_IF_ERROR(GetInputList(ctx, 0, &list));
  FS_RETURN_IF_ERROR(CheckDType(ctx, *list));
  int64_t index = 0;
  FS_RETURN_IF_ERROR(ScalarIndex(ctx, 1, &index));
  FS_RETURN_IF_ERROR(CheckIndex(ctx, *list, index));
  PartialShape requested;
  FS_RETURN_IF_ERROR(ReadElementShape(ctx, 2, &requested));
  Tensor item;
  FS_RETURN_IF_ERROR(ReadElement(ctx, *list, index, requested, &item));
  ctx.SetOutput(0, std::move(item));
  return Status::OK();
}

Status ItemShape(InferenceContext& ctx) {
  PartialShape element;
  FS_RETURN_IF_ERROR(ElementShapeOfInput(ctx, 2, &element));
  ctx.set_output(0, element);
  return Status::OK();
}

// d(list[i]) = a list of zeros with ditem at i.
Status GetItemGrad(GradientContext& ctx) {
  Endpoint list = ctx.input(0);
  Endpoint zeros =
      ctx.Op("TensorListReserve", {ElementShapeOf(ctx, list), ctx.Op("TensorListLength", {list})},
             ListAttrs(ElementDType(ctx)));
  ctx.SetInputGrad(0, ctx.Op("TensorListSetItem", {zeros, ctx.input(1), ctx.output_grad(0)},
                             DTypeAttrs(ElementDType(ctx))));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("TensorListGetItem")
                   .Input("input_handle", "variant")
                   .Input("index", "int32")
                   .Input("element_shape", "Tshape")
                   .Output("item", "element_dtype")
                   .TypeAttr("element_dtype", kElementTypes)
                   .TypeAttr("Tshape", kShapeTypes, DType::kInt32)
                   .Shape(ItemShape)
                   .Kernel("CPU", GetItemKernel)
                   .Gradient(GetItemGrad)
                   .Doc("Element index of the list (zeros if it was never set)."));

Status SetItemKernel(KernelContext& ctx) {
  const TensorList* in = nullptr;
  FS_RETURN_IF_ERROR(GetInputList(ctx, 0, &in));
  const Tensor item = ctx.input(2);
  FS_RETURN_IF_ERROR(CheckElement(ctx, *in, item));
  int64_t index = 0;
  FS_RETURN_IF_ERROR(ScalarIndex(ctx, 1, &index));
  const bool resize = ctx.attrs().GetOr<bool>("resize_if_index_out_of_bounds", false);
  if (!(resize && index >= 0)) FS_RETURN_IF_ERROR(CheckIndex(ctx, *in, index, "modify"));
  TensorList* list = nullptr;
  FS_RETURN_IF_ERROR(ForwardInputList(ctx, 0, 0, &list));
  if (index >= static_cast<int64_t>(list->tensors.size())) {
    FS_RETURN_IF_ERROR(ResizeList(ctx, list, index + 1));
  }
  list->tensors[index] = item;
  return Status::OK();
}

// The item's gradient is dlist[i]; the list's is dlist with zeros at i.
Status SetItemGrad(GradientContext& ctx) {
  Endpoint dlist = ctx.output_grad(0);
  Endpoint item = ctx.input(2);
  AttrMap get = DTypeAttrs(ElementDType(ctx));
  ctx.SetInputGrad(2, ctx.Op("TensorListGetItem", {dlist, ctx.input(1), ctx.Shape(item)}, get));
  ctx.SetInputGrad(0,
                   ctx.Op("TensorListSetItem", {dlist, ctx.input(1), ctx.Op("ZerosLike", {item})},
                          DTypeAttrs(ElementDType(ctx))));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("TensorListSetItem")
                   .Input("input_handle", "variant")
                   .Input("index", "int32")
                   .Input("item", "element_dtype")
                   .Output("output_handle", "variant")
                   .TypeAttr("element_dtype", kElementTypes)
                   .Attr("resize_if_index_out_of_bounds", false)
                   .Shape(HandleShape)
                   .Kernel("CPU", SetItemKernel)
                   .Gradient(SetItemGrad)
                   .Doc("The list with element index replaced by item."));

// --- TensorListPushBack, TensorListPopBack ----------------------------------------------------

Status PushBackKernel(KernelContext& ctx) {
  const TensorList* in = nullptr;
  FS_RETURN_IF_ERROR(GetInputList(ctx, 0, &in));
  const Tensor item = ctx.input(1);
  FS_RETURN_IF_ERROR(CheckElement(ctx, *in, item));
  if (in->max_num_elements != -1 &&
      static_cast<int64_t>(in->tensors.size()) >= in->max_num_elements) {
    return errors::InvalidArgument("Tried to push item into a full list list size: ",
                                   in->tensors.size(), " max_num_elements: ", in->max_num_elements);
  }
  TensorList* list = nullptr;
  FS_RETURN_IF_ERROR(ForwardInputList(ctx, 0, 0, &list));
  list->tensors.push_back(item);
  return Status::OK();
}

// d(push_back(list, x)) = pop_back(dlist).
Status PushBackGrad(GradientContext& ctx) {
  Node* pop = ctx.AddNode("TensorListPopBack", {ctx.output_grad(0), ctx.Shape(ctx.input(1))},
                          DTypeAttrs(ElementDType(ctx)));
  if (pop == nullptr) return ctx.status();
  ctx.SetInputGrad(0, Endpoint{pop, 0});
  ctx.SetInputGrad(1, Endpoint{pop, 1});
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("TensorListPushBack")
                   .Input("input_handle", "variant")
                   .Input("tensor", "element_dtype")
                   .Output("output_handle", "variant")
                   .TypeAttr("element_dtype", kElementTypes)
                   .Shape(HandleShape)
                   .Kernel("CPU", PushBackKernel)
                   .Gradient(PushBackGrad)
                   .Doc("The list with tensor appended."));

Status PopBackKernel(KernelContext& ctx) {
  const TensorList* in = nullptr;
  FS_RETURN_IF_ERROR(GetInputList(ctx, 0, &in));
  FS_RETURN_IF_ERROR(CheckDType(ctx, *in));
  if (in->tensors.empty()) {
    return errors::InvalidArgument("Trying to pop from an empty list.");
  }
  PartialShape requested;
  FS_RETURN_IF_ERROR(ReadElementShape(ctx, 1, &requested));
  Tensor item;
  FS_RETURN_IF_ERROR(ReadElement(ctx, *in, in->tensors.size() - 1, requested, &item));
  TensorList* list = nullptr;
  FS_RETURN_IF_ERROR(ForwardInputList(ctx, 0, 0, &list));
  list->tensors.pop_back();
  ctx.SetOutput(1, std::move(item));
  return Status::OK();
}

Status PopBackShape(InferenceContext& ctx) {
  ctx.set_output(0, PartialShape{});
  PartialShape element;
  FS_RETURN_IF_ERROR(ElementShapeOfInput(ctx, 1, &element));
  ctx.set_output(1, element);
  return Status::OK();
}

// d(pop_back(list)) = push_back(dlist, ditem). A missing dlist is a list of unset (zero)
// elements as long as the remaining list, so ditem lands where the item was (TensorFlow starts
// from an empty list there, which puts it first).
Status PopBackGrad(GradientContext& ctx) {
  Endpoint rest = ctx.output(0);
  Endpoint dlist = ctx.has_output_grad(0)
                       ? ctx.output_grad(0)
                       : ctx.Op("TensorListReserve",
                                {ElementShapeOf(ctx, rest), ctx.Op("TensorListLength", {rest})},
                                ListAttrs(ElementDType(ctx)));
  ctx.SetInputGrad(
      0, ctx.Op("TensorListPushBack", {dlist, ctx.output_grad(1)}, DTypeAttrs(ElementDType(ctx))));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("TensorListPopBack")
                   .Input("input_handle", "variant")
                   .Input("element_shape", "int32")
                   .Output("output_handle", "variant")
                   .Output("tensor", "element_dtype")
                   .TypeAttr("element_dtype", kElementTypes)
                   .Shape(PopBackShape)
                   .Kernel("CPU", PopBackKernel)
                   .Gradient(PopBackGrad)
                   .Doc("The list without its last element, and that element."));

// --- TensorListLength, TensorListElementShape -------------------------------------------------

FS_REGISTER_OP(OpBuilder("TensorListLength")
                   .Input("input_handle", "variant")
                   .Output("length", "int32")
                   .Shape(shape_fns::Scalar)
                   .Kernel("CPU",
                           [](KernelContext& ctx) {
                             const TensorList* list = nullptr;
                             FS_RETURN_IF_ERROR(GetInputList(ctx, 0, &list));
                             ctx.SetOutput(0, Tensor::Scalar<int32_t>(
                                                  static_cast<int32_t>(list->tensors.size())));
                             return Status::OK();
                           })
                   .NotDifferentiable()
                   .Doc("The number of elements in the list."));

Status ElementShapeKernel(KernelContext& ctx) {
  const TensorList* list = nullptr;
  FS_RETURN_IF_ERROR(GetInputList(ctx, 0, &list));
  ctx.SetOutput(0, ElementShapeTensor(list->element_shape, ctx.output_type(0)));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("TensorListElementShape")
                   .Input("input_handle", "variant")
                   .Output("element_shape", "shape_type")
                   .TypeAttr("shape_type", kShapeTypes)
                   .Shape([](InferenceContext& ctx) {
                     ctx.set_output(0, PartialShape::Unknown());
                     return Status::OK();
                   })
                   .Kernel("CPU", ElementShapeKernel)
                   .NotDifferentiable()
                   .Doc("The list's element shape: -1 for an unknown rank, else a vector with -1 "
                        "for unknown dimensions."));

// --- TensorListGather, TensorListScatterV2, TensorListScatterIntoExistingList -----------------

Status GatherKernel(KernelContext& ctx) {
  const TensorList* list = nullptr;
  FS_RETURN_IF_ERROR(GetInputList(ctx, 0, &list));
  FS_RETURN_IF_ERROR(CheckDType(ctx, *list));
  std::vector<int64_t> indices;
  FS_RETURN_IF_ERROR(Indices(ctx, 1, &indices));
  PartialShape requested;
  FS_RETURN_IF_ERROR(ReadElementShape(ctx, 2, &requested));
  PartialShape shape;
  FS_RETURN_IF_ERROR(ResolveElementShape(ctx.node().type(), *list, requested, &shape));
  std::vector<Tensor> elements(indices.size());
  for (size_t k = 0; k < indices.size(); ++k) {
    FS_RETURN_IF_ERROR(CheckIndex(ctx, *list, indices[k]));
    FS_RETURN_IF_ERROR(ReadElement(ctx, *list, indices[k], shape, &elements[k]));
  }
  if (!elements.empty()) shape = PartialShape(elements[0].shape());
  if (!shape.IsFullyDefined()) {
    return errors::InvalidArgument(
        "TensorListGather: tried to gather no elements from a list whose element shape ",
        shape.ToString(), " is not fully defined.");
  }
  return StackElements(ctx, 0, elements, shape.ToTensorShape());
}

Status GatherShape(InferenceContext& ctx) {
  PartialShape element;
  FS_RETURN_IF_ERROR(ElementShapeOfInput(ctx, 2, &element));
  if (!element.known_rank()) {
    ctx.set_output(0, PartialShape::Unknown());
    return Status::OK();
  }
  const PartialShape& indices = ctx.input(1);
  std::vector<int64_t> dims = element.ToVector();
  dims.insert(dims.begin(), indices.known_rank() && indices.rank() == 1
                                ? indices.dim(0)
                                : PartialShape::kUnknownDim);
  ctx.set_output(0, PartialShape(dims));
  return Status::OK();
}

// d(gather(list, indices)) = a list of zeros with the rows of dvalues scattered at indices.
Status GatherGrad(GradientContext& ctx) {
  Endpoint list = ctx.input(0);
  Endpoint zeros =
      ctx.Op("TensorListReserve", {ElementShapeOf(ctx, list), ctx.Op("TensorListLength", {list})},
             ListAttrs(ElementDType(ctx)));
  ctx.SetInputGrad(
      0, ctx.Op("TensorListScatterIntoExistingList", {zeros, ctx.output_grad(0), ctx.input(1)},
                DTypeAttrs(ElementDType(ctx))));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("TensorListGather")
                   .Input("input_handle", "variant")
                   .Input("indices", "int32")
                   .Input("element_shape", "int32")
                   .Output("values", "element_dtype")
                   .TypeAttr("element_dtype", kAllTypes)
                   .Shape(GatherShape)
                   .Kernel("CPU", GatherKernel)
                   .Gradient(GatherGrad)
                   .Doc("The elements at indices, stacked."));

// Sets list[indices[k]] = tensor[k], growing the list as needed.
Status ScatterRows(KernelContext& ctx, const Tensor& tensor, const std::vector<int64_t>& indices,
                   TensorList* list) {
  for (size_t k = 0; k < indices.size(); ++k) {
    if (indices[k] < 0) {
      return errors::InvalidArgument(ctx.node().type(), ": indices[", k, "] = ", indices[k],
                                     " is negative; list indices must be >= 0");
    }
  }
  for (size_t k = 0; k < indices.size(); ++k) {
    if (indices[k] >= static_cast<int64_t>(list->tensors.size())) {
      FS_RETURN_IF_ERROR(ResizeList(ctx, list, indices[k] + 1));
    }
    FS_RETURN_IF_ERROR(Row(ctx, tensor, static_cast<int64_t>(k), &list->tensors[indices[k]]));
  }
  return Status::OK();
}

Status CheckScatterArgs(KernelContext& ctx, const Tensor& tensor,
                        const std::vector<int64_t>& indices) {
  FS_RETURN_IF_ERROR(CheckRankAtLeastOne(ctx, tensor, "tensor"));
  if (static_cast<int64_t>(indices.size()) != tensor.dim(0)) {
    return errors::InvalidArgument(ctx.node().type(), ": the tensor has ", tensor.dim(0),
                                   " rows but there are ", indices.size(), " indices");
  }
  return Status::OK();
}

Status ScatterV2Kernel(KernelContext& ctx) {
  const Tensor& tensor = ctx.input(0);
  std::vector<int64_t> indices;
  FS_RETURN_IF_ERROR(Indices(ctx, 1, &indices));
  FS_RETURN_IF_ERROR(CheckScatterArgs(ctx, tensor, indices));
  PartialShape shape;
  FS_RETURN_IF_ERROR(ReadElementShape(ctx, 2, &shape));
  TensorShape element = tensor.shape();
  element.mutable_dims().erase(0);
  if (!shape.IsCompatibleWith(element)) {
    return errors::InvalidArgument("Specified a list with shape ", shape.ToString(),
                                   " from a tensor with shape ", tensor.shape().ToString());
  }
  int64_t num_elements = 0;
  FS_RETURN_IF_ERROR(ScalarIndex(ctx, 3, &num_elements));
  if (num_elements < -1) {
    return errors::InvalidArgument("TensorListScatterV2: num_elements must be -1 or >= 0, got ",
                                   num_elements);
  }
  auto list = std::make_unique<TensorList>(tensor.dtype(), shape);
  if (num_elements > 0) FS_RETURN_IF_ERROR(ResizeList(ctx, list.get(), num_elements));
  FS_RETURN_IF_ERROR(ScatterRows(ctx, tensor, indices, list.get()));
  return OutputNewList(ctx, 0, std::move(list));
}

// d(scatter(tensor, indices)) = gather(dlist, indices).
Status ScatterV2Grad(GradientContext& ctx) {
  ctx.SetInputGrad(0, ctx.Op("TensorListGather",
                             {ctx.output_grad(0), ctx.input(1), ShapeAfterFirst(ctx, ctx.input(0))},
                             DTypeAttrs(ElementDType(ctx))));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("TensorListScatterV2")
                   .Input("tensor", "element_dtype")
                   .Input("indices", "int32")
                   .Input("element_shape", "shape_type")
                   .Input("num_elements", "int32")
                   .Output("output_handle", "variant")
                   .TypeAttr("element_dtype", kAllTypes)
                   .TypeAttr("shape_type", kShapeTypes)
                   .Shape(HandleShape)
                   .Kernel("CPU", ScatterV2Kernel)
                   .Gradient(ScatterV2Grad)
                   .Doc("A list of at least num_elements elements with row k of tensor at "
                        "indices[k]."));

Status ScatterIntoExistingKernel(KernelContext& ctx) {
  const TensorList* in = nullptr;
  FS_RETURN_IF_ERROR(GetInputList(ctx, 0, &in));
  const Tensor tensor = ctx.input(1);
  std::vector<int64_t> indices;
  FS_RETURN_IF_ERROR(Indices(ctx, 2, &indices));
  FS_RETURN_IF_ERROR(CheckScatterArgs(ctx, tensor, indices));
  if (tensor.dtype() != in->element_dtype) {
    return errors::InvalidArgument("Invalid data types; op elements ",
                                   DTypeShortName(tensor.dtype()), " but list elements ",
                                   DTypeShortName(in->element_dtype), " (", ctx.node().type(), ")");
  }
  TensorShape element = tensor.shape();
  element.mutable_dims().erase(0);
  if (!in->element_shape.IsCompatibleWith(element)) {
    return errors::InvalidArgument(ctx.node().type(), ": rows of shape ", element.ToString(),
                                   " do not fit a list with element shape ",
                                   in->element_shape.ToString());
  }
  TensorList* list = nullptr;
  FS_RETURN_IF_ERROR(ForwardInputList(ctx, 0, 0, &list));
  return ScatterRows(ctx, tensor, indices, list);
}

// The rows' gradient is gather(dlist, indices); the list's is dlist with zeros at indices.
Status ScatterIntoExistingGrad(GradientContext& ctx) {
  Endpoint dlist = ctx.output_grad(0);
  Endpoint tensor = ctx.input(1);
  AttrMap attrs = DTypeAttrs(ElementDType(ctx));
  ctx.SetInputGrad(
      1, ctx.Op("TensorListGather", {dlist, ctx.input(2), ShapeAfterFirst(ctx, tensor)}, attrs));
  ctx.SetInputGrad(0, ctx.Op("TensorListScatterIntoExistingList",
                             {dlist, ctx.Op("ZerosLike", {tensor}), ctx.input(2)}, attrs));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("TensorListScatterIntoExistingList")
                   .Input("input_handle", "variant")
                   .Input("tensor", "element_dtype")
                   .Input("indices", "int32")
                   .Output("output_handle", "variant")
                   .TypeAttr("element_dtype", kAllTypes)
                   .Shape(HandleShape)
                   .Kernel("CPU", ScatterIntoExistingKernel)
                   .Gradient(ScatterIntoExistingGrad)
                   .Doc("The list with row k of tensor at indices[k], grown as needed."));

// --- TensorListConcatV2, TensorListSplit ------------------------------------------------------

Status ConcatKernel(KernelContext& ctx) {
  const TensorList* list = nullptr;
  FS_RETURN_IF_ERROR(GetInputList(ctx, 0, &list));
  FS_RETURN_IF_ERROR(CheckDType(ctx, *list));
  PartialShape requested;
  FS_RETURN_IF_ERROR(ReadElementShape(ctx, 1, &requested));
  PartialShape shape;
  FS_RETURN_IF_ERROR(MergeShapes(ctx.node().type(), list->element_shape, requested, &shape));
  if (shape.known_rank() && shape.rank() == 0) {
    return errors::InvalidArgument(
        "TensorListConcatV2: concat requires elements to be at least vectors, but the element "
        "shape is a scalar");
  }
  const Tensor& leading = ctx.input(2);
  const int64_t size = static_cast<int64_t>(list->tensors.size());
  std::vector<Tensor> elements(size);
  TensorShape rest;
  bool have_rest = false;
  int64_t rows = 0;
  for (int64_t k = 0; k < size; ++k) {
    Tensor t = list->tensors[k];
    if (!t.initialized()) {
      // An unset element is zeros, with its leading dimension from leading_dims.
      PartialShape zeros_shape = shape;
      if (shape.known_rank() && k < leading.num_elements()) {
        std::vector<int64_t> dims = shape.ToVector();
        dims[0] = leading.ElementAsInt64(k);
        zeros_shape = PartialShape(dims);
      }
      if (!zeros_shape.IsFullyDefined()) {
        return errors::InvalidArgument(
            "TensorListConcatV2: element ", k,
            " was never set and its shape is not fully defined by element_shape ", shape.ToString(),
            " and leading_dims");
      }
      FS_RETURN_IF_ERROR(Zeros(ctx, list->element_dtype, zeros_shape.ToTensorShape(), &t));
    }
    FS_RETURN_IF_ERROR(CheckRankAtLeastOne(ctx, t, "every element"));
    TensorShape element_rest = t.shape();
    element_rest.mutable_dims().erase(0);
    if (have_rest && element_rest != rest) {
      return errors::InvalidArgument(
          "TensorListConcatV2: elements must agree in all but their first dimension, but element ",
          k, " has shape ", t.shape().ToString(), " and earlier ones [?]+", rest.ToString());
    }
    rest = element_rest;
    have_rest = true;
    rows += t.dim(0);
    elements[k] = std::move(t);
  }
  if (!have_rest) {
    if (!shape.known_rank()) {
      return errors::InvalidArgument(
          "TensorListConcatV2: concat of an empty list needs a known element shape");
    }
    std::vector<int64_t> dims = shape.ToVector();
    dims.erase(dims.begin());
    PartialShape after(dims);
    if (!after.IsFullyDefined()) {
      return errors::InvalidArgument(
          "TensorListConcatV2: concat of an empty list needs all but the first dimension of the "
          "element shape, got ",
          shape.ToString());
    }
    rest = after.ToTensorShape();
  }
  TensorShape out_shape = rest;
  out_shape.mutable_dims().insert(0, rows);
  Tensor* out = nullptr;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, out_shape, &out));
  Tensor* lengths = nullptr;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(1, TensorShape{size}, &lengths));
  char* dst = static_cast<char*>(out->raw_data());
  for (int64_t k = 0; k < size; ++k) {
    std::memcpy(dst, elements[k].raw_data(), elements[k].bytes());
    dst += elements[k].bytes();
    lengths->data<int64_t>()[k] = elements[k].dim(0);
  }
  return Status::OK();
}

Status ConcatShape(InferenceContext& ctx) {
  PartialShape element;
  FS_RETURN_IF_ERROR(ElementShapeOfInput(ctx, 1, &element));
  if (element.known_rank() && element.rank() >= 1) {
    std::vector<int64_t> dims = element.ToVector();
    dims[0] = PartialShape::kUnknownDim;
    ctx.set_output(0, PartialShape(dims));
  } else {
    ctx.set_output(0, PartialShape::Unknown());
  }
  ctx.set_output(1, PartialShape::UnknownOfRank(1));
  return Status::OK();
}

// d(concat(list)) = split(dtensor, lengths).
Status ConcatGrad(GradientContext& ctx) {
  ctx.SetInputGrad(0, ctx.Op("TensorListSplit",
                             {ctx.output_grad(0), ElementShapeOf(ctx, ctx.input(0)), ctx.output(1)},
                             ListAttrs(ElementDType(ctx))));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("TensorListConcatV2")
                   .Input("input_handle", "variant")
                   .Input("element_shape", "shape_type")
                   .Input("leading_dims", "int64")
                   .Output("tensor", "element_dtype")
                   .Output("lengths", "int64")
                   .TypeAttr("element_dtype", kAllTypes)
                   .TypeAttr("shape_type", kShapeTypes)
                   .Shape(ConcatShape)
                   .Kernel("CPU", ConcatKernel)
                   .Gradient(ConcatGrad)
                   .Doc("The list's elements joined along dimension 0, and each one's length."));

Status SplitKernel(KernelContext& ctx) {
  const Tensor& tensor = ctx.input(0);
  FS_RETURN_IF_ERROR(CheckRankAtLeastOne(ctx, tensor, "tensor"));
  PartialShape shape;
  FS_RETURN_IF_ERROR(ReadElementShape(ctx, 1, &shape));
  const Tensor& lengths = ctx.input(2);
  if (lengths.rank() != 1) {
    return errors::InvalidArgument("TensorListSplit: lengths must be a vector, got shape ",
                                   lengths.shape().ToString());
  }
  int64_t total = 0;
  for (int64_t k = 0; k < lengths.num_elements(); ++k) {
    const int64_t n = lengths.ElementAsInt64(k);
    if (n < 0 || n > tensor.dim(0) - total) {
      return errors::InvalidArgument("TensorListSplit: lengths[", k, "] = ", n,
                                     " is negative or runs past the tensor's ", tensor.dim(0),
                                     " rows");
    }
    total += n;
  }
  if (total != tensor.dim(0)) {
    return errors::InvalidArgument("Unable to split tensor of shape ", tensor.shape().ToString(),
                                   ": the lengths add up to ", total, ", not ", tensor.dim(0));
  }
  auto list = std::make_unique<TensorList>(tensor.dtype(), shape);
  list->tensors.resize(lengths.num_elements());
  int64_t begin = 0;
  for (int64_t k = 0; k < lengths.num_elements(); ++k) {
    const int64_t n = lengths.ElementAsInt64(k);
    Tensor& piece = list->tensors[k];
    FS_RETURN_IF_ERROR(Rows(ctx, tensor, begin, n, &piece));
    if (!shape.IsCompatibleWith(piece.shape())) {
      return errors::InvalidArgument("TensorListSplit: piece ", k, " has shape ",
                                     piece.shape().ToString(),
                                     ", which does not fit the element shape ", shape.ToString());
    }
    begin += n;
  }
  return OutputNewList(ctx, 0, std::move(list));
}

// d(split(tensor)) = concat(dlist) with the pieces' lengths.
Status SplitGrad(GradientContext& ctx) {
  AttrMap attrs = ListAttrs(ElementDType(ctx));
  ctx.SetInputGrad(
      0, ctx.Op("TensorListConcatV2",
                {ctx.output_grad(0), PieceShape(ctx, ctx.input(0)), ctx.input(2)}, attrs));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("TensorListSplit")
                   .Input("tensor", "element_dtype")
                   .Input("element_shape", "shape_type")
                   .Input("lengths", "int64")
                   .Output("output_handle", "variant")
                   .TypeAttr("element_dtype", kAllTypes)
                   .TypeAttr("shape_type", kShapeTypes)
                   .Shape(HandleShape)
                   .Kernel("CPU", SplitKernel)
                   .Gradient(SplitGrad)
                   .Doc("A list of consecutive pieces of tensor along dimension 0, of the given "
                        "lengths."));

}  // namespace
}  // namespace flowstone
