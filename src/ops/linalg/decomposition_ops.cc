// Factorizations and solves of batches of matrices through LAPACK (lapack.h): MatrixInverse,
// MatrixDeterminant, LogMatrixDeterminant, Cholesky, MatrixSolve, MatrixTriangularSolve, Qr, Svd
// and SelfAdjointEigV2, for float32 and float64, with TensorFlow's gradients (linalg_grad.py's
// formulas, written as graph ops).
//
// Inputs are row-major; a row-major buffer read as column-major is the transpose. Kernels either
// use that directly (the inverse of A^T is the transpose of A's inverse, a symmetric matrix's
// lower triangle is its transpose's upper one) or copy to column-major scratch.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <vector>

#include "flowstone/gradients.h"
#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/linalg/lapack.h"
#include "ops/linalg/linalg_util.h"

namespace flowstone {
namespace {

using linalg::MatrixBatch;

// Runs fn(b) for each matrix b of a batch on the intra-op threads; the first failure wins.
template <typename Fn>
Status ForEachMatrix(KernelContext& ctx, int64_t batch, int64_t cost_per_matrix, Fn&& fn) {
  lapack::UseCallingThreadOnly();
  std::mutex mu;
  Status first_error;
  ctx.ParallelFor(batch, cost_per_matrix, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      Status s = fn(b);
      if (!s.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        if (first_error.ok()) first_error = std::move(s);
        return;
      }
    }
  });
  return first_error;
}

// Rough cost of an n x n factorization, for splitting a batch across threads.
int64_t CubicCost(int64_t n) { return std::max<int64_t>(1, n * n * n); }

// Output shape: the input's batch dimensions followed by `tail`.
TensorShape BatchShapeWith(const TensorShape& in, std::initializer_list<int64_t> tail) {
  std::vector<int64_t> dims = in.ToVector();
  dims.resize(dims.size() - 2);
  dims.insert(dims.end(), tail.begin(), tail.end());
  return TensorShape(dims);
}

template <typename Body>
Status DispatchFloat(const Tensor& t, const char* op, Body&& body) {
  return DispatchDType<float, double>(t.dtype(), op, std::forward<Body>(body));
}

// A gradient TensorFlow does not define either: NotImplementedError in Python, as TensorFlow's.
template <typename... Args>
Status GradientNotImplemented(const Args&... args) {
  Status s = errors::Unimplemented(args...);
  s.SetPayload("py_type", "NotImplementedError");
  return s;
}

// --- MatrixInverse ----------------------------------------------------------------------------

Status MatrixInverseKernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  MatrixBatch mb;
  FS_RETURN_IF_ERROR(linalg::ReadMatrixBatch(in, "MatrixInverse", true, &mb));
  const bool adjoint = ctx.attrs().GetOr<bool>("adjoint", false);
  lapack_int n;
  FS_RETURN_IF_ERROR(lapack::ToLapackInt(mb.rows, "MatrixInverse", &n));
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, in.shape(), &out));
  if (n == 0) return Status::OK();
  return DispatchFloat(in, "MatrixInverse", [&]<typename T>() {
    return ForEachMatrix(ctx, mb.batch, CubicCost(n), [&](int64_t b) -> Status {
      const T* a = in.data<T>() + b * mb.matrix_size();
      T* inv = out->data<T>() + b * mb.matrix_size();
      // Row-major A is column-major A^T, whose inverse read back row-major is A's inverse; for
      // the adjoint's inverse transpose first.
      if (adjoint) {
        lapack::FromColMajor(a, n, n, inv);
      } else {
        std::memcpy(inv, a, sizeof(T) * mb.matrix_size());
      }
      std::vector<lapack_int> ipiv(n);
      lapack_int info = 0;
      lapack::Getrf(n, n, inv, n, ipiv.data(), &info);
      if (info > 0) return errors::InvalidArgument("Input is not invertible.");
      T size_query;
      lapack::Getri(n, inv, n, ipiv.data(), &size_query, -1, &info);
      std::vector<T> work(lapack::QueriedSize(size_query));
      lapack::Getri(n, inv, n, ipiv.data(), work.data(), static_cast<lapack_int>(work.size()),
                    &info);
      if (info > 0) return errors::InvalidArgument("Input is not invertible.");
      return Status::OK();
    });
  });
}

// d(A^-1) = -A^-1 dA A^-1.
Status MatrixInverseGrad(GradientContext& ctx) {
  const bool adjoint = ctx.attrs().GetOr<bool>("adjoint", false);
  const Endpoint ainv = ctx.output(0);
  const Endpoint inner = linalg::MatMul(ctx, ctx.output_grad(0), ainv, adjoint, !adjoint);
  ctx.SetInputGrad(0, ctx.Op("Neg", {linalg::MatMul(ctx, ainv, inner, !adjoint, false)}));
  return Status::OK();
}

// --- MatrixDeterminant, LogMatrixDeterminant --------------------------------------------------

// The sign (-1, 0 or 1) and log|det| of an LU-factored matrix with pivots `ipiv`.
template <typename T>
void SignAndLogAbsDet(const T* lu, const lapack_int* ipiv, lapack_int n, T* sign, T* log_abs) {
  T s = 1;
  T sum = 0;
  for (lapack_int i = 0; i < n; ++i) {
    const T u = lu[i * n + i];
    if (ipiv[i] != i + 1) s = -s;
    if (u < 0) s = -s;
    if (u == 0) s = 0;
    sum += std::log(std::abs(u));
  }
  *sign = s;
  *log_abs = sum;
}

// Factors matrix b of `in` and calls done(sign, log_abs_det). A singular matrix has sign 0 and
// log|det| -inf.
template <typename T, typename Done>
Status FactorForDeterminant(const Tensor& in, const MatrixBatch& mb, int64_t b, Done&& done) {
  const lapack_int n = static_cast<lapack_int>(mb.rows);
  std::vector<T> lu(in.data<T>() + b * mb.matrix_size(), in.data<T>() + (b + 1) * mb.matrix_size());
  std::vector<lapack_int> ipiv(std::max<lapack_int>(n, 1));
  lapack_int info = 0;
  if (n > 0) lapack::Getrf(n, n, lu.data(), n, ipiv.data(), &info);
  T sign, log_abs;
  SignAndLogAbsDet(lu.data(), ipiv.data(), n, &sign, &log_abs);
  done(sign, log_abs, lu.data(), n);
  return Status::OK();
}

Status MatrixDeterminantKernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  MatrixBatch mb;
  FS_RETURN_IF_ERROR(linalg::ReadMatrixBatch(in, "MatrixDeterminant", true, &mb));
  lapack_int n;
  FS_RETURN_IF_ERROR(lapack::ToLapackInt(mb.rows, "MatrixDeterminant", &n));
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, BatchShapeWith(in.shape(), {}), &out));
  return DispatchFloat(in, "MatrixDeterminant", [&]<typename T>() {
    return ForEachMatrix(ctx, mb.batch, CubicCost(n), [&](int64_t b) {
      // The product of U's diagonal (not exp(log|det|)), so that det is exact where it can be.
      return FactorForDeterminant<T>(in, mb, b, [&](T sign, T, const T* lu, lapack_int size) {
        T det = sign == 0 ? T(0) : T(1);
        for (lapack_int i = 0; i < size && sign != 0; ++i) det *= std::abs(lu[i * size + i]);
        out->data<T>()[b] = sign * det;
      });
    });
  });
}

Status LogMatrixDeterminantKernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  MatrixBatch mb;
  FS_RETURN_IF_ERROR(linalg::ReadMatrixBatch(in, "LogMatrixDeterminant", true, &mb));
  lapack_int n;
  FS_RETURN_IF_ERROR(lapack::ToLapackInt(mb.rows, "LogMatrixDeterminant", &n));
  Tensor *sign_out, *log_out;
  const TensorShape batch_shape = BatchShapeWith(in.shape(), {});
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, batch_shape, &sign_out));
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(1, batch_shape, &log_out));
  return DispatchFloat(in, "LogMatrixDeterminant", [&]<typename T>() {
    return ForEachMatrix(ctx, mb.batch, CubicCost(n), [&](int64_t b) {
      return FactorForDeterminant<T>(in, mb, b, [&](T sign, T log_abs, const T*, lapack_int) {
        sign_out->data<T>()[b] = sign;
        log_out->data<T>()[b] = log_abs;
      });
    });
  });
}

// x[..., None, None] * the inverse of A's adjoint: d det(A) = det(A) tr(A^-1 dA), and
// d log|det(A)| = tr(A^-1 dA).
Endpoint ScaledAdjointInverse(GradientContext& ctx, Endpoint scale) {
  AttrMap adjoint;
  adjoint.Set("adjoint", true);
  const Endpoint a_adj_inv = ctx.Op("MatrixInverse", {ctx.input(0)}, adjoint);
  const Endpoint multipliers = linalg::ExpandDims(ctx, linalg::ExpandDims(ctx, scale, -1), -1);
  return ctx.Op("Mul", {multipliers, a_adj_inv});
}

Status MatrixDeterminantGrad(GradientContext& ctx) {
  const Endpoint grad_times_det = ctx.Op("Mul", {ctx.output_grad(0), ctx.output(0)});
  ctx.SetInputGrad(0, ScaledAdjointInverse(ctx, grad_times_det));
  return Status::OK();
}

// The sign is piecewise constant: only log|det| contributes.
Status LogMatrixDeterminantGrad(GradientContext& ctx) {
  ctx.SetInputGrad(0, ScaledAdjointInverse(ctx, ctx.output_grad(1)));
  return Status::OK();
}

// --- Cholesky ---------------------------------------------------------------------------------

// Reads A's lower triangle, as TensorFlow does: that is the upper triangle of the column-major
// view, which LAPACK factors as U^T U; U read back row-major is L.
Status CholeskyKernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  MatrixBatch mb;
  FS_RETURN_IF_ERROR(linalg::ReadMatrixBatch(in, "Cholesky", true, &mb));
  lapack_int n;
  FS_RETURN_IF_ERROR(lapack::ToLapackInt(mb.rows, "Cholesky", &n));
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, in.shape(), &out));
  if (n == 0) return Status::OK();
  return DispatchFloat(in, "Cholesky", [&]<typename T>() {
    return ForEachMatrix(ctx, mb.batch, CubicCost(n), [&](int64_t b) -> Status {
      T* l = out->data<T>() + b * mb.matrix_size();
      std::memcpy(l, in.data<T>() + b * mb.matrix_size(), sizeof(T) * mb.matrix_size());
      lapack_int info = 0;
      lapack::Potrf('U', n, l, n, &info);
      if (info != 0) {
        return errors::InvalidArgument(
            "Cholesky decomposition was not successful. The input might not be valid. (The "
            "leading minor of order ",
            info, " is not positive definite.)");
      }
      for (lapack_int r = 0; r < n; ++r) {
        for (lapack_int c = r + 1; c < n; ++c) l[r * n + c] = 0;
      }
      return Status::OK();
    });
  });
}

// TensorFlow's formula (Murray 2016, "Differentiation of the Cholesky decomposition"): with
// L^-1 from a triangular solve against the identity and Phi taking the lower triangle with half
// the diagonal, dA = sym(L^-H Phi(L^H dL) L^-1).
Status CholeskyGrad(GradientContext& ctx) {
  const Endpoint l = ctx.output(0);
  const Endpoint grad = ctx.output_grad(0);
  const Endpoint diag_part = ctx.Op("MatrixDiagPart", {l});
  const Endpoint eye = ctx.Op("MatrixDiag", {ctx.Op("OnesLike", {diag_part})});
  AttrMap lower;
  lower.Set("lower", true);
  lower.Set("adjoint", false);
  const Endpoint l_inverse = ctx.Op("MatrixTriangularSolve", {l, eye}, lower);
  Endpoint middle = linalg::MatMul(ctx, l, grad, true, false);
  const Endpoint half = ctx.ScalarLike(grad, 0.5);
  middle =
      ctx.Op("MatrixSetDiag", {middle, ctx.Op("Mul", {half, ctx.Op("MatrixDiagPart", {middle})})});
  middle = linalg::BandPart(ctx, middle, -1, 0);
  Endpoint grad_a =
      linalg::MatMul(ctx, linalg::MatMul(ctx, l_inverse, middle, true, false), l_inverse);
  grad_a = ctx.Op("AddV2", {grad_a, linalg::Adjoint(ctx, grad_a)});
  ctx.SetInputGrad(0, ctx.Op("Mul", {grad_a, half}));
  return Status::OK();
}

// --- MatrixSolve, MatrixTriangularSolve -------------------------------------------------------

// matrix [..., M, M] and rhs [..., M, K] -> [..., M, K].
Status SolveShape(InferenceContext& ctx) {
  FS_RETURN_IF_ERROR(linalg::CheckMatrixInput(ctx, 0, true));
  FS_RETURN_IF_ERROR(linalg::CheckMatrixInput(ctx, 1, false));
  const PartialShape& matrix = ctx.input(0);
  const PartialShape& rhs = ctx.input(1);
  if (!matrix.known_rank() || !rhs.known_rank()) {
    ctx.set_output(0, rhs.known_rank() ? PartialShape::UnknownOfRank(rhs.rank()) : rhs);
    return Status::OK();
  }
  if (matrix.rank() != rhs.rank()) {
    return errors::InvalidArgument("Shape must be rank ", matrix.rank(), " but is rank ",
                                   rhs.rank(), " for '", ctx.node_name(), "' (op: '", ctx.op_type(),
                                   "'): matrix and rhs need the same batch shape");
  }
  std::vector<int64_t> dims = rhs.ToVector();
  for (int i = 0; i < matrix.rank() - 1; ++i) {
    int64_t d;
    FS_RETURN_IF_ERROR(ctx.MergeDim(matrix.dim(i), rhs.dim(i), &d));
    dims[i] = d;
  }
  ctx.set_output(0, PartialShape(dims));
  return Status::OK();
}

// Checks matrix [..., M, M] against rhs [..., M, K] at run time.
Status ReadSolveOperands(const Tensor& matrix, const Tensor& rhs, const char* op, MatrixBatch* a,
                         MatrixBatch* b) {
  FS_RETURN_IF_ERROR(linalg::ReadMatrixBatch(matrix, op, true, a));
  FS_RETURN_IF_ERROR(linalg::ReadMatrixBatch(rhs, op, false, b));
  bool same_batch = matrix.rank() == rhs.rank() && a->rows == b->rows;
  for (int i = 0; same_batch && i < matrix.rank() - 2; ++i) {
    same_batch = matrix.dim(i) == rhs.dim(i);
  }
  if (!same_batch) {
    return errors::InvalidArgument(op, ": matrix of shape ", matrix.shape().ToString(),
                                   " and rhs of shape ", rhs.shape().ToString(),
                                   " are incompatible: expected rhs of shape [..., ", a->rows,
                                   ", K] with the matrix's batch dimensions");
  }
  return Status::OK();
}

Status MatrixSolveKernel(KernelContext& ctx) {
  const Tensor& matrix = ctx.input(0);
  const Tensor& rhs = ctx.input(1);
  MatrixBatch a, b;
  FS_RETURN_IF_ERROR(ReadSolveOperands(matrix, rhs, "MatrixSolve", &a, &b));
  const bool adjoint = ctx.attrs().GetOr<bool>("adjoint", false);
  lapack_int n, k;
  FS_RETURN_IF_ERROR(lapack::ToLapackInt(a.rows, "MatrixSolve", &n));
  FS_RETURN_IF_ERROR(lapack::ToLapackInt(b.cols, "MatrixSolve", &k));
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, rhs.shape(), &out));
  if (n == 0 || k == 0) return Status::OK();
  return DispatchFloat(matrix, "MatrixSolve", [&]<typename T>() {
    return ForEachMatrix(ctx, a.batch, CubicCost(n), [&](int64_t i) -> Status {
      // The row-major matrix is column-major A^T: solving with its transpose solves A X = B.
      std::vector<T> lu(matrix.data<T>() + i * a.matrix_size(),
                        matrix.data<T>() + (i + 1) * a.matrix_size());
      std::vector<lapack_int> ipiv(n);
      lapack_int info = 0;
      lapack::Getrf(n, n, lu.data(), n, ipiv.data(), &info);
      if (info > 0) return errors::InvalidArgument("Input matrix is not invertible.");
      std::vector<T> x(b.matrix_size());
      lapack::ToColMajor(rhs.data<T>() + i * b.matrix_size(), n, k, x.data());
      lapack::Getrs(adjoint ? 'N' : 'T', n, k, lu.data(), n, ipiv.data(), x.data(), n, &info);
      lapack::FromColMajor(x.data(), n, k, out->data<T>() + i * b.matrix_size());
      return Status::OK();
    });
  });
}

Status MatrixTriangularSolveKernel(KernelContext& ctx) {
  const Tensor& matrix = ctx.input(0);
  const Tensor& rhs = ctx.input(1);
  MatrixBatch a, b;
  FS_RETURN_IF_ERROR(ReadSolveOperands(matrix, rhs, "MatrixTriangularSolve", &a, &b));
  const bool lower = ctx.attrs().GetOr<bool>("lower", true);
  const bool adjoint = ctx.attrs().GetOr<bool>("adjoint", false);
  lapack_int n, k;
  FS_RETURN_IF_ERROR(lapack::ToLapackInt(a.rows, "MatrixTriangularSolve", &n));
  FS_RETURN_IF_ERROR(lapack::ToLapackInt(b.cols, "MatrixTriangularSolve", &k));
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, rhs.shape(), &out));
  if (n == 0 || k == 0) return Status::OK();
  // The column-major view of A is A^T, whose upper triangle is A's lower one.
  const CBLAS_UPLO uplo = lower ? CblasUpper : CblasLower;
  const CBLAS_TRANSPOSE trans = adjoint ? CblasNoTrans : CblasTrans;
  return DispatchFloat(matrix, "MatrixTriangularSolve", [&]<typename T>() {
    return ForEachMatrix(ctx, a.batch, n * n * k, [&](int64_t i) -> Status {
      std::vector<T> x(b.matrix_size());
      lapack::ToColMajor(rhs.data<T>() + i * b.matrix_size(), n, k, x.data());
      lapack::Trsm(uplo, trans, n, k, matrix.data<T>() + i * a.matrix_size(), x.data());
      lapack::FromColMajor(x.data(), n, k, out->data<T>() + i * b.matrix_size());
      return Status::OK();
    });
  });
}

// For A X = B: dB = solve(op(A)^H, G) and dA = -dB X^H (or -X dB^H for the adjoint).
Endpoint SolveMatrixGrad(GradientContext& ctx, Endpoint grad_b, bool adjoint) {
  const Endpoint c = ctx.output(0);
  return ctx.Op("Neg", {adjoint ? linalg::MatMul(ctx, c, grad_b, false, true)
                                : linalg::MatMul(ctx, grad_b, c, false, true)});
}

Status MatrixSolveGrad(GradientContext& ctx) {
  const bool adjoint = ctx.attrs().GetOr<bool>("adjoint", false);
  AttrMap attrs;
  attrs.Set("adjoint", !adjoint);
  const Endpoint grad_b = ctx.Op("MatrixSolve", {ctx.input(0), ctx.output_grad(0)}, attrs);
  ctx.SetInputGrad(0, SolveMatrixGrad(ctx, grad_b, adjoint));
  ctx.SetInputGrad(1, grad_b);
  return Status::OK();
}

// As MatrixSolve's, with the matrix's gradient kept to the triangle the op reads.
Status MatrixTriangularSolveGrad(GradientContext& ctx) {
  const bool adjoint = ctx.attrs().GetOr<bool>("adjoint", false);
  const bool lower = ctx.attrs().GetOr<bool>("lower", true);
  AttrMap attrs;
  attrs.Set("adjoint", !adjoint);
  attrs.Set("lower", lower);
  const Endpoint grad_b =
      ctx.Op("MatrixTriangularSolve", {ctx.input(0), ctx.output_grad(0)}, attrs);
  const Endpoint grad_a = SolveMatrixGrad(ctx, grad_b, adjoint);
  ctx.SetInputGrad(
      0, lower ? linalg::BandPart(ctx, grad_a, -1, 0) : linalg::BandPart(ctx, grad_a, 0, -1));
  ctx.SetInputGrad(1, grad_b);
  return Status::OK();
}

// --- Qr ---------------------------------------------------------------------------------------

// input [..., M, N] -> q [..., M, P], r [..., P, N] with P = min(M, N), or P = M for full
// matrices.
Status QrShape(InferenceContext& ctx) {
  FS_RETURN_IF_ERROR(linalg::CheckMatrixInput(ctx, 0, false));
  const PartialShape& in = ctx.input(0);
  if (!in.known_rank()) {
    ctx.set_output(0, PartialShape::Unknown());
    ctx.set_output(1, PartialShape::Unknown());
    return Status::OK();
  }
  const bool full = ctx.attrs().GetOr<bool>("full_matrices", false);
  std::vector<int64_t> q = in.ToVector(), r = in.ToVector();
  const int64_t m = q[q.size() - 2], n = q.back();
  const int64_t p = full ? m : (m < 0 || n < 0 ? PartialShape::kUnknownDim : std::min(m, n));
  q.back() = p;
  r[r.size() - 2] = p;
  ctx.set_output(0, PartialShape(q));
  ctx.set_output(1, PartialShape(r));
  return Status::OK();
}

Status QrKernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  MatrixBatch mb;
  FS_RETURN_IF_ERROR(linalg::ReadMatrixBatch(in, "Qr", false, &mb));
  const bool full = ctx.attrs().GetOr<bool>("full_matrices", false);
  lapack_int m, n;
  FS_RETURN_IF_ERROR(lapack::ToLapackInt(mb.rows, "Qr", &m));
  FS_RETURN_IF_ERROR(lapack::ToLapackInt(mb.cols, "Qr", &n));
  const lapack_int k = std::min(m, n);
  const lapack_int p = full ? m : k;
  Tensor *q_out, *r_out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, BatchShapeWith(in.shape(), {m, p}), &q_out));
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(1, BatchShapeWith(in.shape(), {p, n}), &r_out));
  return DispatchFloat(in, "Qr", [&]<typename T>() {
    return ForEachMatrix(ctx, mb.batch, CubicCost(std::max(m, n)), [&](int64_t b) -> Status {
      T* q = q_out->data<T>() + b * m * p;
      T* r = r_out->data<T>() + b * p * n;
      std::fill(r, r + p * n, T(0));
      if (k == 0) {  // no reflectors: Q is the identity (or empty)
        std::fill(q, q + m * p, T(0));
        for (lapack_int i = 0; i < std::min(m, p); ++i) q[i * p + i] = 1;
        return Status::OK();
      }
      // Column-major A in the first N columns of an M x max(N, P) buffer, which then holds Q.
      std::vector<T> a(static_cast<size_t>(m) * std::max(n, p));
      lapack::ToColMajor(in.data<T>() + b * mb.matrix_size(), m, n, a.data());
      std::vector<T> tau(k);
      lapack_int info = 0;
      T size_query;
      lapack::Geqrf(m, n, a.data(), m, tau.data(), &size_query, -1, &info);
      std::vector<T> work(lapack::QueriedSize(size_query));
      lapack::Geqrf(m, n, a.data(), m, tau.data(), work.data(),
                    static_cast<lapack_int>(work.size()), &info);
      for (lapack_int i = 0; i < p; ++i) {
        for (lapack_int j = i; j < n; ++j) r[i * n + j] = a[i + static_cast<size_t>(j) * m];
      }
      lapack::Orgqr(m, p, k, a.data(), m, tau.data(), &size_query, -1, &info);
      work.resize(std::max<size_t>(work.size(), lapack::QueriedSize(size_query)));
      lapack::Orgqr(m, p, k, a.data(), m, tau.data(), work.data(),
                    static_cast<lapack_int>(work.size()), &info);
      lapack::FromColMajor(a.data(), m, p, q);
      return Status::OK();
    });
  });
}

// x R^-H solved as (R^-1 x^H)^H: the triangular solve TensorFlow's QR gradient uses.
Endpoint SolveWithRAdjoint(GradientContext& ctx, Endpoint x, Endpoint r) {
  AttrMap upper;
  upper.Set("lower", false);
  upper.Set("adjoint", false);
  return linalg::Adjoint(ctx, ctx.Op("MatrixTriangularSolve", {r, linalg::Adjoint(ctx, x)}, upper));
}

// TensorFlow's gradient for square and tall inputs with the reduced factorization.
Endpoint QrGradSquareOrTall(GradientContext& ctx, Endpoint q, Endpoint r, Endpoint dq,
                            Endpoint dr) {
  const Endpoint qdq = linalg::MatMul(ctx, q, dq, true, false);
  const Endpoint qdq_skew = ctx.Op("Sub", {qdq, linalg::Adjoint(ctx, qdq)});
  const Endpoint rdr = linalg::MatMul(ctx, r, dr, false, true);
  const Endpoint rdr_skew = ctx.Op("Sub", {rdr, linalg::Adjoint(ctx, rdr)});
  const Endpoint tril = linalg::BandPart(ctx, ctx.Op("AddV2", {qdq_skew, rdr_skew}), -1, 0);
  const Endpoint grad_a =
      linalg::MatMul(ctx, q, ctx.Op("AddV2", {dr, SolveWithRAdjoint(ctx, tril, r)}));
  const Endpoint grad_b =
      SolveWithRAdjoint(ctx, ctx.Op("Sub", {dq, linalg::MatMul(ctx, q, qdq)}), r);
  return ctx.Op("AddV2", {grad_a, grad_b});
}

// Columns [start, start + count) of x (rank `rank`); count -1 takes the rest.
Endpoint Columns(GradientContext& ctx, Endpoint x, int rank, int64_t start, int64_t count) {
  std::vector<int64_t> begin(rank, 0), size(rank, -1);
  begin[rank - 1] = start;
  size[rank - 1] = count;
  return ctx.Op("Slice", {x, ctx.Const(Tensor::FromVector(begin, TensorShape{rank})),
                          ctx.Const(Tensor::FromVector(size, TensorShape{rank}))});
}

// The reduced factorization's gradient. A wide input A = [X | Y] (M x N with M < N) has
// Q R = Q [U | V] with X = Q U square: X's gradient is the square case's with dQ + Y dV^H, Y's is
// Q dV, as in TensorFlow.
Status QrGrad(GradientContext& ctx) {
  const Endpoint q = ctx.output(0);
  const Endpoint r = ctx.output(1);
  const PartialShape& q_shape = ctx.node().output_shape(0);
  const PartialShape& r_shape = ctx.node().output_shape(1);
  if (!q_shape.known_rank() || !r_shape.known_rank() || r_shape.dim(r_shape.rank() - 2) < 0 ||
      r_shape.dim(r_shape.rank() - 1) < 0 || q_shape.dim(q_shape.rank() - 2) < 0) {
    return GradientNotImplemented("QrGrad not implemented with dynamic shapes.");
  }
  const int rank = r_shape.rank();
  const int64_t rows = q_shape.dim(rank - 2);
  const int64_t cols = r_shape.dim(rank - 1);
  if (r_shape.dim(rank - 2) > cols) {
    return GradientNotImplemented(
        "QrGrad not implemented when nrows > ncols and full_matrices is true.");
  }
  const Endpoint dq = ctx.output_grad(0);
  const Endpoint dr = ctx.output_grad(1);
  if (rows >= cols) {
    ctx.SetInputGrad(0, QrGradSquareOrTall(ctx, q, r, dq, dr));
    return Status::OK();
  }
  const Endpoint y = Columns(ctx, ctx.input(0), rank, rows, -1);
  const Endpoint u = Columns(ctx, r, rank, 0, rows);
  const Endpoint dv = Columns(ctx, dr, rank, rows, -1);
  const Endpoint du = Columns(ctx, dr, rank, 0, rows);
  const Endpoint dy = linalg::MatMul(ctx, q, dv);
  const Endpoint dq_total = ctx.Op("AddV2", {dq, linalg::MatMul(ctx, y, dv, false, true)});
  const Endpoint dx = QrGradSquareOrTall(ctx, q, u, dq_total, du);
  ctx.SetInputGrad(0, ctx.Op("ConcatV2", {dx, dy, ctx.Const(Tensor::Scalar<int32_t>(-1))}));
  return Status::OK();
}

// --- Svd --------------------------------------------------------------------------------------

// input [..., M, N] -> s [..., P], u [..., M, P] and v [..., N, P] with P = min(M, N) (u
// [..., M, M] and v [..., N, N] for full matrices; empty vectors without compute_uv).
Status SvdShape(InferenceContext& ctx) {
  FS_RETURN_IF_ERROR(linalg::CheckMatrixInput(ctx, 0, false));
  const PartialShape& in = ctx.input(0);
  const bool compute_uv = ctx.attrs().GetOr<bool>("compute_uv", true);
  const bool full = ctx.attrs().GetOr<bool>("full_matrices", false);
  if (!in.known_rank()) {
    for (int i = 0; i < 3; ++i) ctx.set_output(i, PartialShape::Unknown());
    if (!compute_uv) ctx.set_output(1, PartialShape{0}), ctx.set_output(2, PartialShape{0});
    return Status::OK();
  }
  std::vector<int64_t> batch = in.ToVector();
  const int64_t m = batch[batch.size() - 2], n = batch.back();
  batch.resize(batch.size() - 2);
  const int64_t p = (m < 0 || n < 0) ? PartialShape::kUnknownDim : std::min(m, n);
  auto with = [&](std::initializer_list<int64_t> tail) {
    std::vector<int64_t> dims = batch;
    dims.insert(dims.end(), tail.begin(), tail.end());
    return PartialShape(dims);
  };
  ctx.set_output(0, with({p}));
  if (compute_uv) {
    ctx.set_output(1, with({m, full ? m : p}));
    ctx.set_output(2, with({n, full ? n : p}));
  } else {
    ctx.set_output(1, PartialShape{0});
    ctx.set_output(2, PartialShape{0});
  }
  return Status::OK();
}

Status SvdKernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  MatrixBatch mb;
  FS_RETURN_IF_ERROR(linalg::ReadMatrixBatch(in, "Svd", false, &mb));
  const bool compute_uv = ctx.attrs().GetOr<bool>("compute_uv", true);
  const bool full = ctx.attrs().GetOr<bool>("full_matrices", false);
  lapack_int m, n;
  FS_RETURN_IF_ERROR(lapack::ToLapackInt(mb.rows, "Svd", &m));
  FS_RETURN_IF_ERROR(lapack::ToLapackInt(mb.cols, "Svd", &n));
  const lapack_int p = std::min(m, n);
  const lapack_int u_cols = full ? m : p;
  const lapack_int v_cols = full ? n : p;
  Tensor *s_out, *u_out, *v_out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, BatchShapeWith(in.shape(), {p}), &s_out));
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(
      1, compute_uv ? BatchShapeWith(in.shape(), {m, u_cols}) : TensorShape{0}, &u_out));
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(
      2, compute_uv ? BatchShapeWith(in.shape(), {n, v_cols}) : TensorShape{0}, &v_out));
  const char jobz = !compute_uv ? 'N' : (full ? 'A' : 'S');
  return DispatchFloat(in, "Svd", [&]<typename T>() {
    return ForEachMatrix(ctx, mb.batch, CubicCost(std::max(m, n)), [&](int64_t b) -> Status {
      T* s = s_out->data<T>() + b * p;
      T* u = compute_uv ? u_out->data<T>() + b * m * u_cols : nullptr;
      T* v = compute_uv ? v_out->data<T>() + b * n * v_cols : nullptr;
      if (p == 0) {  // an empty matrix: identities for the full factors
        if (compute_uv) {
          std::fill(u, u + m * u_cols, T(0));
          std::fill(v, v + n * v_cols, T(0));
          for (lapack_int i = 0; i < std::min(m, u_cols); ++i) u[i * u_cols + i] = 1;
          for (lapack_int i = 0; i < std::min(n, v_cols); ++i) v[i * v_cols + i] = 1;
        }
        return Status::OK();
      }
      std::vector<T> a(mb.matrix_size());
      lapack::ToColMajor(in.data<T>() + b * mb.matrix_size(), m, n, a.data());
      // U is column-major M x u_cols; V^T is column-major v_cols x N, which read row-major is
      // V (N x v_cols): it is written straight into the output.
      std::vector<T> u_col(compute_uv ? static_cast<size_t>(m) * u_cols : 1);
      const lapack_int ldvt = compute_uv ? v_cols : 1;
      std::vector<lapack_int> iwork(8 * static_cast<size_t>(p));
      lapack_int info = 0;
      T size_query;
      T unused_v;
      T* vt = compute_uv ? v : &unused_v;
      lapack::Gesdd(jobz, m, n, a.data(), m, s, u_col.data(), m, vt, ldvt, &size_query, -1,
                    iwork.data(), &info);
      std::vector<T> work(lapack::QueriedSize(size_query));
      lapack::Gesdd(jobz, m, n, a.data(), m, s, u_col.data(), m, vt, ldvt, work.data(),
                    static_cast<lapack_int>(work.size()), iwork.data(), &info);
      if (info != 0) {
        return errors::InvalidArgument("SVD did not converge (LAPACK gesdd info ", info,
                                       "): the input may contain NaN or Inf.");
      }
      if (compute_uv) lapack::FromColMajor(u_col.data(), m, u_cols, u);
      return Status::OK();
    });
  });
}

// TensorFlow's SVD gradient (Townsend 2016, "Differentiating the Singular Value Decomposition")
// for the thin factorization or square inputs; a tall input is handled as the wide adjoint.
Status SvdGrad(GradientContext& ctx) {
  const Endpoint a = ctx.input(0);
  const PartialShape& shape = a.node->output_shape(a.index);
  Endpoint grad_s = ctx.output_grad(0);
  const bool compute_uv = ctx.attrs().GetOr<bool>("compute_uv", true);
  const bool full = ctx.attrs().GetOr<bool>("full_matrices", false);
  if (!compute_uv) {
    // Only s was computed: dA = U diag(dS) V^H from a second factorization.
    AttrMap attrs;
    attrs.Set("compute_uv", true);
    attrs.Set("full_matrices", false);
    Node* factors = ctx.AddNode("Svd", {a}, attrs);
    if (factors == nullptr) return ctx.status();
    const Endpoint u{factors, 1}, v{factors, 2};
    ctx.SetInputGrad(
        0, linalg::MatMul(ctx, u,
                          linalg::MatMul(ctx, ctx.Op("MatrixDiag", {grad_s}), v, false, true)));
    return Status::OK();
  }
  if (!shape.known_rank() || shape.dim(shape.rank() - 2) < 0 || shape.dim(shape.rank() - 1) < 0) {
    return GradientNotImplemented("SvdGrad needs the matrix dimensions known while building.");
  }
  int64_t m = shape.dim(shape.rank() - 2);
  int64_t n = shape.dim(shape.rank() - 1);
  if (full && m != n) {
    return GradientNotImplemented(
        "SVD gradient is not implemented for full_matrices=True with non-square matrices; use "
        "full_matrices=False.");
  }
  Endpoint s = ctx.output(0), u = ctx.output(1), v = ctx.output(2);
  Endpoint grad_u = ctx.output_grad(1), grad_v = ctx.output_grad(2);
  const bool use_adjoint = m > n;
  if (use_adjoint) {
    std::swap(m, n);
    std::swap(u, v);
    std::swap(grad_u, grad_v);
  }
  const Endpoint s_2 = ctx.Op("Square", {s});
  const Endpoint gaps =
      ctx.Op("Sub", {linalg::ExpandDims(ctx, s_2, -2), linalg::ExpandDims(ctx, s_2, -1)});
  const Endpoint f =
      ctx.Op("MatrixSetDiag", {linalg::SafeReciprocal(ctx, gaps), ctx.Op("ZerosLike", {s})});
  const Endpoint s_mat = ctx.Op("MatrixDiag", {s});
  const Endpoint grad_s_mat = ctx.Op("MatrixDiag", {grad_s});
  const Endpoint f_u = ctx.Op("Mul", {f, linalg::MatMul(ctx, u, grad_u, true, false)});
  const Endpoint f_v = ctx.Op("Mul", {f, linalg::MatMul(ctx, v, grad_v, true, false)});
  const Endpoint sym_u = ctx.Op("AddV2", {f_u, linalg::Adjoint(ctx, f_u)});
  const Endpoint sym_v = ctx.Op("AddV2", {f_v, linalg::Adjoint(ctx, f_v)});
  const Endpoint term1_nouv =
      ctx.Op("AddV2", {ctx.Op("AddV2", {grad_s_mat, linalg::MatMul(ctx, sym_u, s_mat)}),
                       linalg::MatMul(ctx, s_mat, sym_v)});
  Endpoint grad_a = linalg::MatMul(ctx, u, linalg::MatMul(ctx, term1_nouv, v, false, true));
  if (m != n) {
    const Endpoint gv_t = linalg::Adjoint(ctx, grad_v);
    const Endpoint term2_nous =
        ctx.Op("Sub", {gv_t, linalg::MatMul(ctx, linalg::MatMul(ctx, gv_t, v), v, false, true)});
    const Endpoint s_inv_mat = ctx.Op("MatrixDiag", {linalg::SafeReciprocal(ctx, s)});
    const Endpoint term2 = linalg::MatMul(ctx, linalg::MatMul(ctx, u, s_inv_mat), term2_nous);
    grad_a = ctx.Op("AddV2", {grad_a, term2});
  }
  ctx.SetInputGrad(0, use_adjoint ? linalg::Adjoint(ctx, grad_a) : grad_a);
  return Status::OK();
}

// --- SelfAdjointEigV2 -------------------------------------------------------------------------

Status EigShape(InferenceContext& ctx) {
  FS_RETURN_IF_ERROR(linalg::CheckMatrixInput(ctx, 0, true));
  const PartialShape& in = ctx.input(0);
  const bool compute_v = ctx.attrs().GetOr<bool>("compute_v", true);
  ctx.set_output(1, compute_v ? in : PartialShape{0});
  if (!in.known_rank()) {
    ctx.set_output(0, PartialShape::Unknown());
    return Status::OK();
  }
  std::vector<int64_t> dims = in.ToVector();
  dims.pop_back();
  if (dims.back() < 0) dims.back() = in.dim(in.rank() - 1);
  ctx.set_output(0, PartialShape(dims));
  return Status::OK();
}

// Eigenvalues ascending and eigenvectors as columns, from the lower triangle (the column-major
// view's upper one).
Status EigKernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  MatrixBatch mb;
  FS_RETURN_IF_ERROR(linalg::ReadMatrixBatch(in, "SelfAdjointEigV2", true, &mb));
  const bool compute_v = ctx.attrs().GetOr<bool>("compute_v", true);
  lapack_int n;
  FS_RETURN_IF_ERROR(lapack::ToLapackInt(mb.rows, "SelfAdjointEigV2", &n));
  Tensor *e_out, *v_out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, BatchShapeWith(in.shape(), {n}), &e_out));
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(1, compute_v ? in.shape() : TensorShape{0}, &v_out));
  if (n == 0) return Status::OK();
  const char jobz = compute_v ? 'V' : 'N';
  return DispatchFloat(in, "SelfAdjointEigV2", [&]<typename T>() {
    return ForEachMatrix(ctx, mb.batch, CubicCost(n), [&](int64_t b) -> Status {
      std::vector<T> a(in.data<T>() + b * mb.matrix_size(),
                       in.data<T>() + (b + 1) * mb.matrix_size());
      T* w = e_out->data<T>() + b * n;
      lapack_int info = 0;
      T work_query;
      lapack_int iwork_query;
      lapack::Syevd(jobz, 'U', n, a.data(), n, w, &work_query, -1, &iwork_query, -1, &info);
      std::vector<T> work(lapack::QueriedSize(work_query));
      std::vector<lapack_int> iwork(std::max<lapack_int>(iwork_query, 1));
      lapack::Syevd(jobz, 'U', n, a.data(), n, w, work.data(), static_cast<lapack_int>(work.size()),
                    iwork.data(), static_cast<lapack_int>(iwork.size()), &info);
      if (info != 0) {
        return errors::InvalidArgument(
            "Self-adjoint eigen decomposition was not successful. The input might not be valid. "
            "(LAPACK syevd info ",
            info, ")");
      }
      if (compute_v) lapack::FromColMajor(a.data(), n, n, v_out->data<T>() + b * mb.matrix_size());
      return Status::OK();
    });
  });
}

// TensorFlow's formula, kept to the lower triangle the op reads (half the diagonal).
Status EigGrad(GradientContext& ctx) {
  const Endpoint e = ctx.output(0);
  const Endpoint grad_e = ctx.output_grad(0);
  const bool compute_v = ctx.attrs().GetOr<bool>("compute_v", true);
  Endpoint grad_a;
  if (compute_v) {
    const Endpoint v = ctx.output(1);
    const Endpoint gaps =
        ctx.Op("Sub", {linalg::ExpandDims(ctx, e, -2), linalg::ExpandDims(ctx, e, -1)});
    const Endpoint f =
        ctx.Op("MatrixSetDiag", {linalg::SafeReciprocal(ctx, gaps), ctx.Op("ZerosLike", {e})});
    const Endpoint vgv = linalg::MatMul(ctx, v, ctx.output_grad(1), true, false);
    const Endpoint middle =
        ctx.Op("AddV2", {ctx.Op("MatrixDiag", {grad_e}), ctx.Op("Mul", {f, vgv})});
    grad_a = linalg::MatMul(ctx, v, linalg::MatMul(ctx, middle, v, false, true));
  } else {
    AttrMap attrs;
    attrs.Set("compute_v", true);
    Node* eig = ctx.AddNode("SelfAdjointEigV2", {ctx.input(0)}, attrs);
    if (eig == nullptr) return ctx.status();
    const Endpoint v{eig, 1};
    grad_a =
        linalg::MatMul(ctx, v, linalg::MatMul(ctx, ctx.Op("MatrixDiag", {grad_e}), v, false, true));
  }
  grad_a = linalg::BandPart(ctx, ctx.Op("AddV2", {grad_a, linalg::Adjoint(ctx, grad_a)}), -1, 0);
  const Endpoint half_diag =
      ctx.Op("Mul", {ctx.ScalarLike(grad_e, 0.5), ctx.Op("MatrixDiagPart", {grad_a})});
  ctx.SetInputGrad(0, ctx.Op("MatrixSetDiag", {grad_a, half_diag}));
  return Status::OK();
}

// --- Registrations ----------------------------------------------------------------------------

FS_REGISTER_OP(OpBuilder("MatrixInverse")
                   .Input("input", "T")
                   .Output("output", "T")
                   .TypeAttr("T", kFloatTypes)
                   .Attr("adjoint", false)
                   .Shape(linalg::SquareMatrixShape)
                   .Kernel("CPU", MatrixInverseKernel)
                   .Gradient(MatrixInverseGrad)
                   .Doc("The inverses of square matrices [..., M, M] (of their adjoints with "
                        "adjoint=True); fails on a singular matrix."));
FS_REGISTER_OP(OpBuilder("MatrixDeterminant")
                   .Input("input", "T")
                   .Output("output", "T")
                   .TypeAttr("T", kFloatTypes)
                   .Shape(linalg::SquareMatrixToBatchShape)
                   .Kernel("CPU", MatrixDeterminantKernel)
                   .Gradient(MatrixDeterminantGrad)
                   .Doc("The determinants [...] of square matrices [..., M, M]."));
FS_REGISTER_OP(OpBuilder("LogMatrixDeterminant")
                   .Input("input", "T")
                   .Output("sign", "T")
                   .Output("log_abs_determinant", "T")
                   .TypeAttr("T", kFloatTypes)
                   .Shape(linalg::SquareMatrixToBatchShape)
                   .Kernel("CPU", LogMatrixDeterminantKernel)
                   .Gradient(LogMatrixDeterminantGrad)
                   .Doc("The sign and log |determinant| of square matrices [..., M, M]."));
FS_REGISTER_OP(OpBuilder("Cholesky")
                   .Input("input", "T")
                   .Output("output", "T")
                   .TypeAttr("T", kFloatTypes)
                   .Shape(linalg::SquareMatrixShape)
                   .Kernel("CPU", CholeskyKernel)
                   .Gradient(CholeskyGrad)
                   .Doc("Lower-triangular L with L L^T = A, from A's lower triangle; fails unless "
                        "A is positive definite."));
FS_REGISTER_OP(OpBuilder("MatrixSolve")
                   .Input("matrix", "T")
                   .Input("rhs", "T")
                   .Output("output", "T")
                   .TypeAttr("T", kFloatTypes)
                   .Attr("adjoint", false)
                   .Shape(SolveShape)
                   .Kernel("CPU", MatrixSolveKernel)
                   .Gradient(MatrixSolveGrad)
                   .Doc("X with A X = B (A^H X = B with adjoint=True); fails on a singular A."));
FS_REGISTER_OP(OpBuilder("MatrixTriangularSolve")
                   .Input("matrix", "T")
                   .Input("rhs", "T")
                   .Output("output", "T")
                   .TypeAttr("T", kFloatTypes)
                   .Attr("lower", true)
                   .Attr("adjoint", false)
                   .Shape(SolveShape)
                   .Kernel("CPU", MatrixTriangularSolveKernel)
                   .Gradient(MatrixTriangularSolveGrad)
                   .Doc("X with op(A) X = B, reading only A's lower (or upper) triangle."));
FS_REGISTER_OP(OpBuilder("Qr")
                   .Input("input", "T")
                   .Output("q", "T")
                   .Output("r", "T")
                   .TypeAttr("T", kFloatTypes)
                   .Attr("full_matrices", false)
                   .Shape(QrShape)
                   .Kernel("CPU", QrKernel)
                   .Gradient(QrGrad)
                   .Doc("QR factorization A = Q R of matrices [..., M, N]."));
FS_REGISTER_OP(OpBuilder("Svd")
                   .Input("input", "T")
                   .Output("s", "T")
                   .Output("u", "T")
                   .Output("v", "T")
                   .TypeAttr("T", kFloatTypes)
                   .Attr("compute_uv", true)
                   .Attr("full_matrices", false)
                   .Shape(SvdShape)
                   .Kernel("CPU", SvdKernel)
                   .Gradient(SvdGrad)
                   .Doc("Singular values (descending) and vectors: A = U diag(s) V^H."));
FS_REGISTER_OP(OpBuilder("SelfAdjointEigV2")
                   .Input("input", "T")
                   .Output("e", "T")
                   .Output("v", "T")
                   .TypeAttr("T", kFloatTypes)
                   .Attr("compute_v", true)
                   .Shape(EigShape)
                   .Kernel("CPU", EigKernel)
                   .Gradient(EigGrad)
                   .Doc("Eigenvalues (ascending) and eigenvectors of symmetric matrices, from "
                        "their lower triangles."));

}  // namespace
}  // namespace flowstone
