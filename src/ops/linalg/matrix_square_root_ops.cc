// MatrixSquareRoot (tf.linalg.sqrtm): the principal square root of each matrix of a batch, by the
// Denman-Beavers iteration with determinant scaling (Higham, "Functions of Matrices", 6.3):
// Y0 = A, Z0 = I, Y <- (mu Y + Z^-1 / mu) / 2, Z <- (mu Z + Y^-1 / mu) / 2, with Y -> A^(1/2) and
// Z -> A^(-1/2). TensorFlow takes the real Schur form instead; both give the principal root. A
// matrix without a real principal root (negative real eigenvalues) or a singular one gives NaNs
// (docs/COMPAT.md). The gradient solves the Sylvester equation S^T X + X S^T = G through its
// Kronecker form, as TensorFlow's does.
#include <cmath>
#include <cstdint>
#include <limits>
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

using Matrix = std::vector<double>;  // row-major n x n

// The inverse of a (row-major or column-major alike: inv(A^T) = inv(A)^T) and log|det a|;
// false when a is singular.
bool Invert(const Matrix& a, lapack_int n, Matrix* inverse, double* log_abs_det) {
  *inverse = a;
  std::vector<lapack_int> ipiv(n);
  lapack_int info = 0;
  lapack::Getrf(n, n, inverse->data(), n, ipiv.data(), &info);
  if (info != 0) return false;
  *log_abs_det = 0;
  for (lapack_int i = 0; i < n; ++i) *log_abs_det += std::log(std::abs((*inverse)[i * n + i]));
  double size_query;
  lapack::Getri(n, inverse->data(), n, ipiv.data(), &size_query, -1, &info);
  std::vector<double> work(lapack::QueriedSize(size_query));
  lapack::Getri(n, inverse->data(), n, ipiv.data(), work.data(),
                static_cast<lapack_int>(work.size()), &info);
  return info == 0;
}

// The principal square root of a, or NaNs when the iteration finds none.
Matrix SquareRoot(const Matrix& a, lapack_int n) {
  Matrix y = a;
  Matrix z(a.size(), 0.0);
  for (lapack_int i = 0; i < n; ++i) z[i * n + i] = 1;
  Matrix y_inv, z_inv;
  bool scale = true;
  for (int iteration = 0; iteration < 100; ++iteration) {
    double log_det_y, log_det_z;
    if (!Invert(y, n, &y_inv, &log_det_y) || !Invert(z, n, &z_inv, &log_det_z)) break;
    // Scaling by |det(Y) det(Z)|^(-1/(2n)) speeds up the first iterations; it is dropped once
    // the iterates settle, so the last steps converge quadratically.
    const double mu = scale ? std::exp(-(log_det_y + log_det_z) / (2.0 * n)) : 1.0;
    double change = 0, norm = 0;
    for (size_t k = 0; k < a.size(); ++k) {
      const double next_y = 0.5 * (mu * y[k] + z_inv[k] / mu);
      const double next_z = 0.5 * (mu * z[k] + y_inv[k] / mu);
      change += (next_y - y[k]) * (next_y - y[k]);
      norm += next_y * next_y;
      y[k] = next_y;
      z[k] = next_z;
    }
    if (!std::isfinite(change)) break;
    if (change <= 1e-2 * norm) scale = false;
    if (change <= 1e-30 * norm) return y;
  }
  return Matrix(a.size(), std::numeric_limits<double>::quiet_NaN());
}

Status MatrixSquareRootKernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  linalg::MatrixBatch mb;
  FS_RETURN_IF_ERROR(linalg::ReadMatrixBatch(in, "MatrixSquareRoot", true, &mb));
  lapack_int n;
  FS_RETURN_IF_ERROR(lapack::ToLapackInt(mb.rows, "MatrixSquareRoot", &n));
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, in.shape(), &out));
  if (n == 0 || mb.batch == 0) return Status::OK();
  lapack::UseCallingThreadOnly();
  return DispatchDType<float, double>(in.dtype(), "MatrixSquareRoot", [&]<typename T>() {
    ctx.ParallelFor(mb.batch, 20 * static_cast<int64_t>(n) * n * n,
                    [&](int64_t begin, int64_t end) {
                      for (int64_t b = begin; b < end; ++b) {
                        const T* src = in.data<T>() + b * mb.matrix_size();
                        const Matrix root = SquareRoot(Matrix(src, src + mb.matrix_size()), n);
                        T* dst = out->data<T>() + b * mb.matrix_size();
                        for (int64_t k = 0; k < mb.matrix_size(); ++k)
                          dst[k] = static_cast<T>(root[k]);
                      }
                    });
    return Status::OK();
  });
}

// kron(a, b) of two [..., n, n] matrices: [..., n n, n n], as graph ops.
Endpoint Kron(GradientContext& ctx, Endpoint a, Endpoint b, Endpoint kron_shape) {
  // a[..., i, 1, j, 1] * b[..., 1, k, 1, l]
  const Endpoint a4 = linalg::ExpandDims(ctx, linalg::ExpandDims(ctx, a, -1), -3);
  const Endpoint b4 = linalg::ExpandDims(ctx, linalg::ExpandDims(ctx, b, -2), -4);
  return ctx.Op("Reshape", {ctx.Op("Mul", {a4, b4}), kron_shape});
}

// With A = S S: dA = S dS + dS S, so the gradient X of A solves S^T X + X S^T = G. Row-major
// vec turns it into (kron(S^T, I) + kron(I, S)) vec(X) = vec(G).
Status MatrixSquareRootGrad(GradientContext& ctx) {
  const Endpoint s = ctx.output(0);
  const Endpoint grad = ctx.output_grad(0);
  const Endpoint shape = ctx.Shape(s);
  const Endpoint eye = ctx.Op("MatrixDiag", {ctx.Op("OnesLike", {ctx.Op("MatrixDiagPart", {s})})});
  // [..., n n, n n] and [..., n n, 1] from shape [..., n, n].
  const Endpoint batch = ctx.Op(
      "Slice",
      {shape, ctx.Const(Tensor::FromVector<int32_t>({0}, {1})),
       ctx.Op("Sub", {ctx.Op("Size", {shape}), ctx.Const(Tensor::FromVector<int32_t>({2}, {1}))})});
  const Endpoint n = ctx.Op(
      "Slice",
      {shape,
       ctx.Op("Sub", {ctx.Op("Size", {shape}), ctx.Const(Tensor::FromVector<int32_t>({1}, {1}))}),
       ctx.Const(Tensor::FromVector<int32_t>({1}, {1}))});
  const Endpoint nn = ctx.Op("Mul", {n, n});
  const Endpoint zero = ctx.Const(Tensor::Scalar<int32_t>(0));
  const Endpoint kron_shape = ctx.Op("ConcatV2", {batch, nn, nn, zero});
  const Endpoint vec_shape =
      ctx.Op("ConcatV2", {batch, nn, ctx.Const(Tensor::FromVector<int32_t>({1}, {1})), zero});
  const Endpoint system = ctx.Op("AddV2", {Kron(ctx, linalg::Adjoint(ctx, s), eye, kron_shape),
                                           Kron(ctx, eye, s, kron_shape)});
  const Endpoint vec_x = ctx.Op("MatrixSolve", {system, ctx.Op("Reshape", {grad, vec_shape})});
  ctx.SetInputGrad(0, ctx.Op("Reshape", {vec_x, shape}));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("MatrixSquareRoot")
                   .Input("input", "T")
                   .Output("output", "T")
                   .TypeAttr("T", kFloatTypes)
                   .Shape(linalg::SquareMatrixShape)
                   .Kernel("CPU", MatrixSquareRootKernel)
                   .Gradient(MatrixSquareRootGrad)
                   .Doc("The principal square root of each square matrix."));

}  // namespace
}  // namespace flowstone
