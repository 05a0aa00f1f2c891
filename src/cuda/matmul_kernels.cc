// Matrix products on the GPU through cuBLAS (float32 and float64): MatMul with transpose_a/b and
// BatchMatMulV2 with adj_x/adj_y and numpy-broadcast batch dimensions.
//
// cuBLAS is column-major. A row-major matrix is the column-major view of its transpose, so the
// row-major product C = op(A) op(B) is computed as the column-major C^T = op(B)^T op(A)^T: the
// operands swap places, each keeps its own transpose flag, and the leading dimensions are the
// row lengths of the stored matrices.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <initializer_list>
#include <type_traits>
#include <vector>

#include "cublas_api.h"
#include "cuda_kernel.h"
#include "ops/matmul_util.h"

namespace flowstone::cuda {
namespace {

// cuBLAS's strided batched calls are limited to 65535 matrices per call on some GPUs.
constexpr int64_t kMaxBatchPerCall = 65535;

Status CheckCublas(const GpuContext& gpu, const char* op) {
  if (gpu.cublas != nullptr && gpu.cublas_handle != nullptr) return Status::OK();
  return errors::FailedPrecondition(
      op,
      " runs on the GPU through cuBLAS, which is not available: libcublas.so.13 could not be "
      "loaded or initialized (see the GPU discovery log, or run `flowstone doctor`). Install "
      "cuBLAS for CUDA 13 (e.g. pip install nvidia-cublas), or pin the op to the CPU with "
      "tf.device('/cpu:0').");
}

Status CheckIntRange(const char* op, std::initializer_list<int64_t> sizes) {
  for (int64_t size : sizes) {
    if (size > INT_MAX) {
      return errors::Unimplemented(op, " on the GPU supports matrix dimensions up to ", INT_MAX,
                                   ", but got ", size, "; pin the op to the CPU");
    }
  }
  return Status::OK();
}

// `batches` products of row-major matrices: C_i = op(A_i) op(B_i), where A_i starts at
// a + i * stride_a (stride 0: one matrix shared by every product), and likewise B_i and C_i.
// m, n, k are the sizes of op(A) (m x k) and op(B) (k x n); lda, ldb the row lengths of the
// stored A and B.
template <typename T>
Status BatchedGemm(const GpuContext& gpu, bool trans_a, bool trans_b, int64_t m, int64_t n,
                   int64_t k, const T* a, int64_t lda, int64_t stride_a, const T* b, int64_t ldb,
                   int64_t stride_b, T* c, int64_t stride_c, int64_t batches) {
  const CublasApi& api = *gpu.cublas;
  const auto handle = static_cast<cublasHandle>(gpu.cublas_handle);
  const T one = 1, zero = 0;
  const int op_a = trans_a ? kCublasOpT : kCublasOpN;
  const int op_b = trans_b ? kCublasOpT : kCublasOpN;
  for (int64_t first = 0; first < batches; first += kMaxBatchPerCall) {
    const int count = static_cast<int>(std::min(kMaxBatchPerCall, batches - first));
    const T* a_first = a + first * stride_a;
    const T* b_first = b + first * stride_b;
    T* c_first = c + first * stride_c;
    cublasStatus status;
    if constexpr (std::is_same_v<T, float>) {
      status = count == 1 ? api.Sgemm(handle, op_b, op_a, n, m, k, &one, b_first, ldb, a_first, lda,
                                      &zero, c_first, n)
                          : api.SgemmStridedBatched(handle, op_b, op_a, n, m, k, &one, b_first, ldb,
                                                    stride_b, a_first, lda, stride_a, &zero,
                                                    c_first, n, stride_c, count);
    } else {
      status = count == 1 ? api.Dgemm(handle, op_b, op_a, n, m, k, &one, b_first, ldb, a_first, lda,
                                      &zero, c_first, n)
                          : api.DgemmStridedBatched(handle, op_b, op_a, n, m, k, &one, b_first, ldb,
                                                    stride_b, a_first, lda, stride_a, &zero,
                                                    c_first, n, stride_c, count);
    }
    FS_RETURN_IF_ERROR(CublasCheck(api, status, "cuBLAS gemm"));
  }
  return Status::OK();
}

// An empty inner dimension makes every product zero; cuBLAS is not asked to do that.
Status ZeroOutput(KernelContext& ctx, Tensor* out) {
  return CudaCheck(cudaMemsetAsync(out->raw_data(), 0, out->bytes(), StreamOf(ctx)),
                   "cudaMemsetAsync (empty matrix product)");
}

Status MatMul(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  const bool transpose_a = ctx.attrs().GetOr<bool>("transpose_a", false);
  const bool transpose_b = ctx.attrs().GetOr<bool>("transpose_b", false);
  if (a.rank() != 2 || b.rank() != 2) {
    return errors::InvalidArgument("MatMul multiplies matrices (rank 2), but got shapes ",
                                   a.shape().ToString(), " and ", b.shape().ToString(),
                                   "; use tf.matmul, which handles batches of matrices");
  }
  const MatrixDims op_a = Op(a.dim(0), a.dim(1), transpose_a);
  const MatrixDims op_b = Op(b.dim(0), b.dim(1), transpose_b);
  if (op_a.cols != op_b.rows) {
    return errors::InvalidArgument(
        "Matrix size-incompatible: In[0]: ", a.shape().ToString(),
        ", In[1]: ", b.shape().ToString(), " (transpose_a=", transpose_a,
        ", transpose_b=", transpose_b,
        "): the columns of the first operand must equal the rows of the second");
  }
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{op_a.rows, op_b.cols}, &out));
  if (out->num_elements() == 0) return Status::OK();
  if (op_a.cols == 0) return ZeroOutput(ctx, out);
  const GpuContext& gpu = ContextOf(ctx);
  FS_RETURN_IF_ERROR(CheckCublas(gpu, "MatMul"));
  FS_RETURN_IF_ERROR(CheckIntRange("MatMul", {a.dim(0), a.dim(1), b.dim(0), b.dim(1)}));
  return DispatchDType<float, double>(a.dtype(), "MatMul", [&]<typename T>() {
    return BatchedGemm<T>(gpu, transpose_a, transpose_b, op_a.rows, op_b.cols, op_a.cols,
                          a.data<T>(), a.dim(1), 0, b.data<T>(), b.dim(1), 0, out->data<T>(), 0, 1);
  });
}

// The matrix stride (in matrices) when `index` is b -> b or b -> 0 for every batch b; -1
// otherwise (a partial broadcast, which needs one product per batch).
int64_t UniformStride(const std::vector<int64_t>& index) {
  bool all_zero = true, identity = true;
  for (size_t b = 0; b < index.size(); ++b) {
    all_zero &= index[b] == 0;
    identity &= index[b] == static_cast<int64_t>(b);
  }
  if (identity) return 1;
  if (all_zero) return 0;
  return -1;
}

Status BatchMatMul(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& y = ctx.input(1);
  const bool adj_x = ctx.attrs().GetOr<bool>("adj_x", false);
  const bool adj_y = ctx.attrs().GetOr<bool>("adj_y", false);
  BatchMatMulPlan matmul;
  FS_RETURN_IF_ERROR(PlanBatchMatMul(x.shape(), y.shape(), adj_x, adj_y, &matmul));
  const BatchPlan& plan = matmul.batches;
  const int rx = x.rank(), ry = y.rank();
  const int64_t m = matmul.m, n = matmul.n, k = matmul.k;
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, matmul.out_shape, &out));
  if (out->num_elements() == 0) return Status::OK();
  if (k == 0) return ZeroOutput(ctx, out);
  const GpuContext& gpu = ContextOf(ctx);
  FS_RETURN_IF_ERROR(CheckCublas(gpu, "BatchMatMulV2"));
  FS_RETURN_IF_ERROR(
      CheckIntRange("BatchMatMulV2", {x.dim(rx - 2), x.dim(rx - 1), y.dim(ry - 2), y.dim(ry - 1)}));
  const int64_t x_size = x.dim(rx - 2) * x.dim(rx - 1);
  const int64_t y_size = y.dim(ry - 2) * y.dim(ry - 1);
  const int64_t batches = static_cast<int64_t>(plan.x_index.size());
  const int64_t x_stride = UniformStride(plan.x_index);
  const int64_t y_stride = UniformStride(plan.y_index);
  return DispatchDType<float, double>(x.dtype(), "BatchMatMulV2", [&]<typename T>() -> Status {
    const T* xp = x.data<T>();
    const T* yp = y.data<T>();
    T* outp = out->data<T>();
    if (x_stride >= 0 && y_stride >= 0) {
      return BatchedGemm<T>(gpu, adj_x, adj_y, m, n, k, xp, x.dim(rx - 1), x_stride * x_size, yp,
                            y.dim(ry - 1), y_stride * y_size, outp, m * n, batches);
    }
    for (int64_t b = 0; b < batches; ++b) {
      FS_RETURN_IF_ERROR(BatchedGemm<T>(gpu, adj_x, adj_y, m, n, k, xp + plan.x_index[b] * x_size,
                                        x.dim(rx - 1), 0, yp + plan.y_index[b] * y_size,
                                        y.dim(ry - 1), 0, outp + b * m * n, 0, 1));
    }
    return Status::OK();
  });
}

const std::vector<DType> kGpuFloatTypes = {DType::kFloat32, DType::kFloat64};
FS_REGISTER_GPU_KERNEL(GpuKernel("MatMul", MatMul).Types(kGpuFloatTypes).Needs("cuBLAS"));
FS_REGISTER_GPU_KERNEL(
    GpuKernel("BatchMatMulV2", BatchMatMul).Types(kGpuFloatTypes).Needs("cuBLAS"));

}  // namespace
}  // namespace flowstone::cuda
