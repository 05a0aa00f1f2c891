// GPU kernels for Softmax, LogSoftmax, SoftmaxCrossEntropyWithLogits and
// SparseSoftmaxCrossEntropyWithLogits (float32 and float64), following src/ops/nn_ops.cc and
// src/ops/loss_ops.cc: rows are shifted by their maximum before exponentiating and the
// exponentials are summed in double. One thread block handles one row at a time, so the sums
// are reduced in a tree rather than left to right: results agree with the CPU's to rounding.
//
// The sparse labels are a host-memory argument, so that an out-of-range label is reported with
// the CPU kernel's message instead of producing NaN on the device.
#include <algorithm>
#include <string>
#include <vector>

#include "cuda/cuda_kernel.h"
#include "flowstone/kernel.h"
#include "ops/xent_util.h"

namespace flowstone::cuda {
namespace {

constexpr int kThreads = 256;

int RowBlocks(int64_t rows) { return static_cast<int>(rows < 65535 ? rows : 65535); }

// Combines one value per thread across the block; every thread gets the result.
template <typename A, typename Op>
__device__ A BlockReduce(A value, A* scratch, Op op) {
  scratch[threadIdx.x] = value;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      scratch[threadIdx.x] = op(scratch[threadIdx.x], scratch[threadIdx.x + half]);
    }
    __syncthreads();
  }
  const A result = scratch[0];
  __syncthreads();  // scratch is reused by the next reduction
  return result;
}

struct MaxOp {
  template <typename A>
  __device__ A operator()(A a, A b) const {
    return a > b ? a : b;
  }
};
struct SumOp {
  template <typename A>
  __device__ A operator()(A a, A b) const {
    return a + b;
  }
};

template <typename T>
__device__ T RowMax(const T* row, int64_t depth, T* scratch) {
  T max = static_cast<T>(-INFINITY);
  for (int64_t j = threadIdx.x; j < depth; j += blockDim.x) max = row[j] > max ? row[j] : max;
  return BlockReduce(max, scratch, MaxOp());
}

template <typename T, bool kLog>
__global__ void SoftmaxKernel(const T* x, int64_t rows, int64_t depth, T* y) {
  __shared__ T max_scratch[kThreads];
  __shared__ double sum_scratch[kThreads];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* in = x + r * depth;
    T* out = y + r * depth;  // may alias `in`: each element is read before it is written
    const T max = RowMax(in, depth, max_scratch);
    double sum = 0;
    for (int64_t j = threadIdx.x; j < depth; j += blockDim.x) sum += exp(in[j] - max);
    sum = BlockReduce(sum, sum_scratch, SumOp());
    if (kLog) {
      const T log_sum = static_cast<T>(log(sum));
      for (int64_t j = threadIdx.x; j < depth; j += blockDim.x) out[j] = (in[j] - max) - log_sum;
    } else {
      const T scale = static_cast<T>(1.0 / sum);
      for (int64_t j = threadIdx.x; j < depth; j += blockDim.x) {
        out[j] = static_cast<T>(exp(in[j] - max)) * scale;
      }
    }
  }
}

// loss[r] and backprop[r, :] from logits and either dense label rows or class indices.
template <typename T>
__global__ void XentKernel(const T* logits, int64_t rows, int64_t classes, const T* dense_labels,
                           const int64_t* sparse_labels, T* loss, T* backprop) {
  __shared__ T max_scratch[kThreads];
  __shared__ double sum_scratch[kThreads];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* in = logits + r * classes;
    if (classes == 0) {  // an empty distribution: nothing to compare, so no loss
      if (threadIdx.x == 0) loss[r] = T(0);
      continue;
    }
    const T max = RowMax(in, classes, max_scratch);
    double sum = 0;
    for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) {
      sum += exp(static_cast<double>(in[c] - max));
    }
    const double log_sum = log(BlockReduce(sum, sum_scratch, SumOp()));
    double total = 0;
    for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) {
      const double log_p = static_cast<double>(in[c] - max) - log_sum;
      const double y = dense_labels != nullptr ? static_cast<double>(dense_labels[r * classes + c])
                                               : (c == sparse_labels[r] ? 1.0 : 0.0);
      total -= y * log_p;
      backprop[r * classes + c] = static_cast<T>(exp(log_p) - y);
    }
    total = BlockReduce(total, sum_scratch, SumOp());
    if (threadIdx.x == 0) loss[r] = static_cast<T>(total);
  }
}

// ---------------------------------------------------------------------------------------------
// Host side.

template <bool kLog>
Status SoftmaxGpu(KernelContext& ctx) {
  const Tensor& logits = ctx.input(0);
  if (logits.rank() < 1) {
    return errors::InvalidArgument(
        "logits must have at least one dimension (the classes), but has shape ",
        logits.shape().ToString());
  }
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.ForwardOrAllocateOutput(0, 0, logits.shape(), &out));
  if (logits.num_elements() == 0) return Status::OK();
  const int64_t depth = logits.dim(logits.rank() - 1);
  const int64_t rows = logits.num_elements() / depth;
  return DispatchDType<float, double>(
      logits.dtype(), ctx.node().type().c_str(), [&]<typename T>() -> Status {
        SoftmaxKernel<T, kLog><<<RowBlocks(rows), kThreads, 0, StreamOf(ctx)>>>(
            logits.data<T>(), rows, depth, out->data<T>());
        return LaunchCheck(kLog ? "LogSoftmax" : "Softmax");
      });
}

// Checks the host labels and copies them to the device as int64.
Status SparseLabelsToDevice(KernelContext& ctx, const Tensor& labels, int64_t classes,
                            Tensor* device_labels) {
  const int64_t batch = labels.num_elements();
  std::vector<int64_t> values(batch);
  for (int64_t b = 0; b < batch; ++b) {
    values[b] = labels.ElementAsInt64(b);
    if (values[b] < 0 || values[b] >= classes) {
      std::string shown;
      for (int64_t k = 0; k < std::min<int64_t>(batch, 16); ++k) {
        shown += StrCat(k ? " " : "", labels.ElementAsInt64(k));
      }
      return errors::InvalidArgument(
          "Received a label value of ", values[b], " which is outside the valid range of [0, ",
          classes, ").  Label values: ", shown, batch > 16 ? " ..." : "",
          ". Labels must be class indices in [0, num_classes); check the labels you feed or the "
          "number of units of the last layer.");
    }
  }
  FS_RETURN_IF_ERROR(ctx.AllocateTemp(DType::kInt64, TensorShape{batch}, device_labels));
  if (batch == 0) return Status::OK();
  // From pageable memory the copy has read `values` when it returns, so the vector may go.
  return CudaCheck(cudaMemcpyAsync(device_labels->raw_data(), values.data(),
                                   batch * sizeof(int64_t), cudaMemcpyHostToDevice, StreamOf(ctx)),
                   "cudaMemcpyAsync (labels to the GPU)");
}

Status XentGpu(KernelContext& ctx) {
  const Tensor& logits = ctx.input(0);
  const Tensor& labels = ctx.input(1);
  const bool sparse = ctx.node().type() == "SparseSoftmaxCrossEntropyWithLogits";
  FS_RETURN_IF_ERROR(CheckXentInputs(logits, labels, sparse));
  const int64_t batch = logits.dim(0);
  const int64_t classes = logits.dim(1);
  Tensor device_labels;
  if (sparse) FS_RETURN_IF_ERROR(SparseLabelsToDevice(ctx, labels, classes, &device_labels));
  Tensor* loss;
  Tensor* backprop;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{batch}, &loss));
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(1, TensorShape{batch, classes}, &backprop));
  if (batch == 0) return Status::OK();
  return DispatchDType<float, double>(
      logits.dtype(), ctx.node().type().c_str(), [&]<typename T>() -> Status {
        XentKernel<T><<<RowBlocks(batch), kThreads, 0, StreamOf(ctx)>>>(
            logits.data<T>(), batch, classes, sparse ? nullptr : labels.data<T>(),
            sparse ? device_labels.data<int64_t>() : nullptr, loss->data<T>(), backprop->data<T>());
        return LaunchCheck(ctx.node().type().c_str());
      });
}

const std::vector<DType> kGpuFloatTypes = {DType::kFloat32, DType::kFloat64};

FS_REGISTER_GPU_KERNEL(GpuKernel("Softmax", SoftmaxGpu<false>).Types(kGpuFloatTypes));
FS_REGISTER_GPU_KERNEL(GpuKernel("LogSoftmax", SoftmaxGpu<true>).Types(kGpuFloatTypes));
FS_REGISTER_GPU_KERNEL(GpuKernel("SoftmaxCrossEntropyWithLogits", XentGpu).Types(kGpuFloatTypes));
FS_REGISTER_GPU_KERNEL(GpuKernel("SparseSoftmaxCrossEntropyWithLogits", XentGpu)
                           .Types(kGpuFloatTypes)
                           .HostMemory("labels"));

}  // namespace
}  // namespace flowstone::cuda
