// Element functions for float that loops vectorize: exp, expm1, log, log1p, sigmoid, tanh, erf and
// erfc,
// written without calls and without branches, so that a loop over them (in an FS_MULTIVERSION
// function, see multiversion.h) compiles to AVX2 on CPUs that have it. <cmath>'s functions are
// calls that GCC cannot vectorize, which made Sigmoid and Tanh cost 170-220 us per 8,192 floats.
//
// Selects are integer masks (Select below) rather than `?:` on floats: GCC does not turn a float
// comparison into a vector blend under -ftrapping-math (its default), but does vectorize the
// comparison's result as an integer, so these functions vectorize whatever the including file's
// flags.
//
// Accuracy against the exact result (tests/python/test_vector_math.py measures it over all
// ranges, in units in the last place of the float result): Exp, Sigmoid, Tanh and Erf are within
// 3 ulp, as are Expm1, Log and Log1p, and Erfc within 5; all keep IEEE edge cases: NaN in gives
// NaN, +-inf give their limits, -0.0 keeps its sign where the function is odd, results below
// FLT_MIN are denormals (not flushed), and overflow gives inf. docs/COMPAT.md says how this
// compares with TensorFlow's Eigen.
//
// The bits depend on the clone that runs: GCC contracts the polynomials' multiply-adds into FMAs
// in the AVX2 clone of an FS_MULTIVERSION loop, not in the baseline one (both within the bounds
// above). Two paths that must agree bit for bit (a fused kernel and the ops it replaces) must
// therefore call these from the same kind of function.
//
// The double overloads are <cmath>'s, so templates can call vecmath::Fn(x) for either type.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace flowstone::vecmath {

// c ? a : b, computed with integer masks (vectorizes under -ftrapping-math; see above).
inline float Select(bool c, float a, float b) {
  const uint32_t mask = uint32_t(0) - static_cast<uint32_t>(c);
  return std::bit_cast<float>((std::bit_cast<uint32_t>(a) & mask) |
                              (std::bit_cast<uint32_t>(b) & ~mask));
}

inline double Select(bool c, double a, double b) {
  const uint64_t mask = uint64_t(0) - static_cast<uint64_t>(c);
  return std::bit_cast<double>((std::bit_cast<uint64_t>(a) & mask) |
                               (std::bit_cast<uint64_t>(b) & ~mask));
}

// |x| and x with the sign of s, as bit operations.
inline float AbsBits(float x) {
  return std::bit_cast<float>(std::bit_cast<uint32_t>(x) & 0x7fffffffu);
}
inline float WithSignOf(float magnitude, float s) {
  return std::bit_cast<float>((std::bit_cast<uint32_t>(magnitude) & 0x7fffffffu) |
                              (std::bit_cast<uint32_t>(s) & 0x80000000u));
}

// 2^n for n in [-126, 127], built in the exponent bits.
inline float Pow2(int32_t n) { return std::bit_cast<float>(static_cast<uint32_t>(n + 127) << 23); }

// c[0] x^(N-1) + c[1] x^(N-2) + ... + c[N-1], by Horner's rule from the highest coefficient.
template <size_t N>
inline float Horner(float x, const float (&c)[N]) {
  float p = c[0];
  for (size_t i = 1; i < N; ++i) p = p * x + c[i];
  return p;
}

// e^x. x = n ln2 + r with |r| <= ln2 / 2: n is rounded by adding and subtracting 1.5 * 2^23 (which
// leaves n in the low mantissa bits, so no float-to-int conversion can overflow on NaN), ln2 is
// split in two parts so that n ln2 is exact, and e^r is Cephes' degree-7 minimax polynomial.
// 2^n is applied as two factors 2^(n/2) 2^(n - n/2), each a normal float, so that results down
// to the smallest denormal and up to overflow round once. Inputs are clamped to [-104, 89]
// first, where e^x already rounds to 0 and to inf; NaN passes the clamps (comparisons are false).
inline float Exp(float x) {
  x = Select(x < -104.0f, -104.0f, x);
  x = Select(x > 89.0f, 89.0f, x);
  constexpr float kShift = 12582912.0f;  // 1.5 * 2^23
  const float shifted = x * 1.44269504088896341f + kShift;
  const float n = shifted - kShift;
  const int32_t ni = std::bit_cast<int32_t>(shifted) - std::bit_cast<int32_t>(kShift);
  const float r = (x - n * 0.693359375f) + n * 2.12194440e-4f;
  constexpr float kExpPolynomial[] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                                      4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};
  float p = Horner(r, kExpPolynomial);
  p = p * r * r + r + 1.0f;
  const int32_t half = ni >> 1;
  return p * Pow2(half) * Pow2(ni - half);
}

// e^x - 1. Near 0, where e^x - 1 cancels, its Taylor series to x^10 (for |x| < 1/2 the next term
// is below 2^-34 relative); elsewhere Exp(x) - 1, which loses at most a factor 2.6 in relative
// accuracy there. Zero returns itself (keeping -0.0).
inline float Expm1(float x) {
  constexpr float kTaylorTerms[] = {1.0f / 3628800, 1.0f / 362880, 1.0f / 40320,
                                    1.0f / 5040,    1.0f / 720,    1.0f / 120,
                                    1.0f / 24,      1.0f / 6,      0.5f};
  const float p = Horner(x, kTaylorTerms);
  const float near_zero = Select(x == 0.0f, x, x + x * x * p);
  return Select(AbsBits(x) < 0.5f, near_zero, Exp(x) - 1.0f);
}

// log(w) for normal, finite w > 0: w = 2^e m with m in [sqrt(1/2), sqrt(2)), and
// log(m) = 2 atanh(s) = 2 (s + s^3/3 + ... + s^11/11) with s = (m - 1) / (m + 1), |s| < 0.172
// (the next term is below 2^-34 relative). `extra` (small against log(m)) is added before the
// exponent's part, and e_bias is added to e (for inputs scaled by a power of 2).
inline float LogOfNormal(float w, float extra, float e_bias) {
  // Count from 0x3f3504f3 (sqrt(1/2)), so that the mantissa lands in [sqrt(1/2), sqrt(2)).
  const uint32_t offset = std::bit_cast<uint32_t>(w) - 0x3f3504f3u;
  const float e = static_cast<float>(static_cast<int32_t>(offset) >> 23) + e_bias;
  const float m = std::bit_cast<float>((offset & 0x007fffffu) + 0x3f3504f3u);
  const float s = (m - 1.0f) / (m + 1.0f);
  const float s2 = s * s;
  constexpr float kOddSeries[] = {1.0f / 11, 1.0f / 9, 1.0f / 7, 1.0f / 5, 1.0f / 3};
  const float p = Horner(s2, kOddSeries);
  const float log_m = 2.0f * s + 2.0f * s * s2 * p;
  return (e * 0.693359375f + (log_m + extra)) - e * 2.12194440e-4f;
}

// The natural logarithm. Denormals are scaled by 2^23 first. Below 0 NaN, at +-0 -inf, +inf
// stays inf.
inline float Log(float x) {
  const bool denormal = x < 1.17549435e-38f;
  const float w = Select(denormal, x * 8388608.0f, x);
  float y = LogOfNormal(w, 0.0f, Select(denormal, -23.0f, 0.0f));
  y = Select(x == 0.0f, -INFINITY, y);
  y = Select(x == INFINITY, x, y);  // the bit arithmetic above would not give inf
  return Select((x < 0.0f) | (x != x), NAN, y);
}

// log(1 + x): with w = 1 + x rounded, log(w) plus the first-order correction (x - (w - 1)) / w
// for the rounding of w (w is never denormal). Below -1 NaN, at -1 -inf, +inf stays inf.
inline float Log1p(float x) {
  const float w = 1.0f + x;
  float y = LogOfNormal(w, (x - (w - 1.0f)) / w, 0.0f);
  // Tiny x: 1 + x rounds to 1 and y is x, but the sum above loses the sign of -0.0.
  y = Select(AbsBits(x) < 1e-8f, x, y);
  y = Select(w == 0.0f, -INFINITY, y);
  y = Select(x == INFINITY, x, y);
  return Select((w < 0.0f) | (x != x), NAN, y);
}

// 1 / (1 + e^-x), as e^x / (1 + e^x) for negative x, where e^-x would overflow: with
// e = e^-|x| both are e / (1 + e) or 1 / (1 + e), so very negative x gives denormals, not 0.
inline float Sigmoid(float x) {
  const float e = Exp(-AbsBits(x));
  return Select(x < 0.0f, e, 1.0f) / (1.0f + e);
}

// (1 - t) / (1 + t) with t = e^(-2|x|), and near 0, where that cancels, the Taylor series to
// x^9 (the next term is below 1e-8 relative there).
inline float Tanh(float x) {
  const float a = AbsBits(x);
  const float x2 = x * x;
  const float near_zero =
      x * (1.0f + x2 * (-1.0f / 3 + x2 * (2.0f / 15 + x2 * (-17.0f / 315 + x2 * (62.0f / 2835)))));
  const float t = Exp(-2.0f * a);
  const float m = (1.0f - t) / (1.0f + t);
  return Select(a < 0.25f, near_zero, WithSignOf(m, x));
}

// The Gauss error function. For |x| < 1, x P(x^2); for 1 <= |x| <= 4, 1 - e^(-x^2) R(|x| - 2.5)
// with the sign of x; beyond 4 erf rounds to +-1. P and R are least-squares polynomials fitted
// in float64 to erf(x) / x and erfc(x) e^(x^2) (relative weights, 4,000 Chebyshev nodes).
inline float Erf(float x) {
  const float x2 = x * x;
  constexpr float kNearZero[] = {7.898209878e-05f,  -8.024353883e-04f, 5.190053489e-03f,
                                 -2.685480937e-02f, 1.128361225e-01f,  -3.761262894e-01f,
                                 1.128379226e+00f};
  const float p = Horner(x2, kNearZero);
  const float small = x * p;

  float a = AbsBits(x);
  a = Select(a > 4.0f, 4.0f, a);
  const float u = a - 2.5f;
  constexpr float kTail[] = {1.498133884e-06f,  -6.334183126e-06f, 1.531716225e-05f,
                             -5.384542237e-05f, 2.111083741e-04f,  -7.385663921e-04f,
                             2.467445331e-03f,  -7.999609224e-03f, 2.493780479e-02f,
                             -7.434755564e-02f, 2.108063698e-01f};
  const float r = Horner(u, kTail);
  const float large = WithSignOf(1.0f - r * Exp(-(a * a)), x);
  return Select(a < 1.0f, small, large);
}

// e^(-x^2) to float accuracy for large x, where x^2 rounded would lose it: x = h + l with h
// holding the top 12 bits of x, so h^2 is exact and e^(-x^2) = e^(-h^2) e^(-(2h + l) l).
inline float ExpMinusSquare(float x) {
  const float h = std::bit_cast<float>(std::bit_cast<uint32_t>(x) & 0xfffff000u);
  const float l = x - h;
  return Exp(-(h * h)) * Exp(-((h + h + l) * l));
}

// The complementary error function 1 - erf(x), accurate relative to its value as it goes to 0
// (x up to 10.06, past which it is 0). For |x| >= 1/2, e^(-x^2) R(|x|) with R a least-squares
// polynomial fitted to erfc(x) e^(x^2) (in x - 1.5 on [1/2, 2.5], in 1 / x on [2.5, 10.1]), and
// 2 minus that for negative x; below 1/2, 1 - erf(x). Within 6 ulp.
inline float Erfc(float x) {
  float a = AbsBits(x);
  a = Select(a > 10.1f, 10.1f, a);
  const float u = a - 1.5f;
  constexpr float kMiddle[] = {2.774700260e-05f,  -9.466513438e-05f, 2.206089412e-04f,
                               -6.393129006e-04f, 1.885620062e-03f,  -5.155815743e-03f,
                               1.337803528e-02f,  -3.292918578e-02f, 7.615091652e-02f,
                               -1.636230052e-01f, 3.215854168e-01f};
  const float r1 = Horner(u, kMiddle);
  const float v = 1.0f / a;
  constexpr float kTail[] = {-1.689490527e-01f, 7.058619857e-01f,  -1.112618685e+00f,
                             7.943457365e-01f,  -7.714750618e-02f, -2.718001306e-01f,
                             -8.579866844e-04f, 5.642302036e-01f,  -8.330708283e-07f};
  const float r2 = Horner(v, kTail);
  const float tail = Select(a < 2.5f, r1, r2) * ExpMinusSquare(a);
  const float large = Select(x < 0.0f, 2.0f - tail, tail);
  return Select(a < 0.5f, 1.0f - Erf(x), large);
}

inline double Exp(double x) { return std::exp(x); }
inline double Expm1(double x) { return std::expm1(x); }
inline double Log(double x) { return std::log(x); }
inline double Log1p(double x) { return std::log1p(x); }
inline double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
inline double Tanh(double x) { return std::tanh(x); }
inline double Erf(double x) { return std::erf(x); }
inline double Erfc(double x) { return std::erfc(x); }

}  // namespace flowstone::vecmath
