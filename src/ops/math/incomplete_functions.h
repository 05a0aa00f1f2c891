// The regularized incomplete gamma functions P(a, x) and Q(a, x) = 1 - P(a, x), the derivative
// of P with respect to a, and the regularized incomplete beta function I_x(a, b), in double.
//
// P comes from its power series where x < a + 1 and from Legendre's continued fraction for Q
// elsewhere (each converges fast on its side); I_x(a, b) from its continued fraction, on the side
// of the symmetry I_x(a, b) = 1 - I_{1-x}(b, a) where it converges fast. Both fractions are
// evaluated by the modified Lentz method. dP/da evaluates the same series and fraction on dual
// numbers (a value and its derivative with respect to a), so the derivative is exact to the same
// accuracy as P without a second algorithm.
#pragma once

#include <cmath>
#include <limits>

#include "ops/math/special_functions.h"

namespace flowstone {
namespace special {

// A value and its derivative with respect to one variable (forward-mode differentiation).
struct Dual {
  double v = 0;
  double d = 0;
};
inline Dual operator+(Dual x, Dual y) { return {x.v + y.v, x.d + y.d}; }
inline Dual operator-(Dual x, Dual y) { return {x.v - y.v, x.d - y.d}; }
inline Dual operator*(Dual x, Dual y) { return {x.v * y.v, x.d * y.v + x.v * y.d}; }
inline Dual operator/(Dual x, Dual y) { return {x.v / y.v, (x.d * y.v - x.v * y.d) / (y.v * y.v)}; }
inline Dual operator+(Dual x, double y) { return {x.v + y, x.d}; }
inline Dual operator*(Dual x, double y) { return {x.v * y, x.d * y}; }
inline Dual operator*(double x, Dual y) { return {x * y.v, x * y.d}; }
inline Dual operator/(double x, Dual y) { return Dual{x, 0} / y; }
inline Dual operator-(double x, Dual y) { return {x - y.v, -y.d}; }
inline Dual exp(Dual x) {
  const double e = std::exp(x.v);
  return {e, e * x.d};
}
inline Dual lgamma(Dual x) { return {std::lgamma(x.v), Digamma(x.v) * x.d}; }

inline double Value(double x) { return x; }
inline double Value(Dual x) { return x.v; }
inline double Derivative(double) { return 0; }
inline double Derivative(Dual x) { return x.d; }

namespace incomplete_internal {

constexpr double kEpsilon = std::numeric_limits<double>::epsilon();
constexpr double kTiny = 1e-300;
constexpr int kMaxIterations = 20000;

using std::exp;
using std::lgamma;

// Whether a term (or a fraction's factor minus 1) no longer changes the sum, in value and in
// derivative.
template <typename T>
bool Converged(T change, T total) {
  return std::abs(Value(change)) <= kEpsilon * std::abs(Value(total)) &&
         std::abs(Derivative(change)) <= kEpsilon * std::abs(Derivative(total));
}

// x^a e^-x / Gamma(a).
template <typename T>
T GammaPrefactor(T a, double x) {
  return exp(a * std::log(x) + (-x) - lgamma(a));
}

// P(a, x) = prefactor * sum_n x^n / (a (a + 1) ... (a + n)).
template <typename T>
T LowerGammaSeries(T a, double x) {
  T term = 1.0 / a;
  T sum = term;
  T denominator = a;
  for (int n = 0; n < kMaxIterations; ++n) {
    denominator = denominator + 1.0;
    term = term * x / denominator;
    sum = sum + term;
    if (Converged(term, sum)) break;
  }
  return sum * GammaPrefactor(a, x);
}

template <typename T>
T Guard(T x) {
  if (std::abs(Value(x)) < kTiny) return T{} + kTiny;
  return x;
}

// Q(a, x) = prefactor / (x + 1 - a - 1 (1 - a) / (x + 3 - a - 2 (2 - a) / (x + 5 - a - ...))).
template <typename T>
T UpperGammaFraction(T a, double x) {
  T b = (x + 1.0) - a;
  T c = T{} + 1.0 / kTiny;
  T d = 1.0 / Guard(b);
  T h = d;
  for (int i = 1; i < kMaxIterations; ++i) {
    const T an = -1.0 * (i * (i - a));
    b = b + 2.0;
    d = Guard(an * d + b);
    c = Guard(b + an / c);
    d = 1.0 / d;
    const T delta = d * c;
    h = h * delta;
    // h changes by the factor delta: relatively by delta - 1, its derivative by about
    // delta' h / h'.
    if (std::abs(Value(delta) - 1) <= kEpsilon &&
        std::abs(Derivative(delta) * Value(h)) <= kEpsilon * std::abs(Derivative(h))) {
      break;
    }
  }
  return GammaPrefactor(a, x) * h;
}

// P(a, x) (lower = true) or Q(a, x), for a > 0 and x > 0 finite.
template <typename T>
T RegularizedGamma(T a, double x, bool lower) {
  if (x < Value(a) + 1) {
    const T p = LowerGammaSeries(a, x);
    return lower ? p : 1.0 - p;
  }
  const T q = UpperGammaFraction(a, x);
  return lower ? 1.0 - q : q;
}

}  // namespace incomplete_internal

// P(a, x) (lower) or Q(a, x) with TensorFlow's conventions at the edges: NaN for a <= 0 or
// x < 0; P(a, 0) = 0 and P(a, inf) = 1.
inline double IncompleteGamma(double a, double x, bool lower) {
  if (std::isnan(a) || std::isnan(x) || a <= 0 || x < 0) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  if (x == 0) return lower ? 0 : 1;
  if (std::isinf(x)) return lower ? 1 : 0;
  if (std::isinf(a)) return lower ? 0 : 1;
  return incomplete_internal::RegularizedGamma(a, x, lower);
}

// dP(a, x)/da (NaN where P is NaN, 0 at x = 0 and x = inf).
inline double IncompleteGammaDerivativeA(double a, double x) {
  if (std::isnan(a) || std::isnan(x) || a <= 0 || x < 0) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  if (x == 0 || std::isinf(x) || std::isinf(a)) return 0;
  return incomplete_internal::RegularizedGamma(Dual{a, 1}, x, true).d;
}

// dP(a, x)/dx = x^(a-1) e^-x / Gamma(a).
inline double IncompleteGammaDerivativeX(double a, double x) {
  return std::exp((a - 1) * std::log(x) - x - std::lgamma(a));
}

namespace incomplete_internal {

// I_x(a, b) by its continued fraction, which converges fast for x below (a + 1) / (a + b + 2).
inline double IncompleteBetaFraction(double a, double b, double x) {
  const double log_front = a * std::log(x) + b * std::log1p(-x) -
                           (std::lgamma(a) + std::lgamma(b) - std::lgamma(a + b)) - std::log(a);
  // The fraction 1 / (1 + d1 / (1 + d2 / (1 + ...))) with d_{2m+1} = -(a + m)(a + b + m) x /
  // ((a + 2m)(a + 2m + 1)) and d_{2m} = m (b - m) x / ((a + 2m - 1)(a + 2m)).
  double c = 1;
  double d = 1 / Guard(1 - (a + b) * x / (a + 1));
  double h = d;
  for (int m = 1; m < incomplete_internal::kMaxIterations; ++m) {
    const double even = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m));
    d = 1 / Guard(1 + even * d);
    c = Guard(1 + even / c);
    h *= d * c;
    const double odd = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1));
    d = 1 / Guard(1 + odd * d);
    c = Guard(1 + odd / c);
    const double delta = d * c;
    h *= delta;
    if (std::abs(delta - 1) <= incomplete_internal::kEpsilon) break;
  }
  return std::exp(log_front) * h;
}

}  // namespace incomplete_internal

// I_x(a, b), NaN outside a > 0, b > 0, 0 <= x <= 1.
inline double IncompleteBeta(double a, double b, double x) {
  if (std::isnan(a) || std::isnan(b) || std::isnan(x) || a <= 0 || b <= 0 || x < 0 || x > 1) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  if (x == 0 || x == 1) return x;
  // Above the threshold, I_x(a, b) = 1 - I_{1-x}(b, a), swapped once only: where a + b overflows
  // (both thresholds 0) or rounds, 1 - x is above the swapped threshold too, and swapping back
  // recursed until the stack overflowed.
  if (x > (a + 1) / (a + b + 2))
    return 1 - incomplete_internal::IncompleteBetaFraction(b, a, 1 - x);
  return incomplete_internal::IncompleteBetaFraction(a, b, x);
}

}  // namespace special
}  // namespace flowstone
