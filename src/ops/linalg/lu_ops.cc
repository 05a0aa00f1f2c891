// Lu: the LU factorization with partial pivoting of a batch of square matrices (LAPACK's getrf),
// as TensorFlow returns it: `lu` holds L (unit diagonal, not stored) below the diagonal and U on
// and above it, and `p` the row permutation, so that input[p] = L @ U. tf.linalg.lu_solve,
// lu_reconstruct and lu_matrix_inverse compose on these outputs in Python, as TensorFlow's do.
#include <cstdint>
#include <cstring>
#include <mutex>
#include <numeric>
#include <utility>
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

Status LuKernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  MatrixBatch mb;
  FS_RETURN_IF_ERROR(linalg::ReadMatrixBatch(in, "Lu", true, &mb));
  lapack_int n;
  FS_RETURN_IF_ERROR(lapack::ToLapackInt(mb.rows, "Lu", &n));
  std::vector<int64_t> perm_dims = in.shape().ToVector();
  perm_dims.pop_back();
  Tensor* lu;
  Tensor* perm;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, in.shape(), &lu));
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(1, TensorShape(perm_dims), &perm));
  if (n == 0 || mb.batch == 0) return Status::OK();
  lapack::UseCallingThreadOnly();
  return DispatchDType<float, double>(in.dtype(), "Lu", [&]<typename T>() -> Status {
    std::mutex mu;
    Status first_error;
    ctx.ParallelFor(mb.batch, static_cast<int64_t>(n) * n * n, [&](int64_t begin, int64_t end) {
      std::vector<T> a(mb.matrix_size());
      std::vector<lapack_int> ipiv(n);
      std::vector<int64_t> rows(n);
      for (int64_t b = begin; b < end; ++b) {
        // getrf factors column-major matrices: factor A^T's storage transposed back.
        lapack::ToColMajor(in.data<T>() + b * mb.matrix_size(), n, n, a.data());
        lapack_int info = 0;
        lapack::Getrf(n, n, a.data(), n, ipiv.data(), &info);
        if (info > 0) {
          std::lock_guard<std::mutex> lock(mu);
          if (first_error.ok()) {
            first_error = errors::InvalidArgument("Input is not invertible: U[", info - 1, ",",
                                                  info - 1, "] of matrix ", b, " is 0");
          }
          return;
        }
        lapack::FromColMajor(a.data(), n, n, lu->data<T>() + b * mb.matrix_size());
        // getrf swapped row i with row ipiv[i] - 1 in turn; apply the swaps to 0..n-1.
        std::iota(rows.begin(), rows.end(), 0);
        for (lapack_int i = 0; i < n; ++i) std::swap(rows[i], rows[ipiv[i] - 1]);
        for (lapack_int i = 0; i < n; ++i) {
          if (perm->dtype() == DType::kInt32) {
            perm->data<int32_t>()[b * n + i] = static_cast<int32_t>(rows[i]);
          } else {
            perm->data<int64_t>()[b * n + i] = rows[i];
          }
        }
      }
    });
    return first_error;
  });
}

Status LuShape(InferenceContext& ctx) {
  FS_RETURN_IF_ERROR(linalg::CheckMatrixInput(ctx, 0, true));
  const PartialShape& in = ctx.input(0);
  ctx.set_output(0, in);
  if (!in.known_rank()) {
    ctx.set_output(1, PartialShape::Unknown());
    return Status::OK();
  }
  std::vector<int64_t> dims = in.ToVector();
  dims.pop_back();
  ctx.set_output(1, PartialShape(dims));
  return Status::OK();
}

// With P A = L U (P the permutation matrix of p) and the gradient G of the packed output,
// perturbing A gives dL = L tril(F, -1) and dU = triu(F) U for F = L^-1 P dA U^-1, so
//   dA = P^T L^-H (tril(L^H G, -1) + triu(G U^H)) U^-H.
Status LuGrad(GradientContext& ctx) {
  const Endpoint lu = ctx.output(0);
  const Endpoint grad = ctx.output_grad(0);
  const Endpoint diag = ctx.Op("MatrixDiagPart", {lu});
  const Endpoint lower =
      ctx.Op("MatrixSetDiag", {linalg::BandPart(ctx, lu, -1, 0), ctx.Op("OnesLike", {diag})});
  const Endpoint upper = linalg::BandPart(ctx, lu, 0, -1);
  const Endpoint strictly_lower =
      ctx.Op("MatrixSetDiag", {linalg::BandPart(ctx, linalg::MatMul(ctx, lower, grad, true), -1, 0),
                               ctx.Op("ZerosLike", {diag})});
  const Endpoint upper_part =
      linalg::BandPart(ctx, linalg::MatMul(ctx, grad, upper, false, true), 0, -1);
  const Endpoint middle = ctx.Op("AddV2", {strictly_lower, upper_part});
  AttrMap lower_adjoint;
  lower_adjoint.Set("lower", true);
  lower_adjoint.Set("adjoint", true);
  const Endpoint left = ctx.Op("MatrixTriangularSolve", {lower, middle}, lower_adjoint);
  AttrMap upper_plain;
  upper_plain.Set("lower", false);
  upper_plain.Set("adjoint", false);
  const Endpoint right = linalg::Adjoint(
      ctx, ctx.Op("MatrixTriangularSolve", {upper, linalg::Adjoint(ctx, left)}, upper_plain));
  // P^T right, with P the one-hot rows of p.
  AttrMap one_hot_axis;
  one_hot_axis.Set("axis", int64_t{-1});
  // depth = the last dimension of lu, as a scalar.
  const Endpoint shape = ctx.Shape(lu);
  const Endpoint vector = ctx.Const(Tensor::FromVector<int32_t>({1}, TensorShape({1})));
  const Endpoint last = ctx.Op(
      "Reshape",
      {ctx.Op("Sub", {ctx.Op("Size", {shape}), ctx.Const(Tensor::Scalar<int32_t>(1))}), vector});
  const Endpoint depth =
      ctx.Op("Reshape", {ctx.Op("Slice", {shape, last, vector}),
                         ctx.Const(Tensor::Host(DType::kInt32, TensorShape({0})))});
  const Endpoint permutation = ctx.Op(
      "OneHot", {ctx.output(1), depth, ctx.ScalarLike(lu, 1), ctx.ScalarLike(lu, 0)}, one_hot_axis);
  ctx.SetInputGrad(0, linalg::MatMul(ctx, permutation, right, true));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("Lu")
                   .Input("input", "T")
                   .Output("lu", "T")
                   .Output("p", "output_idx_type")
                   .TypeAttr("T", kFloatTypes)
                   .TypeAttr("output_idx_type", {DType::kInt32, DType::kInt64}, DType::kInt32)
                   .Shape(LuShape)
                   .Kernel("CPU", LuKernel)
                   .Gradient(LuGrad)
                   .Doc("The LU factorization with partial pivoting: input[p] = L @ U, with L "
                        "below the diagonal of lu (unit diagonal) and U on and above it."));

}  // namespace
}  // namespace flowstone
