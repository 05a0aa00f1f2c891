// Shape ops: Shape, Size and Rank read a tensor's shape; Reshape, ExpandDims and Squeeze give a
// tensor another shape with the same elements, sharing the input's buffer (no copy).
#include <algorithm>
#include <limits>

#include "array_util.h"
#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"

namespace flowstone {
namespace {

using array_util::kIndexTypes;

// Writes `value` into element i of an int32 or int64 output, failing when int32 is too small.
Status StoreIndex(Tensor* out, int64_t i, int64_t value, const char* what) {
  if (out->dtype() == DType::kInt32) {
    if (value > std::numeric_limits<int32_t>::max()) {
      return errors::InvalidArgument(what, " ", value,
                                     " does not fit in the int32 output; use out_type=tf.int64");
    }
    out->data<int32_t>()[i] = static_cast<int32_t>(value);
  } else {
    out->data<int64_t>()[i] = value;
  }
  return Status::OK();
}

// --- Shape, Size, Rank ----------------------------------------------------------------------

Status ShapeShape(InferenceContext& ctx) {
  const PartialShape& in = ctx.input(0);
  ctx.set_output(0, in.known_rank() ? PartialShape{in.rank()} : PartialShape::UnknownOfRank(1));
  return Status::OK();
}

Status ShapeKernel(KernelContext& ctx) {
  const TensorShape& shape = ctx.input(0).shape();
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{shape.rank()}, &out));
  for (int i = 0; i < shape.rank(); ++i) {
    FS_RETURN_IF_ERROR(StoreIndex(out, i, shape.dim(i), "Dimension size"));
  }
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("Shape")
                   .Input("input", "T")
                   .Output("output", "out_type")
                   .TypeAttr("T")
                   .TypeAttr("out_type", kIndexTypes, DType::kInt32)
                   .Shape(ShapeShape)
                   .Kernel("CPU", ShapeKernel)
                   .NotDifferentiable()
                   .Doc("The shape of a tensor as a 1-D tensor."));

Status SizeKernel(KernelContext& ctx) {
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{}, &out));
  return StoreIndex(out, 0, ctx.input(0).num_elements(), "Number of elements");
}

FS_REGISTER_OP(OpBuilder("Size")
                   .Input("input", "T")
                   .Output("output", "out_type")
                   .TypeAttr("T")
                   .TypeAttr("out_type", kIndexTypes, DType::kInt32)
                   .Shape(shape_fns::Scalar)
                   .Kernel("CPU", SizeKernel)
                   .NotDifferentiable()
                   .Doc("The number of elements of a tensor."));

Status RankKernel(KernelContext& ctx) {
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{}, &out));
  *out->data<int32_t>() = ctx.input(0).rank();
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("Rank")
                   .Input("input", "T")
                   .Output("output", "int32")
                   .TypeAttr("T")
                   .Shape(shape_fns::Scalar)
                   .Kernel("CPU", RankKernel)
                   .NotDifferentiable()
                   .Doc("The number of dimensions of a tensor."));

// The gradient of an op that only gives its input another shape: the incoming gradient in the
// input's shape (read at run time, so unknown static dims are fine).
Status ReshapeToInputGrad(GradientContext& ctx) {
  ctx.SetInputGrad(0, ctx.Op("Reshape", {ctx.output_grad(0), ctx.Shape(ctx.input(0))}));
  return Status::OK();
}

// --- Reshape --------------------------------------------------------------------------------

// Checks a requested shape (which may hold one -1) against an input of `num_elements` elements
// and resolves the -1. `num_elements` < 0 means the input size is unknown: the -1 then stays
// unknown. Used by the shape function and the kernel, so both report the same errors.
Status ResolveReshape(int64_t num_elements, const std::vector<int64_t>& requested,
                      std::vector<int64_t>* out) {
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < requested.size(); ++i) {
    int64_t d = requested[i];
    if (d == -1) {
      if (infer >= 0) {
        return errors::InvalidArgument("Only one input size may be -1, not both ", infer, " and ",
                                       i);
      }
      infer = static_cast<int>(i);
    } else if (d < 0) {
      return errors::InvalidArgument("Size ", i, " must be non-negative, not ", d);
    } else {
      if (d > 0 && known > std::numeric_limits<int64_t>::max() / d) {
        return errors::InvalidArgument("Requested shape ", array_util::JoinInts(requested),
                                       " has too many elements to fit in int64");
      }
      known *= d;
    }
  }
  *out = requested;
  if (num_elements < 0) return Status::OK();
  if (infer < 0) {
    if (known != num_elements) {
      return errors::InvalidArgument("Cannot reshape a tensor with ", num_elements,
                                     " elements to shape ", array_util::JoinInts(requested), " (",
                                     known, " elements)");
    }
    return Status::OK();
  }
  if (known == 0) {
    if (num_elements == 0) {
      return errors::InvalidArgument(
          "Reshape cannot infer the missing input size for an empty tensor unless all "
          "specified input sizes are non-zero");
    }
    return errors::InvalidArgument("Cannot reshape a tensor with ", num_elements,
                                   " elements to shape ", array_util::JoinInts(requested),
                                   " (0 elements)");
  }
  if (num_elements % known != 0) {
    return errors::InvalidArgument("Input to reshape is a tensor with ", num_elements,
                                   " values, but the requested shape requires a multiple of ",
                                   known);
  }
  (*out)[infer] = num_elements / known;
  return Status::OK();
}

Status ReshapeShape(InferenceContext& ctx) {
  PartialShape shape_arg;
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 1, &shape_arg));
  const PartialShape& in = ctx.input(0);
  const Tensor* requested = ctx.input_value(1);
  if (requested == nullptr) {
    // Some requested dims are unknown. When exactly one is, and the input's size is known, the
    // element count determines it (a rank-1 result of a known input, for one).
    PartialShape out;
    FS_RETURN_IF_ERROR(ctx.InputAsShape(1, &out));
    if (out.known_rank() && in.IsFullyDefined()) {
      std::vector<int64_t> dims = out.ToVector();
      int unknown = -1;
      int64_t known = 1;
      for (int i = 0; i < out.rank(); ++i) {
        if (dims[i] >= 0) {
          known *= dims[i];
        } else {
          unknown = unknown == -1 ? i : -2;  // -2: more than one
        }
      }
      if (unknown >= 0 && known > 0 && in.num_elements() % known == 0) {
        dims[unknown] = in.num_elements() / known;
        out = PartialShape(dims);
      }
    }
    ctx.set_output(0, out);
    return Status::OK();
  }
  std::vector<int64_t> dims;
  FS_RETURN_IF_ERROR(ResolveReshape(in.IsFullyDefined() ? in.num_elements() : -1,
                                    array_util::IntValues(*requested), &dims));
  ctx.set_output(0, PartialShape(dims));
  return Status::OK();
}

Status ReshapeKernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const Tensor& shape = ctx.input(1);
  if (shape.rank() != 1) {
    return errors::InvalidArgument("sizes input must be 1-D, not ", shape.shape().ToString());
  }
  std::vector<int64_t> dims;
  FS_RETURN_IF_ERROR(ResolveReshape(in.num_elements(), array_util::IntValues(shape), &dims));
  ctx.SetOutput(0, in.Reshaped(TensorShape(dims)));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("Reshape")
                   .Input("tensor", "T")
                   .Input("shape", "Tshape")
                   .Output("output", "T")
                   .TypeAttr("T")
                   .TypeAttr("Tshape", kIndexTypes, DType::kInt32)
                   .Shape(ReshapeShape)
                   .Kernel("CPU", ReshapeKernel)
                   .Gradient(ReshapeToInputGrad)
                   .Doc("The same elements in another shape; one dimension may be -1 (inferred). "
                        "Shares the input's buffer."));

// --- ExpandDims -----------------------------------------------------------------------------

// Where a dimension of size 1 goes for ExpandDims(dim) on a tensor of `rank` dimensions.
Status ExpandPosition(int64_t dim, int rank, int* out) {
  if (dim < -rank - 1 || dim > rank) {
    return errors::InvalidArgument("Tried to expand dim index ", dim, " for tensor with ", rank,
                                   " dimensions.");
  }
  *out = static_cast<int>(dim < 0 ? dim + rank + 1 : dim);
  return Status::OK();
}

Status ExpandDimsShape(InferenceContext& ctx) {
  const PartialShape& in = ctx.input(0);
  const Tensor* dim = ctx.input_value(1);
  if (dim != nullptr && dim->num_elements() != 1) {
    return errors::InvalidArgument("'dim' must be a tensor with a single value, but has shape ",
                                   dim->shape().ToString());
  }
  if (!in.known_rank()) {
    ctx.set_output(0, PartialShape::Unknown());
    return Status::OK();
  }
  if (dim == nullptr) {
    ctx.set_output(0, PartialShape::UnknownOfRank(in.rank() + 1));
    return Status::OK();
  }
  int pos = 0;
  FS_RETURN_IF_ERROR(ExpandPosition(dim->ElementAsInt64(0), in.rank(), &pos));
  Dims dims = in.dims();
  dims.insert(pos, 1);
  ctx.set_output(0, PartialShape(dims));
  return Status::OK();
}

Status ExpandDimsKernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const Tensor& dim = ctx.input(1);
  if (dim.num_elements() != 1) {
    return errors::InvalidArgument("'dim' must be a tensor with a single value, but has shape ",
                                   dim.shape().ToString());
  }
  int pos = 0;
  FS_RETURN_IF_ERROR(ExpandPosition(dim.ElementAsInt64(0), in.rank(), &pos));
  TensorShape shape = in.shape();
  shape.mutable_dims().insert(pos, 1);
  ctx.SetOutput(0, in.Reshaped(shape));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("ExpandDims")
                   .Input("input", "T")
                   .Input("dim", "Tdim")
                   .Output("output", "T")
                   .TypeAttr("T")
                   .TypeAttr("Tdim", kIndexTypes, DType::kInt32)
                   .Shape(ExpandDimsShape)
                   .Kernel("CPU", ExpandDimsKernel)
                   .Gradient(ReshapeToInputGrad)
                   .Doc("Inserts a dimension of size 1 at index `dim` (negative counts from the "
                        "end). Shares the input's buffer."));

// --- Squeeze --------------------------------------------------------------------------------

// Marks which of `rank` dimensions squeeze_dims names, validating the indices.
Status SqueezeAxes(const std::vector<int64_t>& squeeze_dims, int rank, std::vector<bool>* out) {
  out->assign(rank, false);
  for (int64_t d : squeeze_dims) {
    if (d < -rank || d >= rank) {
      return errors::InvalidArgument("Tried to squeeze dim index ", d, " for tensor with ", rank,
                                     " dimensions.");
    }
    (*out)[d < 0 ? d + rank : d] = true;
  }
  return Status::OK();
}

Status SqueezeShape(InferenceContext& ctx) {
  const PartialShape& in = ctx.input(0);
  std::vector<int64_t> squeeze_dims;
  FS_RETURN_IF_ERROR(ctx.GetAttr("squeeze_dims", &squeeze_dims));
  if (!in.known_rank()) {
    ctx.set_output(0, PartialShape::Unknown());
    return Status::OK();
  }
  std::vector<bool> chosen;
  FS_RETURN_IF_ERROR(SqueezeAxes(squeeze_dims, in.rank(), &chosen));
  std::vector<int64_t> dims;
  for (int i = 0; i < in.rank(); ++i) {
    int64_t d = in.dim(i);
    if (squeeze_dims.empty()) {
      // Squeezing every size-1 dimension: an unknown one may or may not go, so the result's rank
      // is unknown.
      if (d < 0) {
        ctx.set_output(0, PartialShape::Unknown());
        return Status::OK();
      }
      if (d != 1) dims.push_back(d);
    } else if (chosen[i]) {
      if (d >= 0 && d != 1) {
        return errors::InvalidArgument("Can not squeeze dim[", i,
                                       "], expected a dimension of 1, got ", d);
      }
    } else {
      dims.push_back(d);
    }
  }
  ctx.set_output(0, PartialShape(dims));
  return Status::OK();
}

class SqueezeKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  Status Init() override { return node().attrs().Get("squeeze_dims", &squeeze_dims_); }

  Status Compute(KernelContext& ctx) override {
    const Tensor& in = ctx.input(0);
    std::vector<bool> chosen;
    FS_RETURN_IF_ERROR(SqueezeAxes(squeeze_dims_, in.rank(), &chosen));
    TensorShape shape;
    for (int i = 0; i < in.rank(); ++i) {
      int64_t d = in.dim(i);
      if (squeeze_dims_.empty()) {
        if (d != 1) shape.AddDim(d);
      } else if (chosen[i]) {
        if (d != 1) {
          return errors::InvalidArgument("Can not squeeze dim[", i,
                                         "], expected a dimension of 1, got ", d);
        }
      } else {
        shape.AddDim(d);
      }
    }
    ctx.SetOutput(0, in.Reshaped(shape));
    return Status::OK();
  }

 private:
  std::vector<int64_t> squeeze_dims_;
};

FS_REGISTER_OP(OpBuilder("Squeeze")
                   .Input("input", "T")
                   .Output("output", "T")
                   .TypeAttr("T")
                   .Attr("squeeze_dims", AttrValue(std::vector<int64_t>{}))
                   .Shape(SqueezeShape)
                   .KernelClass<SqueezeKernel>("CPU")
                   .Gradient(ReshapeToInputGrad)
                   .Doc("Removes dimensions of size 1: those in squeeze_dims, or all of them when "
                        "it is empty. Shares the input's buffer."));

}  // namespace
}  // namespace flowstone
