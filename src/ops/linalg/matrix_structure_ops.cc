// Ops that rearrange the entries of matrices without arithmetic: MatrixBandPart, MatrixDiag,
// MatrixDiagPart, MatrixSetDiag, Diag and DiagPart (tf.linalg.band_part, diag, diag_part,
// set_diag, tensor_diag, tensor_diag_part), and Cross. The rearranging kernels copy whole
// elements by size, so one instantiation serves every dtype.
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/elementwise.h"
#include "ops/linalg/linalg_util.h"

namespace flowstone {
namespace {

using linalg::MatrixBatch;

// Copies element `from` of src to element `to` of dst, both with elements of `size` bytes.
inline void CopyElement(const char* src, int64_t from, char* dst, int64_t to, size_t size) {
  std::memcpy(dst + to * size, src + from * size, size);
}

// --- MatrixBandPart ---------------------------------------------------------------------------

Status BandPartShape(InferenceContext& ctx) {
  FS_RETURN_IF_ERROR(linalg::CheckMatrixInput(ctx, 0, false));
  PartialShape scalar;
  FS_RETURN_IF_ERROR(ctx.WithRank(1, 0, &scalar));
  FS_RETURN_IF_ERROR(ctx.WithRank(2, 0, &scalar));
  ctx.set_output(0, ctx.input(0));
  return Status::OK();
}

// Keeps the entries (m, n) with m - n <= num_lower and n - m <= num_upper (a negative bound keeps
// the whole triangle) and zeroes the others.
Status BandPartKernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  MatrixBatch mb;
  FS_RETURN_IF_ERROR(linalg::ReadMatrixBatch(in, "MatrixBandPart", false, &mb));
  for (int i = 1; i <= 2; ++i) {
    if (ctx.input(i).num_elements() != 1) {
      return errors::InvalidArgument("MatrixBandPart: ", i == 1 ? "num_lower" : "num_upper",
                                     " must be a scalar, got shape ",
                                     ctx.input(i).shape().ToString());
    }
  }
  const int64_t num_lower = ctx.input(1).ElementAsInt64(0);
  const int64_t num_upper = ctx.input(2).ElementAsInt64(0);
  if (num_lower > mb.rows) {
    return errors::InvalidArgument(
        "num_lower must be negative or less or equal to number of rows (", mb.rows,
        ") got: ", num_lower);
  }
  if (num_upper > mb.cols) {
    return errors::InvalidArgument(
        "num_upper must be negative or less or equal to number of columns (", mb.cols,
        ") got: ", num_upper);
  }
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.ForwardOrAllocateOutput(0, 0, in.shape(), &out));
  const size_t size = DTypeSize(in.dtype());
  const char* src = static_cast<const char*>(in.raw_data());
  char* dst = static_cast<char*>(out->raw_data());
  ctx.ParallelFor(mb.batch * mb.rows, mb.cols, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t m = row % mb.rows;
      for (int64_t n = 0; n < mb.cols; ++n) {
        const int64_t at = row * mb.cols + n;
        const bool keep =
            (num_lower < 0 || m - n <= num_lower) && (num_upper < 0 || n - m <= num_upper);
        if (keep) {
          if (src != dst) CopyElement(src, at, dst, at, size);
        } else {
          std::memset(dst + at * size, 0, size);
        }
      }
    }
  });
  return Status::OK();
}

Status BandPartGrad(GradientContext& ctx) {
  ctx.SetInputGrad(0, ctx.Op("MatrixBandPart", {ctx.output_grad(0), ctx.input(1), ctx.input(2)}));
  return Status::OK();
}

// --- MatrixDiag, MatrixDiagPart, MatrixSetDiag ------------------------------------------------

Status MatrixDiagShape(InferenceContext& ctx) {
  const PartialShape& in = ctx.input(0);
  if (!in.known_rank()) {
    ctx.set_output(0, PartialShape::Unknown());
    return Status::OK();
  }
  if (in.rank() < 1) {
    return errors::InvalidArgument("Shape must be at least rank 1 but is rank 0 for '",
                                   ctx.node_name(), "' (op: 'MatrixDiag')");
  }
  std::vector<int64_t> dims = in.ToVector();
  dims.push_back(dims.back());
  ctx.set_output(0, PartialShape(dims));
  return Status::OK();
}

// [..., K] -> [..., K, K] with the input on the diagonal and zeros elsewhere.
Status MatrixDiagKernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  if (in.rank() < 1) {
    return errors::InvalidArgument("MatrixDiag: input must be at least 1-D, got shape ",
                                   in.shape().ToString());
  }
  const int64_t k = in.dim(in.rank() - 1);
  std::vector<int64_t> dims = in.shape().ToVector();
  dims.push_back(k);
  FS_RETURN_IF_ERROR(ValidateDims(dims));
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape(dims), &out));
  const size_t size = DTypeSize(in.dtype());
  const char* src = static_cast<const char*>(in.raw_data());
  char* dst = static_cast<char*>(out->raw_data());
  std::memset(dst, 0, out->bytes());
  const int64_t batch = k == 0 ? 0 : in.num_elements() / k;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < k; ++i) CopyElement(src, b * k + i, dst, (b * k + i) * k + i, size);
  }
  return Status::OK();
}

Status MatrixDiagPartShape(InferenceContext& ctx) {
  FS_RETURN_IF_ERROR(linalg::CheckMatrixInput(ctx, 0, false));
  const PartialShape& in = ctx.input(0);
  if (!in.known_rank()) {
    ctx.set_output(0, PartialShape::Unknown());
    return Status::OK();
  }
  std::vector<int64_t> dims = in.ToVector();
  const int64_t rows = dims[dims.size() - 2], cols = dims.back();
  dims.pop_back();
  dims.back() = (rows < 0 || cols < 0) ? PartialShape::kUnknownDim : std::min(rows, cols);
  ctx.set_output(0, PartialShape(dims));
  return Status::OK();
}

// [..., M, N] -> [..., min(M, N)], the main diagonals.
Status MatrixDiagPartKernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  MatrixBatch mb;
  FS_RETURN_IF_ERROR(linalg::ReadMatrixBatch(in, "MatrixDiagPart", false, &mb));
  const int64_t k = std::min(mb.rows, mb.cols);
  std::vector<int64_t> dims = in.shape().ToVector();
  dims.pop_back();
  dims.back() = k;
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape(dims), &out));
  const size_t size = DTypeSize(in.dtype());
  const char* src = static_cast<const char*>(in.raw_data());
  char* dst = static_cast<char*>(out->raw_data());
  for (int64_t b = 0; b < mb.batch; ++b) {
    for (int64_t i = 0; i < k; ++i) {
      CopyElement(src, b * mb.matrix_size() + i * mb.cols + i, dst, b * k + i, size);
    }
  }
  return Status::OK();
}

Status MatrixSetDiagShape(InferenceContext& ctx) {
  FS_RETURN_IF_ERROR(linalg::CheckMatrixInput(ctx, 0, false));
  ctx.set_output(0, ctx.input(0));
  return Status::OK();
}

// A copy of the input with its main diagonals replaced by `diagonal` [..., min(M, N)].
Status MatrixSetDiagKernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const Tensor& diagonal = ctx.input(1);
  MatrixBatch mb;
  FS_RETURN_IF_ERROR(linalg::ReadMatrixBatch(in, "MatrixSetDiag", false, &mb));
  const int64_t k = std::min(mb.rows, mb.cols);
  std::vector<int64_t> expected = in.shape().ToVector();
  expected.pop_back();
  expected.back() = k;
  if (diagonal.shape() != TensorShape(expected)) {
    return errors::InvalidArgument("MatrixSetDiag: diagonal must have shape ",
                                   TensorShape(expected).ToString(), " for input of shape ",
                                   in.shape().ToString(), ", but has shape ",
                                   diagonal.shape().ToString());
  }
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.ForwardOrAllocateOutput(0, 0, in.shape(), &out));
  if (out->raw_data() != in.raw_data()) std::memcpy(out->raw_data(), in.raw_data(), in.bytes());
  const size_t size = DTypeSize(in.dtype());
  const char* src = static_cast<const char*>(diagonal.raw_data());
  char* dst = static_cast<char*>(out->raw_data());
  for (int64_t b = 0; b < mb.batch; ++b) {
    for (int64_t i = 0; i < k; ++i) {
      CopyElement(src, b * k + i, dst, b * mb.matrix_size() + i * mb.cols + i, size);
    }
  }
  return Status::OK();
}

Status MatrixDiagGrad(GradientContext& ctx) {
  ctx.SetInputGrad(0, ctx.Op("MatrixDiagPart", {ctx.output_grad(0)}));
  return Status::OK();
}

Status MatrixDiagPartGrad(GradientContext& ctx) {
  const Endpoint zeros = ctx.Op("ZerosLike", {ctx.input(0)});
  ctx.SetInputGrad(0, ctx.Op("MatrixSetDiag", {zeros, ctx.output_grad(0)}));
  return Status::OK();
}

Status MatrixSetDiagGrad(GradientContext& ctx) {
  const Endpoint grad = ctx.output_grad(0);
  ctx.SetInputGrad(0, ctx.Op("MatrixSetDiag", {grad, ctx.Op("ZerosLike", {ctx.input(1)})}));
  ctx.SetInputGrad(1, ctx.Op("MatrixDiagPart", {grad}));
  return Status::OK();
}

// --- Diag, DiagPart (tf.linalg.tensor_diag, tensor_diag_part) ---------------------------------

Status DiagShape(InferenceContext& ctx) {
  const PartialShape& in = ctx.input(0);
  if (!in.known_rank()) {
    ctx.set_output(0, PartialShape::Unknown());
    return Status::OK();
  }
  std::vector<int64_t> dims = in.ToVector();
  dims.insert(dims.end(), dims.begin(), dims.end());
  ctx.set_output(0, PartialShape(dims));
  return Status::OK();
}

// Shape D -> D + D with out[i..., i...] = in[i...] and zeros elsewhere.
Status DiagKernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  if (in.rank() < 1) {
    return errors::InvalidArgument("Input must be at least rank 1, got 0");
  }
  std::vector<int64_t> dims = in.shape().ToVector();
  dims.insert(dims.end(), dims.begin(), dims.end());
  FS_RETURN_IF_ERROR(ValidateDims(dims));
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape(dims), &out));
  const size_t size = DTypeSize(in.dtype());
  char* dst = static_cast<char*>(out->raw_data());
  std::memset(dst, 0, out->bytes());
  const int64_t n = in.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    CopyElement(static_cast<const char*>(in.raw_data()), i, dst, i * n + i, size);
  }
  return Status::OK();
}

Status DiagPartShape(InferenceContext& ctx) {
  const PartialShape& in = ctx.input(0);
  if (!in.known_rank()) {
    ctx.set_output(0, PartialShape::Unknown());
    return Status::OK();
  }
  if (in.rank() % 2 != 0 || in.rank() == 0) {
    return errors::InvalidArgument("Input must have even rank and be at least rank 2, got rank ",
                                   in.rank(), " for '", ctx.node_name(), "' (op: 'DiagPart')");
  }
  const int half = in.rank() / 2;
  std::vector<int64_t> dims(half);
  for (int i = 0; i < half; ++i) {
    int64_t d;
    FS_RETURN_IF_ERROR(ctx.MergeDim(in.dim(i), in.dim(i + half), &d));
    dims[i] = d;
  }
  ctx.set_output(0, PartialShape(dims));
  return Status::OK();
}

Status DiagPartKernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const int rank = in.rank();
  if (rank % 2 != 0 || rank == 0) {
    return errors::InvalidArgument("The rank of the tensor should be even and positive, got shape ",
                                   in.shape().ToString());
  }
  const int half = rank / 2;
  std::vector<int64_t> dims(half);
  for (int i = 0; i < half; ++i) {
    if (in.dim(i) != in.dim(i + half)) {
      return errors::InvalidArgument("Invalid shape ", in.shape().ToString(), ": dimensions ", i,
                                     " and ", i + half, " do not match.");
    }
    dims[i] = in.dim(i);
  }
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape(dims), &out));
  const size_t size = DTypeSize(in.dtype());
  const int64_t n = out->num_elements();
  for (int64_t i = 0; i < n; ++i) {
    CopyElement(static_cast<const char*>(in.raw_data()), i * n + i,
                static_cast<char*>(out->raw_data()), i, size);
  }
  return Status::OK();
}

Status DiagGrad(GradientContext& ctx) {
  ctx.SetInputGrad(0, ctx.Op("DiagPart", {ctx.output_grad(0)}));
  return Status::OK();
}

Status DiagPartGrad(GradientContext& ctx) {
  ctx.SetInputGrad(0, ctx.Op("Diag", {ctx.output_grad(0)}));
  return Status::OK();
}

// --- Cross ------------------------------------------------------------------------------------

Status CrossShape(InferenceContext& ctx) {
  PartialShape merged;
  FS_RETURN_IF_ERROR(ctx.input(0).Merge(ctx.input(1), &merged));
  if (merged.known_rank()) {
    if (merged.rank() < 1) {
      return errors::InvalidArgument("Shape must be at least rank 1 but is rank 0 for '",
                                     ctx.node_name(), "' (op: 'Cross')");
    }
    const int64_t last = merged.dim(merged.rank() - 1);
    if (last >= 0 && last != 3) {
      return errors::InvalidArgument("Dimension must be 3 but is ", last, " for '", ctx.node_name(),
                                     "' (op: 'Cross')");
    }
  }
  ctx.set_output(0, merged);
  return Status::OK();
}

// a x b along the last dimension (of size 3).
Status CrossKernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (a.shape() != b.shape()) {
    return errors::InvalidArgument("Both inputs must be of same shape: ", a.shape().ToString(),
                                   " vs. ", b.shape().ToString());
  }
  if (a.rank() < 1 || a.dim(a.rank() - 1) != 3) {
    return errors::InvalidArgument("Trailing dimension must be 3, got shape ",
                                   a.shape().ToString());
  }
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, a.shape(), &out));
  return DispatchDType<float, double, int32_t, int64_t, uint8_t>(
      a.dtype(), "Cross", [&]<typename T>() -> Status {
        const T* x = a.data<T>();
        const T* y = b.data<T>();
        T* z = out->data<T>();
        for (int64_t i = 0; i < a.num_elements(); i += 3) {
          z[i] = WrapSub(WrapMul(x[i + 1], y[i + 2]), WrapMul(x[i + 2], y[i + 1]));
          z[i + 1] = WrapSub(WrapMul(x[i + 2], y[i]), WrapMul(x[i], y[i + 2]));
          z[i + 2] = WrapSub(WrapMul(x[i], y[i + 1]), WrapMul(x[i + 1], y[i]));
        }
        return Status::OK();
      });
}

// d(u x v) = du x v + u x dv, so u's gradient is v x g and v's is g x u.
Status CrossGrad(GradientContext& ctx) {
  const Endpoint grad = ctx.output_grad(0);
  ctx.SetInputGrad(0, ctx.Op("Cross", {ctx.input(1), grad}));
  ctx.SetInputGrad(1, ctx.Op("Cross", {grad, ctx.input(0)}));
  return Status::OK();
}

const std::vector<DType> kDiagTypes = {DType::kFloat16, DType::kBFloat16, DType::kFloat32,
                                       DType::kFloat64, DType::kInt32,    DType::kInt64};

FS_REGISTER_OP(OpBuilder("MatrixBandPart")
                   .Input("input", "T")
                   .Input("num_lower", "Tindex")
                   .Input("num_upper", "Tindex")
                   .Output("band", "T")
                   .TypeAttr("T", kAllTypes)
                   .TypeAttr("Tindex", {DType::kInt32, DType::kInt64}, DType::kInt64)
                   .Shape(BandPartShape)
                   .Kernel("CPU", BandPartKernel)
                   .Gradient(BandPartGrad)
                   .Doc("Keeps a band around the diagonal of each innermost matrix, zeroing the "
                        "rest; a negative bound keeps the whole lower or upper triangle."));
FS_REGISTER_OP(OpBuilder("MatrixDiag")
                   .Input("diagonal", "T")
                   .Output("output", "T")
                   .TypeAttr("T", kAllTypes)
                   .Shape(MatrixDiagShape)
                   .Kernel("CPU", MatrixDiagKernel)
                   .Gradient(MatrixDiagGrad)
                   .Doc("Square matrices [..., K, K] with the given diagonals [..., K]."));
FS_REGISTER_OP(OpBuilder("MatrixDiagPart")
                   .Input("input", "T")
                   .Output("diagonal", "T")
                   .TypeAttr("T", kAllTypes)
                   .Shape(MatrixDiagPartShape)
                   .Kernel("CPU", MatrixDiagPartKernel)
                   .Gradient(MatrixDiagPartGrad)
                   .Doc("The main diagonals [..., min(M, N)] of matrices [..., M, N]."));
FS_REGISTER_OP(OpBuilder("MatrixSetDiag")
                   .Input("input", "T")
                   .Input("diagonal", "T")
                   .Output("output", "T")
                   .TypeAttr("T", kAllTypes)
                   .Shape(MatrixSetDiagShape)
                   .Kernel("CPU", MatrixSetDiagKernel)
                   .Gradient(MatrixSetDiagGrad)
                   .Doc("The input matrices with their main diagonals replaced."));
FS_REGISTER_OP(OpBuilder("Diag")
                   .Input("diagonal", "T")
                   .Output("output", "T")
                   .TypeAttr("T", kDiagTypes)
                   .Shape(DiagShape)
                   .Kernel("CPU", DiagKernel)
                   .Gradient(DiagGrad)
                   .Doc("A tensor of shape D + D with the input (shape D) on its diagonal."));
FS_REGISTER_OP(OpBuilder("DiagPart")
                   .Input("input", "T")
                   .Output("diagonal", "T")
                   .TypeAttr("T", kDiagTypes)
                   .Shape(DiagPartShape)
                   .Kernel("CPU", DiagPartKernel)
                   .Gradient(DiagPartGrad)
                   .Doc("The diagonal (shape D) of a tensor of shape D + D."));
FS_REGISTER_OP(OpBuilder("Cross")
                   .Input("a", "T")
                   .Input("b", "T")
                   .Output("product", "T")
                   .TypeAttr("T", kNumericTypes)
                   .Shape(CrossShape)
                   .Kernel("CPU", CrossKernel)
                   .Gradient(CrossGrad)
                   .Doc("Pairwise cross products of 3-vectors along the last dimension."));

}  // namespace
}  // namespace flowstone
