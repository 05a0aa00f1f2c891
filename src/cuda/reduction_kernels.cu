// GPU reductions for float32 and float64: Sum, Mean, Prod, Max and Min over any set of axes,
// with keep_dims; the axes are read in host memory.
//
// As on the CPU (src/ops/reduction_ops.cc), size-1 dimensions are dropped and neighbouring
// dimensions that are all reduced or all kept are merged. Each pass then reduces the last
// reduced group, seen as [P, R, Q] -> [P, Q]:
//   * Q == 1: a block per row reduces it in shared memory; when there are few long rows, each
//     row is first split into chunks whose partial results a second pass combines;
//   * Q > 1: a thread per output column walks down R (neighbouring threads read neighbouring
//     addresses); when there are few outputs, R is first split into chunks the same way.
// Everything accumulates in double, so float32 sums are as precise as the CPU's, and the work
// split depends only on the shape, so results are reproducible.
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "cuda_kernel.h"
#include "gpu_launch.h"

namespace flowstone::cuda {
namespace {

enum class ReduceKind { kSum, kMean, kProd, kMax, kMin };

template <ReduceKind kKind>
__device__ double Identity() {
  if constexpr (kKind == ReduceKind::kSum || kKind == ReduceKind::kMean) {
    return 0.0;
  } else if constexpr (kKind == ReduceKind::kProd) {
    return 1.0;
  } else if constexpr (kKind == ReduceKind::kMax) {
    return -std::numeric_limits<double>::infinity();
  } else {
    return std::numeric_limits<double>::infinity();
  }
}

// Max and Min propagate NaN, as numpy does.
template <ReduceKind kKind>
__device__ double Combine(double a, double b) {
  if constexpr (kKind == ReduceKind::kSum || kKind == ReduceKind::kMean) {
    return a + b;
  } else if constexpr (kKind == ReduceKind::kProd) {
    return a * b;
  } else if constexpr (kKind == ReduceKind::kMax) {
    return (a > b || a != a) ? a : b;
  } else {
    return (a < b || a != a) ? a : b;
  }
}

// Rows of [P, R] (each split into `chunks` pieces of `chunk_len`): out[p * chunks + c] is the
// reduction of piece c of row p, divided by `divisor` (the element count for Mean's last pass,
// else 1). One block per piece; kThreadsPerBlock must be a power of two.
template <ReduceKind kKind, typename In, typename Out>
__global__ void ReduceRowsKernel(const In* x, Out* out, int64_t rows, int64_t row_len,
                                 int64_t chunks, int64_t chunk_len, double divisor) {
  __shared__ double partial[kThreadsPerBlock];
  const int t = threadIdx.x;
  for (int64_t piece = blockIdx.x; piece < rows * chunks; piece += gridDim.x) {
    const int64_t row = piece / chunks;
    const int64_t begin = (piece % chunks) * chunk_len;
    const int64_t end = begin + chunk_len < row_len ? begin + chunk_len : row_len;
    const In* data = x + row * row_len;
    double acc = Identity<kKind>();
    for (int64_t r = begin + t; r < end; r += blockDim.x) {
      acc = Combine<kKind>(acc, static_cast<double>(data[r]));
    }
    partial[t] = acc;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
      if (t < stride) partial[t] = Combine<kKind>(partial[t], partial[t + stride]);
      __syncthreads();
    }
    if (t == 0) out[piece] = static_cast<Out>(partial[0] / divisor);
    __syncthreads();  // `partial` is reused by the next piece
  }
}

// [P, R, Q] -> [P, Q] with Q > 1: one thread per output.
template <ReduceKind kKind, typename In, typename Out>
__global__ void ReduceColumnsKernel(const In* x, Out* out, int64_t outer, int64_t reduce_len,
                                    int64_t inner, double divisor) {
  for (int64_t i = GridStart(); i < outer * inner; i += GridStride()) {
    const In* data = x + (i / inner) * reduce_len * inner + i % inner;
    double acc = Identity<kKind>();
    for (int64_t r = 0; r < reduce_len; ++r) {
      acc = Combine<kKind>(acc, static_cast<double>(data[r * inner]));
    }
    out[i] = static_cast<Out>(acc / divisor);
  }
}

// Chunks of R for [P, R, Q] with Q > 1: partial[(p * chunks + c) * Q + q] reduces rows
// [c * chunk_len, (c + 1) * chunk_len) of column q of slice p. A [P, chunks, Q] result that
// ReduceColumnsKernel then reduces.
template <ReduceKind kKind, typename In>
__global__ void ReduceColumnChunksKernel(const In* x, double* partial, int64_t outer,
                                         int64_t reduce_len, int64_t inner, int64_t chunks,
                                         int64_t chunk_len) {
  for (int64_t i = GridStart(); i < outer * chunks * inner; i += GridStride()) {
    const int64_t p = i / (chunks * inner);
    const int64_t c = (i / inner) % chunks;
    const int64_t q = i % inner;
    const int64_t begin = c * chunk_len;
    const int64_t end = begin + chunk_len < reduce_len ? begin + chunk_len : reduce_len;
    const In* data = x + p * reduce_len * inner + q;
    double acc = Identity<kKind>();
    for (int64_t r = begin; r < end; ++r) {
      acc = Combine<kKind>(acc, static_cast<double>(data[r * inner]));
    }
    partial[i] = acc;
  }
}

// With fewer rows than this, long rows are split into chunks to keep the GPU busy.
constexpr int64_t kFewRows = 256;
constexpr int64_t kChunkLen = 8192;
constexpr int64_t kMaxChunks = 512;
// Likewise for columns: with fewer outputs than this, R is split into chunks of kColumnChunkLen.
constexpr int64_t kFewColumnOutputs = 4096;
constexpr int64_t kColumnChunkLen = 256;

// One pass [P, R, Q] -> [P, Q] from `x` (In) into `out` (Out).
template <ReduceKind kKind, typename In, typename Out>
Status ReducePass(KernelContext& ctx, const In* x, Out* out, int64_t outer, int64_t reduce_len,
                  int64_t inner, double divisor) {
  cudaStream_t stream = StreamOf(ctx);
  const char* name = ctx.node().type().c_str();
  if (inner > 1) {
    const int64_t outputs = outer * inner;
    const int64_t chunks =
        outputs < kFewColumnOutputs
            ? std::min(kMaxChunks, (reduce_len + kColumnChunkLen - 1) / kColumnChunkLen)
            : 1;
    if (chunks <= 1) {
      ReduceColumnsKernel<kKind><<<BlocksFor(outputs), kThreadsPerBlock, 0, stream>>>(
          x, out, outer, reduce_len, inner, divisor);
      return LaunchCheck(name);
    }
    Tensor partials;
    FS_RETURN_IF_ERROR(
        ctx.AllocateTemp(DType::kFloat64, TensorShape{outer * chunks * inner}, &partials));
    const int64_t chunk_len = (reduce_len + chunks - 1) / chunks;
    ReduceColumnChunksKernel<kKind><<<BlocksFor(outputs * chunks), kThreadsPerBlock, 0, stream>>>(
        x, partials.data<double>(), outer, reduce_len, inner, chunks, chunk_len);
    FS_RETURN_IF_ERROR(LaunchCheck(name));
    ReduceColumnsKernel<kKind><<<BlocksFor(outputs), kThreadsPerBlock, 0, stream>>>(
        partials.data<double>(), out, outer, chunks, inner, divisor);
    return LaunchCheck(name);
  }
  const int64_t chunks =
      outer < kFewRows ? std::min(kMaxChunks, (reduce_len + kChunkLen - 1) / kChunkLen) : 1;
  if (chunks <= 1) {
    const auto blocks = static_cast<unsigned>(std::min(outer, kMaxBlocks));
    ReduceRowsKernel<kKind><<<blocks, kThreadsPerBlock, 0, stream>>>(x, out, outer, reduce_len, 1,
                                                                     reduce_len, divisor);
    return LaunchCheck(name);
  }
  Tensor partials;
  FS_RETURN_IF_ERROR(ctx.AllocateTemp(DType::kFloat64, TensorShape{outer * chunks}, &partials));
  const int64_t chunk_len = (reduce_len + chunks - 1) / chunks;
  const auto blocks = static_cast<unsigned>(std::min(outer * chunks, kMaxBlocks));
  ReduceRowsKernel<kKind><<<blocks, kThreadsPerBlock, 0, stream>>>(
      x, partials.data<double>(), outer, reduce_len, chunks, chunk_len, 1.0);
  FS_RETURN_IF_ERROR(LaunchCheck(name));
  ReduceRowsKernel<kKind>
      <<<static_cast<unsigned>(std::min(outer, kMaxBlocks)), kThreadsPerBlock, 0, stream>>>(
          partials.data<double>(), out, outer, chunks, 1, chunks, divisor);
  return LaunchCheck(name);
}

// Marks the axes listed in `axes` (host memory; scalar or vector, negative from the end).
Status ReadReductionAxes(const Tensor& axes, int rank, std::vector<bool>* reduced) {
  if (axes.rank() > 1) {
    return errors::InvalidArgument("reduction_indices must be a scalar or a vector, but has shape ",
                                   axes.shape().ToString());
  }
  reduced->assign(rank, false);
  for (int64_t i = 0; i < axes.num_elements(); ++i) {
    const int64_t axis = axes.ElementAsInt64(i);
    if (axis < -rank || axis >= rank) {
      return errors::InvalidArgument("Invalid reduction dimension ", axis, " for input with ", rank,
                                     " dimensions: axes must be in [", -rank, ", ", rank, ")");
    }
    (*reduced)[axis < 0 ? axis + rank : axis] = true;
  }
  return Status::OK();
}

struct Group {
  int64_t size;
  bool reduced;
};

template <ReduceKind kKind, typename T>
Status RunReduction(KernelContext& ctx, std::vector<Group> groups, int64_t count, Tensor* out) {
  const bool mean = kKind == ReduceKind::kMean;
  const T* input = ctx.input(0).data<T>();
  Tensor intermediate;  // the result of the previous pass, in double
  bool first = true;
  while (true) {
    int last = -1, reduced_groups = 0;
    for (int g = 0; g < static_cast<int>(groups.size()); ++g) {
      if (groups[g].reduced) {
        last = g;
        ++reduced_groups;
      }
    }
    int64_t outer = 1, inner = 1;
    for (int g = 0; g < last; ++g) outer *= groups[g].size;
    for (int g = last + 1; g < static_cast<int>(groups.size()); ++g) inner *= groups[g].size;
    const int64_t reduce_len = groups[last].size;
    const bool final_pass = reduced_groups == 1;
    const double divisor = final_pass && mean ? static_cast<double>(count) : 1.0;
    Tensor next;
    if (!final_pass) {
      FS_RETURN_IF_ERROR(ctx.AllocateTemp(DType::kFloat64, TensorShape{outer * inner}, &next));
    }
    Status s;
    if (first && final_pass) {
      s = ReducePass<kKind>(ctx, input, out->data<T>(), outer, reduce_len, inner, divisor);
    } else if (first) {
      s = ReducePass<kKind>(ctx, input, next.data<double>(), outer, reduce_len, inner, divisor);
    } else if (final_pass) {
      s = ReducePass<kKind>(ctx, intermediate.data<double>(), out->data<T>(), outer, reduce_len,
                            inner, divisor);
    } else {
      s = ReducePass<kKind>(ctx, intermediate.data<double>(), next.data<double>(), outer,
                            reduce_len, inner, divisor);
    }
    FS_RETURN_IF_ERROR(s);
    if (final_pass) return Status::OK();
    groups.erase(groups.begin() + last);
    intermediate = std::move(next);
    first = false;
  }
}

template <ReduceKind kKind>
Status Reduction(KernelContext& ctx) {
  const Tensor& input = ctx.input(0);
  std::vector<bool> reduced;
  FS_RETURN_IF_ERROR(ReadReductionAxes(ctx.input(1), input.rank(), &reduced));
  const bool keep_dims = ctx.attrs().GetOr<bool>("keep_dims", false);
  std::vector<int64_t> out_dims;
  int64_t count = 1;  // elements reduced into each output, for Mean
  std::vector<Group> groups;
  for (int i = 0; i < input.rank(); ++i) {
    const int64_t d = input.dim(i);
    if (reduced[i]) count *= d;
    if (!reduced[i]) {
      out_dims.push_back(d);
    } else if (keep_dims) {
      out_dims.push_back(1);
    }
    if (d == 1) continue;  // nobody moves along it
    if (!groups.empty() && groups.back().reduced == reduced[i]) {
      groups.back().size *= d;
    } else {
      groups.push_back({d, reduced[i]});
    }
  }
  const TensorShape out_shape(out_dims);
  bool any_reduced = false;
  for (const Group& g : groups) any_reduced |= g.reduced;
  if (!any_reduced) {
    // Only size-1 axes (or none) are reduced: the values are the input's.
    ctx.SetOutput(0, input.Reshaped(out_shape));
    return Status::OK();
  }
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, out_shape, &out));
  if (out->num_elements() == 0) return Status::OK();
  return DispatchDType<float, double>(input.dtype(), ctx.node().type().c_str(), [&]<typename T>() {
    return RunReduction<kKind, T>(ctx, groups, count, out);
  });
}

#define FS_GPU_REDUCTION(op, kind)                                      \
  FS_REGISTER_GPU_KERNEL(GpuKernel(op, Reduction<ReduceKind::kind>)     \
                             .Types({DType::kFloat32, DType::kFloat64}) \
                             .HostMemory("reduction_indices"))

FS_GPU_REDUCTION("Sum", kSum);
FS_GPU_REDUCTION("Mean", kMean);
FS_GPU_REDUCTION("Prod", kProd);
FS_GPU_REDUCTION("Max", kMax);
FS_GPU_REDUCTION("Min", kMin);

#undef FS_GPU_REDUCTION

}  // namespace
}  // namespace flowstone::cuda
