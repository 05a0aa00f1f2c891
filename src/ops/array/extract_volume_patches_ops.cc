// ExtractVolumePatches (tf.extract_volume_patches): the 3-D form of ExtractImagePatches. Each
// output voxel of an NDHWC input holds the ksizes[1] x ksizes[2] x ksizes[3] patch at it
// (windows every strides[i] voxels, SAME or VALID padding as in 3-D convolutions), flattened into
// the depth dimension; padding reads as zeros. The gradient sums each patch entry back into the
// voxel it came from, found by extracting the patches of the voxel numbers.
#include <cstring>
#include <string>
#include <vector>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/array_util.h"
#include "ops/conv_util.h"

namespace flowstone {
namespace {

using array_util::IndexConst;
using array_util::IndexScalar;

struct VolumeAttrs {
  int64_t ksize[3];
  conv::WindowAttrs axis[3];  // one single-axis window per spatial dimension
};

Status ReadVolumeAttrs(const AttrMap& attrs, VolumeAttrs* out) {
  const std::string padding = attrs.GetOr<std::string>("padding", "");
  if (padding != "SAME" && padding != "VALID") {
    return errors::InvalidArgument("Value for attr 'padding' of \"", padding,
                                   "\" is not in the list of allowed values: \"SAME\", \"VALID\"");
  }
  const std::vector<int64_t> ksizes = attrs.GetOr<std::vector<int64_t>>("ksizes", {});
  const std::vector<int64_t> strides = attrs.GetOr<std::vector<int64_t>>("strides", {});
  for (const auto* values : {&ksizes, &strides}) {
    const char* name = values == &ksizes ? "ksizes" : "strides";
    if (values->size() != 5 || (*values)[0] != 1 || (*values)[4] != 1) {
      return errors::InvalidArgument(name,
                                     " must be a list of 5 ints [1, planes, rows, cols, 1], "
                                     "got ",
                                     array_util::JoinInts(*values));
    }
    for (int d = 1; d <= 3; ++d) {
      if ((*values)[d] < 1) {
        return errors::InvalidArgument(name, " must be positive, got ",
                                       array_util::JoinInts(*values));
      }
    }
  }
  for (int d = 0; d < 3; ++d) {
    out->ksize[d] = ksizes[d + 1];
    out->axis[d].stride[0] = strides[d + 1];
    out->axis[d].padding = padding == "SAME" ? conv::Padding::kSame : conv::Padding::kValid;
  }
  return Status::OK();
}

Status PatchDepth(int64_t depth, const VolumeAttrs& v, int64_t* out) {
  *out = depth;
  for (int d = 0; d < 3; ++d) {
    if (__builtin_mul_overflow(*out, v.ksize[d], out)) {
      return errors::InvalidArgument(
          "The output depth of ExtractVolumePatches overflows int64; "
          "use smaller ksizes");
    }
  }
  return Status::OK();
}

Status ExtractVolumePatchesShape(InferenceContext& ctx) {
  VolumeAttrs v;
  FS_RETURN_IF_ERROR(ReadVolumeAttrs(ctx.attrs(), &v));
  PartialShape in;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 5, &in));
  if (!in.known_rank()) {
    ctx.set_output(0, PartialShape::UnknownOfRank(5));
    return Status::OK();
  }
  std::vector<int64_t> dims = {in.dim(0), -1, -1, -1, -1};
  for (int d = 0; d < 3; ++d) {
    FS_RETURN_IF_ERROR(
        conv::WindowOutputSize(v.axis[d], 0, in.dim(d + 1), v.ksize[d], &dims[d + 1]));
  }
  if (in.dim(4) >= 0) FS_RETURN_IF_ERROR(PatchDepth(in.dim(4), v, &dims[4]));
  ctx.set_output(0, PartialShape(dims));
  return Status::OK();
}

Status ExtractVolumePatchesKernel(KernelContext& ctx) {
  VolumeAttrs v;
  FS_RETURN_IF_ERROR(ReadVolumeAttrs(ctx.attrs(), &v));
  const Tensor& in = ctx.input(0);
  if (in.rank() != 5) {
    return errors::InvalidArgument(
        "input must be 5-dimensional [batch, planes, rows, cols, "
        "depth], got shape ",
        in.shape().ToString());
  }
  conv::Window w[3];
  for (int d = 0; d < 3; ++d) {
    FS_RETURN_IF_ERROR(conv::ComputeWindow(v.axis[d], 0, in.dim(d + 1), v.ksize[d], &w[d]));
  }
  const int64_t batch = in.dim(0);
  const int64_t depth = in.dim(4);
  int64_t out_depth;
  FS_RETURN_IF_ERROR(PatchDepth(depth, v, &out_depth));
  Tensor* out;
  FS_RETURN_IF_ERROR(
      ctx.AllocateOutput(0, TensorShape{batch, w[0].out, w[1].out, w[2].out, out_depth}, &out));
  if (out->num_elements() == 0) return Status::OK();
  const int64_t voxel_bytes = depth * static_cast<int64_t>(DTypeSize(in.dtype()));
  const char* src = static_cast<const char*>(in.raw_data());
  char* dst = static_cast<char*>(out->raw_data());
  // One unit per (b, p, i, j, kp, ki, kj): a voxel's depth entries, copied or zeroed.
  const int64_t units =
      batch * w[0].out * w[1].out * w[2].out * w[0].kernel * w[1].kernel * w[2].kernel;
  ctx.ParallelFor(units, voxel_bytes / 4 + 4, [&](int64_t begin, int64_t end) {
    for (int64_t u = begin; u < end; ++u) {
      int64_t rest = u;
      int64_t tap[3], pos[3];
      for (int d = 2; d >= 0; --d) {
        tap[d] = rest % w[d].kernel;
        rest /= w[d].kernel;
      }
      for (int d = 2; d >= 0; --d) {
        pos[d] = rest % w[d].out;
        rest /= w[d].out;
      }
      const int64_t b = rest;
      int64_t at[3];
      bool inside = true;
      for (int d = 0; d < 3; ++d) {
        at[d] = conv::InputPos(w[d], pos[d], tap[d]);
        inside = inside && at[d] >= 0;
      }
      char* to = dst + u * voxel_bytes;
      if (!inside) {
        std::memset(to, 0, voxel_bytes);
      } else {
        const int64_t voxel = ((b * w[0].in + at[0]) * w[1].in + at[1]) * w[2].in + at[2];
        std::memcpy(to, src + voxel * voxel_bytes, voxel_bytes);
      }
    }
  });
  return Status::OK();
}

// The patches of a volume of voxel numbers 1..planes*rows*cols say where each patch entry came
// from (0: padding); the gradient entries are summed into those voxels by UnsortedSegmentSum,
// which drops the padding's id -1.
Status ExtractVolumePatchesGrad(GradientContext& ctx) {
  const Endpoint input = ctx.input(0);
  const Endpoint shape = ctx.Shape(input);
  auto dim = [&](int64_t d) {
    return ctx.Op("GatherV2", {shape, IndexScalar(ctx, d), IndexScalar(ctx, 0)});
  };
  const Endpoint voxels = ctx.Op("Mul", {ctx.Op("Mul", {dim(1), dim(2)}), dim(3)});
  const Endpoint one = IndexScalar(ctx, 1);
  const Endpoint numbers =
      ctx.Op("Reshape", {ctx.Op("Range", {one, ctx.Op("AddV2", {voxels, one}), one}),
                         ctx.Op("Pack", {one, dim(1), dim(2), dim(3), one})});
  AttrMap attrs;
  for (const char* name : {"ksizes", "strides"}) {
    attrs.Set(name, ctx.attrs().GetOr<std::vector<int64_t>>(name, {}));
  }
  attrs.Set("padding", ctx.attrs().GetOr<std::string>("padding", ""));
  const Endpoint sources = ctx.Op("ExtractVolumePatches", {numbers}, attrs);
  const Endpoint ids =
      ctx.Op("Sub", {ctx.Op("Reshape", {sources, IndexConst(ctx, {-1}, DType::kInt32)}), one});
  // [b, p, r, c, kp * kr * kc * depth] -> [entries, b, depth].
  const Endpoint grad = ctx.Op(
      "Transpose", {ctx.Op("Reshape", {ctx.output_grad(0),
                                       ctx.Op("Pack", {dim(0), IndexScalar(ctx, -1), dim(4)})}),
                    IndexConst(ctx, {1, 0, 2}, DType::kInt32)});
  const Endpoint summed = ctx.Op("UnsortedSegmentSum", {grad, ids, voxels});
  ctx.SetInputGrad(
      0, ctx.Op("Reshape",
                {ctx.Op("Transpose", {summed, IndexConst(ctx, {1, 0, 2}, DType::kInt32)}), shape}));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("ExtractVolumePatches")
                   .Input("input", "T")
                   .Output("patches", "T")
                   .RequiredAttr("ksizes", AttrType::kIntList)
                   .RequiredAttr("strides", AttrType::kIntList)
                   .RequiredAttr("padding", AttrType::kString)
                   .TypeAttr("T", kRealTypes)
                   .Shape(ExtractVolumePatchesShape)
                   .Kernel("CPU", ExtractVolumePatchesKernel)
                   .Gradient(ExtractVolumePatchesGrad)
                   .Doc("The patches at each output voxel of an NDHWC volume, flattened into the "
                        "depth dimension (tf.extract_volume_patches)."));

}  // namespace
}  // namespace flowstone
