// SpaceToDepth and DepthToSpace (tf.nn.space_to_depth, tf.nn.depth_to_space): blocks of
// block_size x block_size pixels moved into channels and back, in NHWC (the only layout
// TensorFlow's CPU kernels take). Each is the other's gradient. Both are strided copies, so every
// dtype is served by element size.
#include <string>
#include <vector>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/array_util.h"

namespace flowstone {
namespace {

// Which way the pixels move.
enum class Move { kSpaceToDepth, kDepthToSpace };

Status ReadAttrs(const AttrMap& attrs, int64_t* block_size) {
  *block_size = attrs.GetOr<int64_t>("block_size", 0);
  if (*block_size < 2) {
    return errors::InvalidArgument("Value for attr 'block_size' of ", *block_size,
                                   " must be at least minimum 2");
  }
  const std::string format = attrs.GetOr<std::string>("data_format", "NHWC");
  if (format != "NHWC") {
    return errors::InvalidArgument("Only NHWC data_format is supported on the CPU, got ", format,
                                   "; transpose the input to NHWC");
  }
  return Status::OK();
}

// The output dims [batch, height, width, depth] for an input of dims `in`; fails when the
// sizes do not divide.
Status OutputDims(Move move, const std::vector<int64_t>& in, int64_t block,
                  std::vector<int64_t>* out) {
  if (move == Move::kSpaceToDepth) {
    if ((in[1] >= 0 && in[1] % block != 0) || (in[2] >= 0 && in[2] % block != 0)) {
      return errors::InvalidArgument("Image width ", in[2], " and height ", in[1],
                                     " should be divisible by block_size: ", block);
    }
    *out = {in[0], in[1] < 0 ? -1 : in[1] / block, in[2] < 0 ? -1 : in[2] / block,
            in[3] < 0 ? -1 : in[3] * block * block};
  } else {
    if (in[3] >= 0 && in[3] % (block * block) != 0) {
      return errors::InvalidArgument("Input depth dimension ", in[3],
                                     " should be divisible by: ", block * block);
    }
    *out = {in[0], in[1] < 0 ? -1 : in[1] * block, in[2] < 0 ? -1 : in[2] * block,
            in[3] < 0 ? -1 : in[3] / (block * block)};
  }
  return Status::OK();
}

template <Move M>
Status SpaceDepthShape(InferenceContext& ctx) {
  int64_t block;
  FS_RETURN_IF_ERROR(ReadAttrs(ctx.attrs(), &block));
  PartialShape input;
  FS_RETURN_IF_ERROR(ctx.WithRank(0, 4, &input));
  if (!input.known_rank()) {
    ctx.set_output(0, PartialShape::UnknownOfRank(4));
    return Status::OK();
  }
  std::vector<int64_t> out;
  FS_RETURN_IF_ERROR(OutputDims(M, input.dims().ToVector(), block, &out));
  ctx.set_output(0, PartialShape(out));
  return Status::OK();
}

template <Move M>
Status SpaceDepthKernel(KernelContext& ctx) {
  int64_t block;
  FS_RETURN_IF_ERROR(ReadAttrs(ctx.attrs(), &block));
  const Tensor& input = ctx.input(0);
  if (input.rank() != 4) {
    return errors::InvalidArgument("input rank should be: 4 instead of: ", input.rank());
  }
  const std::vector<int64_t> in = input.shape().ToVector();
  std::vector<int64_t> out;
  FS_RETURN_IF_ERROR(OutputDims(M, in, block, &out));
  Tensor* output;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape(out), &output));
  if (output->num_elements() == 0) return Status::OK();
  // The output as a 6-D strided view of the input (row-major strides of the input's NHWC).
  const int64_t c_stride = 1;
  const int64_t w_stride = in[3];
  const int64_t h_stride = in[2] * in[3];
  const int64_t b_stride = in[1] * in[2] * in[3];
  std::vector<int64_t> dims;
  std::vector<int64_t> strides;
  if (M == Move::kSpaceToDepth) {
    // out[b, i, j, di, dj, c] = in[b, i * block + di, j * block + dj, c]
    dims = {out[0], out[1], out[2], block, block, in[3]};
    strides = {b_stride, block * h_stride, block * w_stride, h_stride, w_stride, c_stride};
  } else {
    // out[b, i, di, j, dj, c] = in[b, i, j, (di * block + dj) * depth + c]
    const int64_t depth = out[3];
    dims = {in[0], in[1], block, in[2], block, depth};
    strides = {b_stride, h_stride, block * depth, w_stride, depth, c_stride};
  }
  return array_util::DispatchElementSize(DTypeSize(input.dtype()), [&]<typename U>() -> Status {
    array_util::StridedGather(ctx, input.data<U>(), dims, strides, output->data<U>());
    return Status::OK();
  });
}

template <Move M>
Status SpaceDepthGrad(GradientContext& ctx) {
  AttrMap attrs;
  attrs.Set("block_size", ctx.attrs().GetOr<int64_t>("block_size", 0));
  attrs.Set("data_format", ctx.attrs().GetOr<std::string>("data_format", "NHWC"));
  const char* inverse = M == Move::kSpaceToDepth ? "DepthToSpace" : "SpaceToDepth";
  ctx.SetInputGrad(0, ctx.Op(inverse, {ctx.output_grad(0)}, attrs));
  return Status::OK();
}

template <Move M>
OpBuilder SpaceDepthOp(const char* name, const char* doc) {
  OpBuilder builder(name);
  builder.Input("input", "T")
      .Output("output", "T")
      .TypeAttr("T", kAllTypes)
      .RequiredAttr("block_size", AttrType::kInt)
      .Attr("data_format", "NHWC")
      .Shape(SpaceDepthShape<M>)
      .Kernel("CPU", SpaceDepthKernel<M>)
      .Gradient(SpaceDepthGrad<M>)
      .Doc(doc);
  return builder;
}

FS_REGISTER_OP(SpaceDepthOp<Move::kSpaceToDepth>(
    "SpaceToDepth",
    "Moves block_size x block_size blocks of pixels into the depth dimension "
    "(NHWC): [b, h, w, c] -> [b, h / bs, w / bs, c * bs * bs]."));
FS_REGISTER_OP(SpaceDepthOp<Move::kDepthToSpace>(
    "DepthToSpace",
    "Moves depth into block_size x block_size blocks of pixels (NHWC): "
    "[b, h, w, c] -> [b, h * bs, w * bs, c / (bs * bs)]."));

}  // namespace
}  // namespace flowstone
