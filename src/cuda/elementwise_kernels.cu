// Elementwise GPU kernels for float32 and float64: unary math and activations (and the
// activations' gradient ops), binary arithmetic with numpy broadcasting, and AddN. Each functor
// computes what the CPU kernel in src/ops/ computes, so results agree to rounding.
#include <cstdint>
#include <vector>

#include "cuda_kernel.h"
#include "flowstone/shape_inference.h"
#include "gpu_launch.h"
#include "ops/elementwise.h"

namespace flowstone::cuda {
namespace {

const std::vector<DType> kGpuFloatTypes = {DType::kFloat32, DType::kFloat64};

// ---------------------------------------------------------------------------------------------
// Unary ops: y = fn(x)

template <typename T, typename Fn>
__global__ void UnaryKernel(const T* x, T* y, int64_t n, Fn fn) {
  for (int64_t i = GridStart(); i < n; i += GridStride()) y[i] = fn(x[i]);
}

template <typename Fn, typename T>
Status LaunchUnary(KernelContext& ctx, const Fn& fn) {
  const Tensor& in = ctx.input(0);
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.ForwardOrAllocateOutput(0, 0, in.shape(), &out));
  const int64_t n = in.num_elements();
  if (n == 0) return Status::OK();
  UnaryKernel<<<BlocksFor(n), kThreadsPerBlock, 0, StreamOf(ctx)>>>(in.data<T>(), out->data<T>(), n,
                                                                    fn);
  return LaunchCheck(ctx.node().type().c_str());
}

// The kernel function of a unary op whose functor needs no attrs.
template <typename Fn>
Status UnaryOp(KernelContext& ctx) {
  return DispatchDType<float, double>(ctx.input(0).dtype(), ctx.node().type().c_str(),
                                      [&]<typename T>() { return LaunchUnary<Fn, T>(ctx, Fn()); });
}

struct NegFn {
  template <typename T>
  __device__ T operator()(T x) const {
    return -x;
  }
};
struct AbsFn {
  template <typename T>
  __device__ T operator()(T x) const {
    return fabs(x);
  }
};
struct SquareFn {
  template <typename T>
  __device__ T operator()(T x) const {
    return x * x;
  }
};
struct SqrtFn {
  template <typename T>
  __device__ T operator()(T x) const {
    return sqrt(x);
  }
};
struct RsqrtFn {
  template <typename T>
  __device__ T operator()(T x) const {
    return T(1) / sqrt(x);
  }
};
struct ExpFn {
  template <typename T>
  __device__ T operator()(T x) const {
    return exp(x);
  }
};
struct LogFn {
  template <typename T>
  __device__ T operator()(T x) const {
    return log(x);
  }
};
struct Log1pFn {
  template <typename T>
  __device__ T operator()(T x) const {
    return log1p(x);
  }
};
// -1, 0 or 1; zero and NaN map to themselves.
struct SignFn {
  template <typename T>
  __device__ T operator()(T x) const {
    return x > T(0) ? T(1) : (x < T(0) ? T(-1) : x);
  }
};
struct FloorFn {
  template <typename T>
  __device__ T operator()(T x) const {
    return floor(x);
  }
};
struct CeilFn {
  template <typename T>
  __device__ T operator()(T x) const {
    return ceil(x);
  }
};
// rint rounds halves to even, like the CPU kernel's nearbyint.
struct RoundFn {
  template <typename T>
  __device__ T operator()(T x) const {
    return rint(x);
  }
};
struct SigmoidFn {
  template <typename T>
  __device__ T operator()(T x) const {
    return T(1) / (T(1) + exp(-x));
  }
};
struct TanhFn {
  template <typename T>
  __device__ T operator()(T x) const {
    return tanh(x);
  }
};
// max(x, 0), NaN passing through.
struct ReluFn {
  template <typename T>
  __device__ T operator()(T x) const {
    return x < T(0) ? T(0) : x;
  }
};
struct Relu6Fn {
  template <typename T>
  __device__ T operator()(T x) const {
    return x < T(0) ? T(0) : (x > T(6) ? T(6) : x);
  }
};
struct EluFn {
  template <typename T>
  __device__ T operator()(T x) const {
    return x < T(0) ? expm1(x) : x;
  }
};
constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
constexpr double kSeluScale = 1.0507009873554804934193349852946;
struct SeluFn {
  template <typename T>
  __device__ T operator()(T x) const {
    return x < T(0) ? T(kSeluScale * kSeluAlpha) * expm1(x) : T(kSeluScale) * x;
  }
};
struct LeakyReluFn {
  double alpha;
  template <typename T>
  __device__ T operator()(T x) const {
    return x < T(0) ? T(alpha) * x : x;
  }
};

Status LeakyRelu(KernelContext& ctx) {
  const LeakyReluFn fn{ctx.attrs().GetOr<double>("alpha", 0.2)};
  return DispatchDType<float, double>(ctx.input(0).dtype(), "LeakyRelu", [&]<typename T>() {
    return LaunchUnary<LeakyReluFn, T>(ctx, fn);
  });
}

// ---------------------------------------------------------------------------------------------
// Activation gradients: backprops = gradients * fn(features or outputs), shapes equal.

template <typename T, typename Fn>
__global__ void GradKernel(const T* g, const T* v, T* out, int64_t n, Fn fn) {
  for (int64_t i = GridStart(); i < n; i += GridStride()) out[i] = g[i] * fn(v[i]);
}

template <typename Fn>
Status LaunchGrad(KernelContext& ctx, const Fn& fn) {
  const Tensor& g = ctx.input(0);
  const Tensor& v = ctx.input(1);
  if (g.shape() != v.shape()) {
    return errors::InvalidArgument(ctx.node().type(), ": gradients shape ", g.shape().ToString(),
                                   " does not match the activation's shape ", v.shape().ToString());
  }
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.ForwardOrAllocateOutput(0, 0, g.shape(), &out));
  const int64_t n = g.num_elements();
  if (n == 0) return Status::OK();
  return DispatchDType<float, double>(g.dtype(), ctx.node().type().c_str(), [&]<typename T>() {
    GradKernel<<<BlocksFor(n), kThreadsPerBlock, 0, StreamOf(ctx)>>>(
        ctx.input(0).data<T>(), ctx.input(1).data<T>(), out->data<T>(), n, fn);
    return LaunchCheck(ctx.node().type().c_str());
  });
}

template <typename Fn>
Status GradOp(KernelContext& ctx) {
  return LaunchGrad(ctx, Fn());
}

struct ReluGradFn {  // of the features
  template <typename T>
  __device__ T operator()(T x) const {
    return x > T(0) ? T(1) : T(0);
  }
};
struct Relu6GradFn {  // of the features
  template <typename T>
  __device__ T operator()(T x) const {
    return x > T(0) && x < T(6) ? T(1) : T(0);
  }
};
struct EluGradFn {  // of the outputs
  template <typename T>
  __device__ T operator()(T y) const {
    return y > T(0) ? T(1) : y + T(1);
  }
};
struct SeluGradFn {  // of the outputs
  template <typename T>
  __device__ T operator()(T y) const {
    return y > T(0) ? T(kSeluScale) : y + T(kSeluScale * kSeluAlpha);
  }
};
struct LeakyReluGradFn {  // of the features
  double alpha;
  template <typename T>
  __device__ T operator()(T x) const {
    return x > T(0) ? T(1) : T(alpha);
  }
};

Status LeakyReluGrad(KernelContext& ctx) {
  return LaunchGrad(ctx, LeakyReluGradFn{ctx.attrs().GetOr<double>("alpha", 0.2)});
}

// ---------------------------------------------------------------------------------------------
// The unary math family's gradient ops (src/ops/math/unary_grad_ops.cc): z = fn(a, b) with a, b
// the op's two inputs ((y, dy), or (gradients, features) for Softplus and Softsign), shapes
// equal. The formulas are the CPU kernels', for real types.

template <typename T, typename Fn>
__global__ void PairKernel(const T* a, const T* b, T* out, int64_t n, Fn fn) {
  for (int64_t i = GridStart(); i < n; i += GridStride()) out[i] = fn(a[i], b[i]);
}

template <typename Fn>
Status PairOp(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (a.shape() != b.shape()) {
    return errors::InvalidArgument(
        ctx.node().type(), ": both inputs must have the same shape (the forward op's and its "
        "gradient's), got ", a.shape().ToString(), " and ", b.shape().ToString());
  }
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.ForwardOrAllocateOutput(0, 0, a.shape(), &out));
  const int64_t n = a.num_elements();
  if (n == 0) return Status::OK();
  return DispatchDType<float, double>(a.dtype(), ctx.node().type().c_str(), [&]<typename T>() {
    PairKernel<<<BlocksFor(n), kThreadsPerBlock, 0, StreamOf(ctx)>>>(
        ctx.input(0).data<T>(), ctx.input(1).data<T>(), out->data<T>(), n, Fn());
    return LaunchCheck(ctx.node().type().c_str());
  });
}

struct TanhGradFn {
  template <typename T>
  __device__ T operator()(T y, T dy) const {
    return dy * (T(1) - y * y);
  }
};
struct SigmoidGradFn {
  template <typename T>
  __device__ T operator()(T y, T dy) const {
    return dy * y * (T(1) - y);
  }
};
struct SqrtGradFn {
  template <typename T>
  __device__ T operator()(T y, T dy) const {
    return T(0.5) * dy / y;
  }
};
struct RsqrtGradFn {
  template <typename T>
  __device__ T operator()(T y, T dy) const {
    return T(-0.5) * (dy * y) * (y * y);
  }
};
struct ReciprocalGradFn {
  template <typename T>
  __device__ T operator()(T y, T dy) const {
    return -dy * y * y;
  }
};
struct SoftplusGradFn {
  template <typename T>
  __device__ T operator()(T g, T x) const {
    return g / (exp(-x) + T(1));
  }
};
struct SoftsignGradFn {
  template <typename T>
  __device__ T operator()(T g, T x) const {
    const T d = fabs(x) + T(1);
    return g / (d * d);
  }
};

// ---------------------------------------------------------------------------------------------
// Binary ops with numpy broadcasting: z = fn(x, y)

// Output dimensions after dropping size-1 dimensions and merging neighbours that each input
// either spans or broadcasts over alike (as the CPU Broadcaster does), with each input's
// element stride along them (0 where it is broadcast).
constexpr int kMaxBroadcastDims = 8;
struct BroadcastIndex {
  int rank = 0;
  int64_t dims[kMaxBroadcastDims];
  int64_t x_strides[kMaxBroadcastDims];
  int64_t y_strides[kMaxBroadcastDims];
};

Status MakeBroadcastIndex(const TensorShape& x, const TensorShape& y, const TensorShape& out,
                          BroadcastIndex* index) {
  const int rank = out.rank();
  std::vector<int64_t> dims;
  std::vector<int> masks;  // bit 0: x broadcast, bit 1: y broadcast
  for (int i = 0; i < rank; ++i) {
    const int64_t d = out.dim(i);
    if (d == 1) continue;
    const int jx = x.rank() - rank + i, jy = y.rank() - rank + i;
    const int mask = (jx < 0 || x.dim(jx) == 1 ? 1 : 0) | (jy < 0 || y.dim(jy) == 1 ? 2 : 0);
    if (!masks.empty() && masks.back() == mask) {
      dims.back() *= d;
    } else {
      dims.push_back(d);
      masks.push_back(mask);
    }
  }
  if (dims.empty()) {  // a single element
    dims.push_back(1);
    masks.push_back(0);
  }
  if (static_cast<int>(dims.size()) > kMaxBroadcastDims) {
    return errors::Unimplemented("broadcasting ", x.ToString(), " against ", y.ToString(),
                                 " alternates between broadcast and full dimensions more than ",
                                 kMaxBroadcastDims,
                                 " times, which the GPU kernels do not "
                                 "support; pin the op to the CPU with tf.device('/cpu:0')");
  }
  index->rank = static_cast<int>(dims.size());
  int64_t x_running = 1, y_running = 1;
  for (int g = index->rank - 1; g >= 0; --g) {
    index->dims[g] = dims[g];
    index->x_strides[g] = (masks[g] & 1) ? 0 : x_running;
    index->y_strides[g] = (masks[g] & 2) ? 0 : y_running;
    if (!(masks[g] & 1)) x_running *= dims[g];
    if (!(masks[g] & 2)) y_running *= dims[g];
  }
  return Status::OK();
}

template <typename T, typename Fn>
__global__ void BinaryKernel(const T* x, const T* y, T* z, int64_t n, BroadcastIndex index, Fn fn) {
  for (int64_t i = GridStart(); i < n; i += GridStride()) {
    int64_t rest = i, xo = 0, yo = 0;
    for (int d = index.rank - 1; d >= 0; --d) {
      const int64_t c = rest % index.dims[d];
      rest /= index.dims[d];
      xo += c * index.x_strides[d];
      yo += c * index.y_strides[d];
    }
    z[i] = fn(x[xo], y[yo]);
  }
}

// Same shapes (or one scalar): no index arithmetic.
template <typename T, typename Fn>
__global__ void FlatBinaryKernel(const T* x, int64_t xs, const T* y, int64_t ys, T* z, int64_t n,
                                 Fn fn) {
  for (int64_t i = GridStart(); i < n; i += GridStride()) z[i] = fn(x[i * xs], y[i * ys]);
}

template <typename Fn>
Status BinaryOp(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& y = ctx.input(1);
  TensorShape out_shape;
  FS_RETURN_IF_ERROR(BroadcastShapes(x.shape(), y.shape(), &out_shape));
  BroadcastIndex index;
  FS_RETURN_IF_ERROR(MakeBroadcastIndex(x.shape(), y.shape(), out_shape, &index));
  Tensor* out;
  FS_RETURN_IF_ERROR(ForwardMatchingInputOrAllocate(ctx, out_shape, &out));
  const int64_t n = out_shape.num_elements();
  if (n == 0) return Status::OK();
  return DispatchDType<float, double>(x.dtype(), ctx.node().type().c_str(), [&]<typename T>() {
    const T* xp = ctx.input(0).data<T>();
    const T* yp = ctx.input(1).data<T>();
    T* zp = out->data<T>();
    if (index.rank == 1) {
      FlatBinaryKernel<<<BlocksFor(n), kThreadsPerBlock, 0, StreamOf(ctx)>>>(
          xp, index.x_strides[0], yp, index.y_strides[0], zp, n, Fn());
    } else {
      BinaryKernel<<<BlocksFor(n), kThreadsPerBlock, 0, StreamOf(ctx)>>>(xp, yp, zp, n, index,
                                                                         Fn());
    }
    return LaunchCheck(ctx.node().type().c_str());
  });
}

struct AddFn {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a + b;
  }
};
struct SubFn {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a - b;
  }
};
struct MulFn {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a * b;
  }
};
struct DivFn {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a / b;
  }
};
struct PowFn {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return pow(a, b);
  }
};
// Maximum and Minimum propagate NaN.
struct MaximumFn {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return (a > b || a != a) ? a : b;
  }
};
struct MinimumFn {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return (a < b || a != a) ? a : b;
  }
};
struct SquaredDifferenceFn {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return (a - b) * (a - b);
  }
};

// ---------------------------------------------------------------------------------------------
// AddN: the sum of N tensors of one shape, up to kAddNChunk inputs per launch.

constexpr int kAddNChunk = 8;
template <typename T>
struct AddNInputs {
  const T* data[kAddNChunk];
  int count;
};

// out = (accumulate ? out : 0) + the inputs.
template <typename T>
__global__ void AddNKernel(AddNInputs<T> inputs, T* out, int64_t n, bool accumulate) {
  for (int64_t i = GridStart(); i < n; i += GridStride()) {
    T sum = accumulate ? out[i] : inputs.data[0][i];
    for (int k = accumulate ? 0 : 1; k < inputs.count; ++k) sum += inputs.data[k][i];
    out[i] = sum;
  }
}

Status AddN(KernelContext& ctx) {
  const Tensor& first = ctx.input(0);
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    if (ctx.input(i).shape() != first.shape()) {
      return errors::InvalidArgument("AddN inputs must have the same shape, but input ", i,
                                     " has shape ", ctx.input(i).shape().ToString(),
                                     " and input 0 has ", first.shape().ToString());
    }
  }
  // Not forwarded: an input's buffer is read by later chunks.
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, first.shape(), &out));
  const int64_t n = first.num_elements();
  if (n == 0) return Status::OK();
  return DispatchDType<float, double>(first.dtype(), "AddN", [&]<typename T>() -> Status {
    for (int begin = 0; begin < ctx.num_inputs(); begin += kAddNChunk) {
      AddNInputs<T> inputs;
      inputs.count = std::min(kAddNChunk, ctx.num_inputs() - begin);
      for (int k = 0; k < inputs.count; ++k) inputs.data[k] = ctx.input(begin + k).data<T>();
      AddNKernel<<<BlocksFor(n), kThreadsPerBlock, 0, StreamOf(ctx)>>>(inputs, out->data<T>(), n,
                                                                       begin > 0);
      FS_RETURN_IF_ERROR(LaunchCheck("AddN"));
    }
    return Status::OK();
  });
}

#define FS_GPU_FLOAT_KERNEL(op, fn) FS_REGISTER_GPU_KERNEL(GpuKernel(op, fn).Types(kGpuFloatTypes))

FS_GPU_FLOAT_KERNEL("Neg", UnaryOp<NegFn>);
FS_GPU_FLOAT_KERNEL("Abs", UnaryOp<AbsFn>);
FS_GPU_FLOAT_KERNEL("Square", UnaryOp<SquareFn>);
FS_GPU_FLOAT_KERNEL("Sqrt", UnaryOp<SqrtFn>);
FS_GPU_FLOAT_KERNEL("Rsqrt", UnaryOp<RsqrtFn>);
FS_GPU_FLOAT_KERNEL("Exp", UnaryOp<ExpFn>);
FS_GPU_FLOAT_KERNEL("Log", UnaryOp<LogFn>);
FS_GPU_FLOAT_KERNEL("Log1p", UnaryOp<Log1pFn>);
FS_GPU_FLOAT_KERNEL("Sign", UnaryOp<SignFn>);
FS_GPU_FLOAT_KERNEL("Floor", UnaryOp<FloorFn>);
FS_GPU_FLOAT_KERNEL("Ceil", UnaryOp<CeilFn>);
FS_GPU_FLOAT_KERNEL("Round", UnaryOp<RoundFn>);
FS_GPU_FLOAT_KERNEL("Sigmoid", UnaryOp<SigmoidFn>);
FS_GPU_FLOAT_KERNEL("Tanh", UnaryOp<TanhFn>);
FS_GPU_FLOAT_KERNEL("Relu", UnaryOp<ReluFn>);
FS_GPU_FLOAT_KERNEL("Relu6", UnaryOp<Relu6Fn>);
FS_GPU_FLOAT_KERNEL("Elu", UnaryOp<EluFn>);
FS_GPU_FLOAT_KERNEL("Selu", UnaryOp<SeluFn>);
FS_GPU_FLOAT_KERNEL("LeakyRelu", LeakyRelu);
FS_GPU_FLOAT_KERNEL("ReluGrad", GradOp<ReluGradFn>);
FS_GPU_FLOAT_KERNEL("Relu6Grad", GradOp<Relu6GradFn>);
FS_GPU_FLOAT_KERNEL("EluGrad", GradOp<EluGradFn>);
FS_GPU_FLOAT_KERNEL("SeluGrad", GradOp<SeluGradFn>);
FS_GPU_FLOAT_KERNEL("LeakyReluGrad", LeakyReluGrad);
FS_GPU_FLOAT_KERNEL("TanhGrad", PairOp<TanhGradFn>);
FS_GPU_FLOAT_KERNEL("SigmoidGrad", PairOp<SigmoidGradFn>);
FS_GPU_FLOAT_KERNEL("SqrtGrad", PairOp<SqrtGradFn>);
FS_GPU_FLOAT_KERNEL("RsqrtGrad", PairOp<RsqrtGradFn>);
FS_GPU_FLOAT_KERNEL("ReciprocalGrad", PairOp<ReciprocalGradFn>);
FS_GPU_FLOAT_KERNEL("InvGrad", PairOp<ReciprocalGradFn>);
FS_GPU_FLOAT_KERNEL("SoftplusGrad", PairOp<SoftplusGradFn>);
FS_GPU_FLOAT_KERNEL("SoftsignGrad", PairOp<SoftsignGradFn>);
FS_GPU_FLOAT_KERNEL("AddV2", BinaryOp<AddFn>);
FS_GPU_FLOAT_KERNEL("Sub", BinaryOp<SubFn>);
FS_GPU_FLOAT_KERNEL("Mul", BinaryOp<MulFn>);
FS_GPU_FLOAT_KERNEL("RealDiv", BinaryOp<DivFn>);
FS_GPU_FLOAT_KERNEL("Div", BinaryOp<DivFn>);
FS_GPU_FLOAT_KERNEL("Pow", BinaryOp<PowFn>);
FS_GPU_FLOAT_KERNEL("Maximum", BinaryOp<MaximumFn>);
FS_GPU_FLOAT_KERNEL("Minimum", BinaryOp<MinimumFn>);
FS_GPU_FLOAT_KERNEL("SquaredDifference", BinaryOp<SquaredDifferenceFn>);
FS_GPU_FLOAT_KERNEL("AddN", AddN);

#undef FS_GPU_FLOAT_KERNEL

}  // namespace
}  // namespace flowstone::cuda
