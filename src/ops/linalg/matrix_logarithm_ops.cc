// MatrixLogarithm (tf.linalg.logm): the principal logarithm of each complex square matrix, by
// inverse scaling and squaring (Higham, "Functions of Matrices", 11.5): square roots (Denman-
// Beavers) until X is within 0.25 of I, then log(X) = 2 atanh(Z) = 2 (Z + Z^3/3 + Z^5/5 + ...) for
// Z = (X - I)(X + I)^-1, and log(A) = 2^k log(X). Complex only, like TensorFlow's kernel, and not
// differentiable (TensorFlow defines no gradient). A singular matrix gives NaNs.
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"
#include "ops/linalg/linalg_util.h"

namespace flowstone {
namespace {

using Complex = std::complex<double>;

// A row-major n x n complex matrix.
struct Matrix {
  int64_t n = 0;
  std::vector<Complex> a;
  explicit Matrix(int64_t size, Complex diagonal = 0) : n(size), a(size * size) {
    for (int64_t i = 0; i < n; ++i) a[i * n + i] = diagonal;
  }
  Complex& operator()(int64_t i, int64_t j) { return a[i * n + j]; }
  Complex operator()(int64_t i, int64_t j) const { return a[i * n + j]; }
};

Matrix Multiply(const Matrix& x, const Matrix& y) {
  Matrix out(x.n);
  for (int64_t i = 0; i < x.n; ++i) {
    for (int64_t k = 0; k < x.n; ++k) {
      const Complex xik = x(i, k);
      for (int64_t j = 0; j < x.n; ++j) out(i, j) += xik * y(k, j);
    }
  }
  return out;
}

// x^-1 by Gauss-Jordan elimination with partial pivoting, and log |det x|; false if singular.
bool Invert(Matrix x, Matrix* inverse, double* log_abs_det) {
  const int64_t n = x.n;
  *inverse = Matrix(n, 1);
  *log_abs_det = 0;
  for (int64_t c = 0; c < n; ++c) {
    int64_t pivot = c;
    for (int64_t r = c + 1; r < n; ++r) {
      if (std::abs(x(r, c)) > std::abs(x(pivot, c))) pivot = r;
    }
    if (std::abs(x(pivot, c)) == 0 || !std::isfinite(std::abs(x(pivot, c)))) return false;
    if (pivot != c) {
      for (int64_t j = 0; j < n; ++j) {
        std::swap(x(c, j), x(pivot, j));
        std::swap((*inverse)(c, j), (*inverse)(pivot, j));
      }
    }
    const Complex scale = 1.0 / x(c, c);
    *log_abs_det += std::log(std::abs(x(c, c)));
    for (int64_t j = 0; j < n; ++j) {
      x(c, j) *= scale;
      (*inverse)(c, j) *= scale;
    }
    for (int64_t r = 0; r < n; ++r) {
      if (r == c || x(r, c) == Complex(0)) continue;
      const Complex f = x(r, c);
      for (int64_t j = 0; j < n; ++j) {
        x(r, j) -= f * x(c, j);
        (*inverse)(r, j) -= f * (*inverse)(c, j);
      }
    }
  }
  return true;
}

double Norm1(const Matrix& x) {
  double best = 0;
  for (int64_t j = 0; j < x.n; ++j) {
    double column = 0;
    for (int64_t i = 0; i < x.n; ++i) column += std::abs(x(i, j));
    best = std::max(best, column);
  }
  return best;
}

// The principal square root by the scaled Denman-Beavers iteration; false without convergence.
bool SquareRoot(const Matrix& a, Matrix* root) {
  Matrix y = a, z(a.n, 1), y_inv(a.n), z_inv(a.n);
  bool scale = true;
  for (int iteration = 0; iteration < 100; ++iteration) {
    double log_det_y, log_det_z;
    if (!Invert(y, &y_inv, &log_det_y) || !Invert(z, &z_inv, &log_det_z)) return false;
    const double mu = scale ? std::exp(-(log_det_y + log_det_z) / (2.0 * a.n)) : 1.0;
    double change = 0, norm = 0;
    for (size_t k = 0; k < y.a.size(); ++k) {
      const Complex next_y = 0.5 * (mu * y.a[k] + z_inv.a[k] / mu);
      z.a[k] = 0.5 * (mu * z.a[k] + y_inv.a[k] / mu);
      change += std::norm(next_y - y.a[k]);
      norm += std::norm(next_y);
      y.a[k] = next_y;
    }
    if (!std::isfinite(change)) return false;
    if (change <= 1e-2 * norm) scale = false;
    if (change <= 1e-30 * norm) {
      *root = std::move(y);
      return true;
    }
  }
  return false;
}

bool Logarithm(const Matrix& a, Matrix* out) {
  const int64_t n = a.n;
  Matrix x = a;
  int squarings = 0;
  for (;; ++squarings) {
    Matrix shifted = x;
    for (int64_t i = 0; i < n; ++i) shifted(i, i) -= 1.0;
    if (Norm1(shifted) <= 0.25) break;
    if (squarings == 64 || !SquareRoot(x, &x)) return false;
  }
  Matrix minus = x, plus = x, plus_inv(n);
  for (int64_t i = 0; i < n; ++i) {
    minus(i, i) -= 1.0;
    plus(i, i) += 1.0;
  }
  double unused;
  if (!Invert(plus, &plus_inv, &unused)) return false;
  const Matrix z = Multiply(minus, plus_inv);
  const Matrix z2 = Multiply(z, z);
  Matrix power = z, sum = z;
  for (int term = 3; term < 200; term += 2) {
    power = Multiply(power, z2);
    double size = 0, total = 0;
    for (size_t k = 0; k < sum.a.size(); ++k) {
      const Complex add = power.a[k] / static_cast<double>(term);
      sum.a[k] += add;
      size += std::norm(add);
      total += std::norm(sum.a[k]);
    }
    if (size <= 1e-34 * total) break;
  }
  const double factor = 2.0 * std::ldexp(1.0, squarings);
  for (auto& v : sum.a) v *= factor;
  *out = std::move(sum);
  return true;
}

Status MatrixLogarithmKernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  linalg::MatrixBatch mb;
  FS_RETURN_IF_ERROR(linalg::ReadMatrixBatch(in, "MatrixLogarithm", true, &mb));
  Tensor* out;
  FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, in.shape(), &out));
  const int64_t n = mb.rows;
  if (n == 0 || mb.batch == 0) return Status::OK();
  return DispatchDType<complex64, complex128>(in.dtype(), "MatrixLogarithm", [&]<typename T>() {
    ctx.ParallelFor(mb.batch, 100 * n * n * n, [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) {
        const T* src = in.data<T>() + b * mb.matrix_size();
        T* dst = out->data<T>() + b * mb.matrix_size();
        Matrix a(n), log_a(n);
        for (int64_t k = 0; k < mb.matrix_size(); ++k) a.a[k] = Complex(src[k]);
        const bool ok = Logarithm(a, &log_a);
        const double nan = std::numeric_limits<double>::quiet_NaN();
        for (int64_t k = 0; k < mb.matrix_size(); ++k) {
          dst[k] = ok ? T(log_a.a[k]) : T(nan, nan);
        }
      }
    });
    return Status::OK();
  });
}

FS_REGISTER_OP(OpBuilder("MatrixLogarithm")
                   .Input("input", "T")
                   .Output("output", "T")
                   .TypeAttr("T", {DType::kComplex64, DType::kComplex128})
                   .Shape(linalg::SquareMatrixShape)
                   .Kernel("CPU", MatrixLogarithmKernel)
                   .NotDifferentiable()
                   .Doc("The principal logarithm of each complex square matrix."));

}  // namespace
}  // namespace flowstone
