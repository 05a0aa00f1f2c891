// Special functions in double precision, shared by the unary (Digamma, Erfinv, Ndtri) and
// binary (Zeta, Polygamma) op families.
#pragma once

#include <cmath>
#include <limits>
#include <numbers>

namespace flowstone {
namespace special {

// B_2j / (2j)! for j = 1..12: the Euler-Maclaurin correction coefficients.
inline constexpr double kBernoulliOverFactorial[] = {
    1.0 / 6 / 2,
    -1.0 / 30 / 24,
    1.0 / 42 / 720,
    -1.0 / 30 / 40320,
    5.0 / 66 / 3628800,
    -691.0 / 2730 / 479001600,
    7.0 / 6 / 87178291200.0,
    -3617.0 / 510 / 20922789888000.0,
    43867.0 / 798 / 6402373705728000.0,
    -174611.0 / 330 / 2432902008176640000.0,
    854513.0 / 138 / 1124000727777607680000.0,
    -236364091.0 / 2730 / 620448401733239439360000.0,
};

// The Hurwitz zeta function sum over k >= 0 of (q + k)^-s, for s > 1, by the Euler-Maclaurin
// formula: the first terms are summed directly until q + k >= 9, where the tail's integral and
// Bernoulli corrections converge to double precision. s == 1 is a pole (inf); s < 1 and, for a
// non-integer s, q < 0 are outside the domain (NaN), as in TensorFlow; so are the poles at
// q = 0, -1, -2, ... (inf). A q below -1e6 gives NaN rather than summing a million terms.
inline double HurwitzZeta(double s, double q) {
  if (std::isnan(s) || std::isnan(q)) return std::numeric_limits<double>::quiet_NaN();
  if (s == 1) return std::numeric_limits<double>::infinity();
  if (s < 1) return std::numeric_limits<double>::quiet_NaN();
  if (q <= 0) {
    if (q == std::floor(q)) return std::numeric_limits<double>::infinity();
    if (s != std::floor(s) || q < -1e6) return std::numeric_limits<double>::quiet_NaN();
  }
  constexpr double kShift = 9;
  double sum = 0;
  double a = q;
  while (a < kShift) {
    sum += std::pow(a, -s);
    a += 1;
  }
  const double a_pow = std::pow(a, -s);
  sum += a * a_pow / (s - 1) + 0.5 * a_pow;
  // term_j = s (s + 1) ... (s + 2j - 2) a^(-s - 2j + 1).
  double term = s * a_pow / a;
  for (int j = 0; j < 12; ++j) {
    const double correction = kBernoulliOverFactorial[j] * term;
    sum += correction;
    if (std::abs(correction) < 1e-17 * std::abs(sum)) break;
    term *= (s + 2 * j + 1) * (s + 2 * j + 2) / (a * a);
  }
  return sum;
}

// psi(x): the recurrence moves x up to 6, the asymptotic series finishes; reflection for x < 0.5.
inline double Digamma(double x) {
  if (std::isnan(x) || (x <= 0 && x == std::floor(x))) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  double result = 0;
  if (x < 0.5) {
    result -= std::numbers::pi / std::tan(std::numbers::pi * x);
    x = 1 - x;
  }
  while (x < 6) {
    result -= 1 / x;
    x += 1;
  }
  const double inv2 = 1 / (x * x);
  const double series =
      inv2 * (1.0 / 12 - inv2 * (1.0 / 120 - inv2 * (1.0 / 252 - inv2 * (1.0 / 240 - inv2 / 132))));
  return result + std::log(x) - 0.5 / x - series;
}

// erf^-1(p) for |p| <= 0.5 by Newton's method on erf, from p sqrt(pi) / 2 (converges in a few
// steps: erf is nearly linear there).
inline double InverseErfCentral(double p) {
  constexpr double kTwoOverSqrtPi = 1.1283791670955126;  // 2 / sqrt(pi)
  double x = p / kTwoOverSqrtPi;
  for (int i = 0; i < 20; ++i) {
    const double step = (std::erf(x) - p) / (kTwoOverSqrtPi * std::exp(-x * x));
    x -= step;
    if (std::abs(step) <= 1e-16 * std::abs(x)) break;
  }
  return x;
}

// erfc^-1(q) for q in (0, 2): near q = 1 through erf^-1(1 - q) (exact subtraction there), in the
// lower tail by Newton's method on log(erfc(x)), which stays accurate where erfc is tiny, and in
// the upper tail by symmetry, erfc(-x) = 2 - erfc(x). 0 and 2 give +inf and -inf; outside
// [0, 2], NaN.
inline double InverseErfc(double q) {
  if (std::isnan(q) || q < 0 || q > 2) return std::numeric_limits<double>::quiet_NaN();
  if (q == 0) return std::numeric_limits<double>::infinity();
  if (q == 2) return -std::numeric_limits<double>::infinity();
  if (q > 1.5) return -InverseErfc(2 - q);
  if (q >= 0.5) return InverseErfCentral(1 - q);
  constexpr double kTwoOverSqrtPi = 1.1283791670955126;
  const double log_q = std::log(q);
  double x = std::sqrt(-log_q);
  for (int i = 0; i < 100; ++i) {
    const double erfc_x = std::erfc(x);
    // d log(erfc(x))/dx = -2/sqrt(pi) exp(-x^2) / erfc(x).
    const double slope = -kTwoOverSqrtPi * std::exp(-x * x) / erfc_x;
    const double step = (std::log(erfc_x) - log_q) / slope;
    x -= step;
    if (std::abs(step) <= 1e-16 * std::abs(x)) break;
  }
  return x;
}

// erf^-1(p) for p in [-1, 1]; +-1 give +-inf, outside NaN.
inline double InverseErf(double p) {
  if (std::isnan(p) || std::abs(p) > 1) return std::numeric_limits<double>::quiet_NaN();
  if (std::abs(p) <= 0.5) return InverseErfCentral(p);
  const double magnitude = InverseErfc(1 - std::abs(p));
  return p < 0 ? -magnitude : magnitude;
}

// The standard normal quantile: x with Phi(x) = p, -sqrt(2) erfc^-1(2p).
inline double Ndtri(double p) { return -std::numbers::sqrt2 * InverseErfc(2 * p); }

}  // namespace special
}  // namespace flowstone
