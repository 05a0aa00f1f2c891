// GPU kernels for MaxPool, AvgPool, MaxPoolGrad and AvgPoolGrad (float32 and float64, NHWC and
// NCHW) as plain CUDA kernels.
//
// These are written out rather than taken from cuDNN so that they compute what the CPU kernels
// (src/ops/pooling_ops.cc) compute, and work without cuDNN: windows clipped to the input with
// any split of the padding (SAME puts the odd row after, EXPLICIT may be anything, while cuDNN
// pads both sides equally), averages over the elements inside the input only, and max-pool
// gradients sent to the first maximum of each window in row-major order. Sums run in the order
// of the CPU's reference loops, so results match those bit for bit (float32 on the CPU runs on
// oneDNN, which may round sums differently). The gradients are gathered per input element,
// summing the windows in that order, so they are deterministic and need no atomics.
#include <cmath>
#include <string>
#include <vector>

#include "cuda/cuda_kernel.h"
#include "flowstone/kernel.h"
#include "ops/conv_util.h"

namespace flowstone::cuda {
namespace {

using conv::Image;
using conv::ImageStrides;
using conv::WindowAttrs;

constexpr int kThreads = 256;

int BlocksFor(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < 65535 ? blocks : 65535);
}

// Element strides of an image, copyable to the device.
struct Strides {
  int64_t n, h, w, c;
  __host__ __device__ int64_t At(int64_t b, int64_t y, int64_t x, int64_t ch) const {
    return b * n + y * h + x * w + ch * c;
  }
};

Strides StridesOf(const Image& image, conv::DataFormat format) {
  const ImageStrides s(image, format);
  return Strides{s.n, s.h, s.w, s.c};
}

// One pooling problem with every size known.
struct PoolGeometry {
  int64_t batch, channels;
  int64_t in_h, in_w, out_h, out_w;
  int64_t kernel_h, kernel_w, stride_h, stride_w, pad_top, pad_left;
  Strides x, y;
};

// The input range [begin, end) a window covers, clipped to the input.
struct Span {
  int64_t begin, end;
};
__device__ Span WindowSpan(int64_t out_pos, int64_t stride, int64_t pad, int64_t kernel,
                           int64_t in) {
  const int64_t start = out_pos * stride - pad;
  return Span{start > 0 ? start : 0, start + kernel < in ? start + kernel : in};
}

// The outputs whose windows contain input position `in_pos`: [first, last].
__device__ Span CoveringOutputs(int64_t in_pos, int64_t stride, int64_t pad, int64_t kernel,
                                int64_t out) {
  // out_pos * stride - pad <= in_pos < out_pos * stride - pad + kernel
  const int64_t lowest = in_pos + pad - kernel + 1;
  int64_t first = lowest <= 0 ? 0 : (lowest + stride - 1) / stride;
  int64_t last = (in_pos + pad) / stride;
  if (last > out - 1) last = out - 1;
  return Span{first, last + 1};
}

template <typename T>
__device__ T Lowest() {
  return static_cast<T>(-INFINITY);
}

// Splits a linear output index (batch, row, column, channel order) into coordinates.
__device__ void Split(int64_t i, int64_t h, int64_t w, int64_t c, int64_t* b, int64_t* y,
                      int64_t* x, int64_t* ch) {
  *ch = i % c;
  i /= c;
  *x = i % w;
  i /= w;
  *y = i % h;
  *b = i / h;
}

template <typename T, bool kMax>
__global__ void PoolForward(PoolGeometry g, const T* x, T* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    int64_t b, oy, ox, c;
    Split(i, g.out_h, g.out_w, g.channels, &b, &oy, &ox, &c);
    const Span ry = WindowSpan(oy, g.stride_h, g.pad_top, g.kernel_h, g.in_h);
    const Span rx = WindowSpan(ox, g.stride_w, g.pad_left, g.kernel_w, g.in_w);
    T acc = kMax ? Lowest<T>() : T(0);
    for (int64_t iy = ry.begin; iy < ry.end; ++iy) {
      for (int64_t ix = rx.begin; ix < rx.end; ++ix) {
        const T v = x[g.x.At(b, iy, ix, c)];
        if (kMax) {
          if (v > acc) acc = v;
        } else {
          acc += v;
        }
      }
    }
    if (!kMax) acc /= static_cast<T>((ry.end - ry.begin) * (rx.end - rx.begin));
    y[g.y.At(b, oy, ox, c)] = acc;
  }
}

// Each input element sums the gradients of the windows whose first maximum it is.
template <typename T>
__global__ void MaxPoolBackward(PoolGeometry g, const T* x, const T* dy, T* dx, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    int64_t b, iy, ix, c;
    Split(i, g.in_h, g.in_w, g.channels, &b, &iy, &ix, &c);
    const int64_t self = g.x.At(b, iy, ix, c);
    const Span oys = CoveringOutputs(iy, g.stride_h, g.pad_top, g.kernel_h, g.out_h);
    const Span oxs = CoveringOutputs(ix, g.stride_w, g.pad_left, g.kernel_w, g.out_w);
    T sum = T(0);
    for (int64_t oy = oys.begin; oy < oys.end; ++oy) {
      const Span ry = WindowSpan(oy, g.stride_h, g.pad_top, g.kernel_h, g.in_h);
      for (int64_t ox = oxs.begin; ox < oxs.end; ++ox) {
        const Span rx = WindowSpan(ox, g.stride_w, g.pad_left, g.kernel_w, g.in_w);
        int64_t arg = -1;
        T best = Lowest<T>();
        for (int64_t wy = ry.begin; wy < ry.end; ++wy) {
          for (int64_t wx = rx.begin; wx < rx.end; ++wx) {
            const int64_t at = g.x.At(b, wy, wx, c);
            if (arg < 0 || x[at] > best) {
              best = x[at];
              arg = at;
            }
          }
        }
        if (arg == self) sum += dy[g.y.At(b, oy, ox, c)];
      }
    }
    dx[self] = sum;
  }
}

// Each input element sums its share of every window that contains it.
template <typename T>
__global__ void AvgPoolBackward(PoolGeometry g, const T* dy, T* dx, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    int64_t b, iy, ix, c;
    Split(i, g.in_h, g.in_w, g.channels, &b, &iy, &ix, &c);
    const Span oys = CoveringOutputs(iy, g.stride_h, g.pad_top, g.kernel_h, g.out_h);
    const Span oxs = CoveringOutputs(ix, g.stride_w, g.pad_left, g.kernel_w, g.out_w);
    T sum = T(0);
    for (int64_t oy = oys.begin; oy < oys.end; ++oy) {
      const Span ry = WindowSpan(oy, g.stride_h, g.pad_top, g.kernel_h, g.in_h);
      for (int64_t ox = oxs.begin; ox < oxs.end; ++ox) {
        const Span rx = WindowSpan(ox, g.stride_w, g.pad_left, g.kernel_w, g.in_w);
        sum += dy[g.y.At(b, oy, ox, c)] / static_cast<T>((ry.end - ry.begin) * (rx.end - rx.begin));
      }
    }
    dx[g.x.At(b, iy, ix, c)] = sum;
  }
}

// ---------------------------------------------------------------------------------------------
// Host side: attrs, shape checks and launches.

Status CheckRank4(const std::string& op, const char* name, const Tensor& t) {
  if (t.rank() != 4) {
    return errors::InvalidArgument(op, ": ", name, " must be 4-dimensional, but has shape ",
                                   t.shape().ToString());
  }
  return Status::OK();
}

// Parses the attrs and computes the geometry of pooling an input of `in_shape`.
Status MakeGeometry(const KernelContext& ctx, const TensorShape& in_shape, WindowAttrs* attrs,
                    PoolGeometry* g, Image* out) {
  FS_RETURN_IF_ERROR(conv::ParsePoolAttrs(ctx.attrs(), attrs));
  const Image in = conv::ImageOf(in_shape.dims(), attrs->format);
  conv::Window rows, cols;
  Status s = conv::ComputeWindow(*attrs, 0, in.h, attrs->ksize[0], &rows);
  if (s.ok()) s = conv::ComputeWindow(*attrs, 1, in.w, attrs->ksize[1], &cols);
  if (!s.ok()) s.Append(StrCat(" (input shape ", in_shape.ToString(), ")"));
  FS_RETURN_IF_ERROR(s);
  *out = Image{in.n, rows.out, cols.out, in.c};
  *g = PoolGeometry{in.n,
                    in.c,
                    in.h,
                    in.w,
                    rows.out,
                    cols.out,
                    rows.kernel,
                    cols.kernel,
                    rows.stride,
                    cols.stride,
                    rows.pad_before,
                    cols.pad_before,
                    StridesOf(in, attrs->format),
                    StridesOf(*out, attrs->format)};
  return Status::OK();
}

// Checks a gradient (or original output) against the pooled shape.
Status CheckPooled(const std::string& op, const char* name, const WindowAttrs& attrs,
                   const Image& expected, const Tensor& got) {
  const TensorShape want(conv::DimsOf(expected, attrs.format));
  if (got.shape() != want) {
    return errors::InvalidArgument(op, ": ", name, " must have the shape of the pooled input, ",
                                   want.ToString(), ", but has shape ", got.shape().ToString());
  }
  return Status::OK();
}

template <bool kMax>
Status PoolGpu(KernelContext& ctx) {
  const std::string& op = ctx.node().type();
  const Tensor& x = ctx.input(0);
  FS_RETURN_IF_ERROR(CheckRank4(op, "input", x));
  WindowAttrs attrs;
  PoolGeometry g;
  Image out;
  FS_RETURN_IF_ERROR(MakeGeometry(ctx, x.shape(), &attrs, &g, &out));
  Tensor* y;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape(conv::DimsOf(out, attrs.format)), &y));
  const int64_t n = y->num_elements();
  if (n == 0) return Status::OK();
  return DispatchDType<float, double>(x.dtype(), op.c_str(), [&]<typename T>() -> Status {
    PoolForward<T, kMax>
        <<<BlocksFor(n), kThreads, 0, StreamOf(ctx)>>>(g, x.data<T>(), y->data<T>(), n);
    return LaunchCheck(kMax ? "MaxPool" : "AvgPool");
  });
}

Status MaxPoolGradGpu(KernelContext& ctx) {
  const std::string& op = ctx.node().type();
  const Tensor& x = ctx.input(0);
  const Tensor& y = ctx.input(1);
  const Tensor& dy = ctx.input(2);
  FS_RETURN_IF_ERROR(CheckRank4(op, "orig_input", x));
  FS_RETURN_IF_ERROR(CheckRank4(op, "orig_output", y));
  FS_RETURN_IF_ERROR(CheckRank4(op, "grad", dy));
  WindowAttrs attrs;
  PoolGeometry g;
  Image out;
  FS_RETURN_IF_ERROR(MakeGeometry(ctx, x.shape(), &attrs, &g, &out));
  FS_RETURN_IF_ERROR(CheckPooled(op, "orig_output", attrs, out, y));
  FS_RETURN_IF_ERROR(CheckPooled(op, "grad", attrs, out, dy));
  Tensor* dx;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, x.shape(), &dx));
  const int64_t n = dx->num_elements();
  if (n == 0) return Status::OK();
  return DispatchDType<float, double>(x.dtype(), op.c_str(), [&]<typename T>() -> Status {
    MaxPoolBackward<T><<<BlocksFor(n), kThreads, 0, StreamOf(ctx)>>>(g, x.data<T>(), dy.data<T>(),
                                                                     dx->data<T>(), n);
    return LaunchCheck("MaxPoolGrad");
  });
}

Status AvgPoolGradGpu(KernelContext& ctx) {
  const std::string& op = ctx.node().type();
  const Tensor& sizes = ctx.input(0);
  const Tensor& dy = ctx.input(1);
  if (sizes.rank() != 1 || sizes.num_elements() != 4) {
    return errors::InvalidArgument(op,
                                   ": orig_input_shape must be a vector of 4 sizes, but has "
                                   "shape ",
                                   sizes.shape().ToString());
  }
  FS_RETURN_IF_ERROR(CheckRank4(op, "grad", dy));
  std::vector<int64_t> dims;
  for (int i = 0; i < 4; ++i) dims.push_back(sizes.ElementAsInt64(i));
  if (!ValidateDims(dims).ok()) {
    return errors::InvalidArgument(op, ": orig_input_shape must hold non-negative sizes, but is [",
                                   dims[0], ",", dims[1], ",", dims[2], ",", dims[3], "]");
  }
  const TensorShape in_shape(dims);
  WindowAttrs attrs;
  PoolGeometry g;
  Image out;
  FS_RETURN_IF_ERROR(MakeGeometry(ctx, in_shape, &attrs, &g, &out));
  FS_RETURN_IF_ERROR(CheckPooled(op, "grad", attrs, out, dy));
  Tensor* dx;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, in_shape, &dx));
  const int64_t n = dx->num_elements();
  if (n == 0) return Status::OK();
  return DispatchDType<float, double>(dy.dtype(), op.c_str(), [&]<typename T>() -> Status {
    AvgPoolBackward<T>
        <<<BlocksFor(n), kThreads, 0, StreamOf(ctx)>>>(g, dy.data<T>(), dx->data<T>(), n);
    return LaunchCheck("AvgPoolGrad");
  });
}

const std::vector<DType> kGpuFloatTypes = {DType::kFloat32, DType::kFloat64};

FS_REGISTER_GPU_KERNEL(GpuKernel("MaxPool", PoolGpu<true>).Types(kGpuFloatTypes));
FS_REGISTER_GPU_KERNEL(GpuKernel("AvgPool", PoolGpu<false>).Types(kGpuFloatTypes));
FS_REGISTER_GPU_KERNEL(GpuKernel("MaxPoolGrad", MaxPoolGradGpu).Types(kGpuFloatTypes));
FS_REGISTER_GPU_KERNEL(
    GpuKernel("AvgPoolGrad", AvgPoolGradGpu).Types(kGpuFloatTypes).HostMemory("orig_input_shape"));

}  // namespace
}  // namespace flowstone::cuda
