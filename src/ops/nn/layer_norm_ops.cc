// _FusedLayerNorm: layer normalization over the last axis in one pass per row, Flowstone's own op
// (TensorFlow has none outside its oneDNN build). The graph optimizer's remapper
// (src/optimizer/remapper.cc) runs the node chain of a frozen graph's layer norm,
//
//   mean = Mean(x, -1, keep_dims)            var = Mean(SquaredDifference(x, mean), -1, keep_dims)
//   y = (x - mean) * Rsqrt(var + epsilon) * scale + offset
//
// (tf.nn.moments then the formula, as BERT writes it), as this op. Each row goes through the
// separate kernels' float operations in their order, so the fused plan's results are bit-identical
// to the unfused plan's: the means are sums in double over 8 lanes, split pairwise past 1,024
// elements (reduction_ops.cc, ReduceContiguous), divided in double and rounded once; the file
// is compiled with -ffp-contract=off (CMakeLists.txt) because the separate Mul and AddV2 round
// x * scale before adding the offset.
#include <cmath>
#include <cstdint>

#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/multiversion.h"

namespace flowstone {
namespace {

constexpr int64_t kLanes = 8;             // reduction_ops.cc's kLanes
constexpr int64_t kPairwiseBlock = 1024;  // and its kPairwiseBlock

// The sum of f(x[i]) for i < n in double, in the Sum reduction's order.
template <typename T, typename F>
double LaneSum(const T* x, int64_t n, F f) {
  if (n > kPairwiseBlock) {
    const int64_t half = (n / 2 + kLanes - 1) / kLanes * kLanes;
    return LaneSum(x, half, f) + LaneSum(x + half, n - half, f);
  }
  double lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int64_t l = 0; l < kLanes; ++l) lanes[l] += double(f(x[i + l]));
  }
  double result = 0;
  for (int64_t l = 0; l < kLanes; ++l) result += lanes[l];
  for (; i < n; ++i) result += double(f(x[i]));
  return result;
}

// One row of n elements.
template <typename T>
FS_MULTIVERSION void NormalizeRow(const T* x, int64_t n, const T* scale, const T* offset, T epsilon,
                                  T* y) {
  const T mean = T(LaneSum(x, n, [](T v) { return v; }) / double(n));
  const T var = T(LaneSum(x, n,
                          [mean](T v) {
                            const T d = v - mean;
                            return d * d;  // SquaredDifference
                          }) /
                  double(n));
  const T rsqrt = T(1) / std::sqrt(var + epsilon);
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * rsqrt * scale[i] + offset[i];
}

Status LayerNormKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor& offset = ctx.input(2);
  if (x.rank() < 1) {
    return errors::InvalidArgument(
        "_FusedLayerNorm normalizes over the last axis, so x needs "
        "rank >= 1, but has shape ",
        x.shape().ToString());
  }
  const int64_t n = x.dim(x.rank() - 1);
  for (const Tensor* t : {&scale, &offset}) {
    if (t->rank() != 1 || t->dim(0) != n) {
      return errors::InvalidArgument("_FusedLayerNorm: ", t == &scale ? "scale" : "offset",
                                     " must be a vector as long as x's last axis (", n,
                                     "), but has shape ", t->shape().ToString());
    }
  }
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.ForwardOrAllocateOutput(0, 0, x.shape(), &out));
  if (x.num_elements() == 0) return Status::OK();
  const int64_t rows = x.num_elements() / n;
  const double epsilon = ctx.node().attrs().GetOr<double>("epsilon", 1e-12);
  return DispatchDType<float, double>(x.dtype(), "_FusedLayerNorm", [&]<typename T>() {
    const T* in = x.data<T>();
    const T* s = scale.data<T>();
    const T* o = offset.data<T>();
    T* y = out->data<T>();
    // A row is independent of the others, so the split does not change the results.
    ctx.ParallelFor(rows, 6 * n, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r)
        NormalizeRow<T>(in + r * n, n, s, o, T(epsilon), y + r * n);
    });
    return Status::OK();
  });
}

Status LayerNormShape(InferenceContext& ctx) {
  PartialShape x;
  FS_RETURN_IF_ERROR(ctx.WithRankAtLeast(0, 1));
  x = ctx.input(0);
  ctx.set_output(0, x);
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("_FusedLayerNorm")
                   .Input("x", "T")
                   .Input("scale", "T")
                   .Input("offset", "T")
                   .Output("y", "T")
                   .TypeAttr("T", {DType::kFloat32, DType::kFloat64})
                   .Attr("epsilon", 1e-12f)
                   .Shape(LayerNormShape)
                   .Kernel("CPU", LayerNormKernel)
                   .NotDifferentiable()
                   .Doc("Layer normalization over the last axis: (x - mean) * rsqrt(variance + "
                        "epsilon) * scale + offset, with the mean and (biased) variance of each "
                        "row. Created by the graph optimizer after gradients are built, so it has "
                        "no gradient of its own."));

}  // namespace
}  // namespace flowstone
