"""Conformance cases (see op_cases.py) for tf.math's functions beyond arithmetic: trigonometric,
hyperbolic and special functions, floating-point tests, xlogy and friends, truncating division,
bitwise ops, and the logical reductions Any and All."""

import numpy as np
from scipy import special

from op_cases import Case, rand


def _ints(*shape, low=-9, high=9, dtype=np.int32, nonzero=False):
    values = np.random.default_rng(5).integers(low, high + 1, size=shape).astype(dtype)
    if nonzero:
        values[values == 0] = 1
    return values


def _away_from_zero(*shape):
    x = rand(*shape)
    return np.where(np.abs(x) < 0.2, 0.5, x)


def _softplus(x):
    return np.logaddexp(0, x)


_SPECIAL_VALUES = np.array([np.nan, np.inf, -np.inf, 0.0, -1.5, 3.0])
# TensorFlow's gradients of xlogy and friends with respect to x are 0 where x is 0 (there the
# finite difference sees log(y)), so the gradient cases avoid x == 0 and the value cases have it.
_WITH_ZEROS = np.array([[0.0, 0.5, 2.0], [1.5, 0.0, -1.0]])
_NONZERO = np.array([[0.3, 0.5, 2.0], [1.5, -0.7, -1.0]])
# Halves round to even, others to the nearest integer.
_HALVES = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 1.2, -3.7])

CASES = [
    Case("Sin", [rand(2, 3, low=-3, high=3)], np.sin, grad=[0]),
    Case("Cos", [rand(2, 3, low=-3, high=3)], np.cos, grad=[0]),
    Case("Tan", [rand(2, 3)], np.tan, grad=[0]),
    Case("Asin", [rand(2, 3, low=-0.9, high=0.9)], np.arcsin, grad=[0]),
    Case("Acos", [rand(2, 3, low=-0.9, high=0.9)], np.arccos, grad=[0]),
    Case("Atan", [rand(2, 3, low=-3, high=3)], np.arctan, grad=[0]),
    Case("Sinh", [rand(2, 3, low=-2, high=2)], np.sinh, grad=[0]),
    Case("Cosh", [rand(2, 3, low=-2, high=2)], np.cosh, grad=[0]),
    Case("Asinh", [rand(2, 3, low=-3, high=3)], np.arcsinh, grad=[0]),
    Case("Acosh", [rand(2, 3, low=1.2, high=4)], np.arccosh, grad=[0]),
    Case("Atanh", [rand(2, 3, low=-0.9, high=0.9)], np.arctanh, grad=[0]),
    Case("Erf", [rand(2, 3, low=-2, high=2)], special.erf, grad=[0]),
    Case("Erfc", [rand(2, 3, low=-2, high=4)], special.erfc, grad=[0]),
    Case("Lgamma", [rand(2, 3, low=0.2, high=6)], special.gammaln, grad=[0]),
    # Negative non-integers use the reflection formula; poles give NaN.
    Case("Digamma", [np.array([0.3, 1.0, 2.5, 7.0, 40.0, -0.5, -2.3])], special.digamma,
         rtol=1e-12, grad=[0]),
    Case("Digamma", [np.array([0.0, -1.0, -3.0], np.float32)],
         lambda x: np.full(3, np.nan, np.float32)),
    Case("Digamma", [rand(2, 3, low=0.5, high=4).astype(np.float32)],
         lambda x: special.digamma(x).astype(np.float32), rtol=1e-5),
    Case("BesselI0", [rand(2, 3, low=-4, high=4)], special.i0, rtol=1e-12, grad=[0]),
    Case("BesselI1", [rand(2, 3, low=-4, high=4)], special.i1, rtol=1e-12, grad=[0]),
    Case("BesselI0e", [rand(2, 3, low=-4, high=4)], special.i0e, rtol=1e-12, grad=[0]),
    Case("BesselI1e", [rand(2, 3, low=-4, high=4)], special.i1e, rtol=1e-12, grad=[0]),
    # At 0 (where the gradients of I1 and I1e are 1/2) and past where I overflows.
    Case("BesselI1", [np.array([0.0, 0.5])], special.i1, grad=[0]),
    Case("BesselI1e", [np.array([0.0, -0.5])], special.i1e, grad=[0]),
    Case("BesselI0e", [np.array([650.0, 800.0, -1e4, 1e6])], special.i0e, rtol=1e-12),
    Case("BesselI1e", [np.array([650.0, -800.0, 1e4], np.float32)],
         lambda x: special.i1e(x.astype(np.float64)).astype(np.float32), rtol=1e-6),
    # The centre, both tails (Newton on log(erfc) there), the ends and outside the domain.
    Case("Erfinv", [rand(2, 3, low=-0.99, high=0.99)], special.erfinv, rtol=1e-13, grad=[0]),
    Case("Erfinv", [np.array([1e-12, -0.3, 0.5, 0.75, -0.999999, 1 - 1e-15, 1.0, -1.0, 1.5])],
         special.erfinv, rtol=1e-12),
    Case("Ndtri", [rand(2, 3, low=0.01, high=0.99)], special.ndtri, rtol=1e-13, grad=[0]),
    Case("Ndtri", [np.array([1e-300, 1e-20, 0.3, 0.5, 0.5 + 1e-12, 0.97, 1 - 1e-12, 0.0, 1.0,
                             -0.1])], special.ndtri, rtol=1e-12),
    Case("Ndtri", [np.array([0.025, 0.5, 0.999], np.float32)],
         lambda p: special.ndtri(p.astype(np.float64)).astype(np.float32), rtol=1e-6),
    Case("Reciprocal", [_away_from_zero(2, 3)], np.reciprocal, grad=[0]),
    Case("Inv", [_away_from_zero(2, 3)], np.reciprocal, grad=[0]),
    Case("Expm1", [rand(2, 3, low=-2, high=2)], np.expm1, grad=[0]),
    Case("Rint", [_HALVES], np.rint),
    Case("Softplus", [rand(2, 3, low=-4, high=4)], _softplus, grad=[0]),
    # Past TensorFlow's thresholds: x itself for large x, exp(x) for very negative x.
    Case("Softplus", [np.array([-50.0, -30.0, 30.0, 50.0, 800.0])], _softplus, rtol=1e-12),
    Case("Softplus", [np.array([-20.0, -5.0, 0.0, 15.0, 100.0], np.float32)],
         lambda x: _softplus(x.astype(np.float64)).astype(np.float32), rtol=1e-6),
    Case("Softsign", [rand(2, 3, low=-3, high=3)], lambda x: x / (1 + np.abs(x)), grad=[0]),
    Case("IsNan", [_SPECIAL_VALUES], np.isnan),
    Case("IsInf", [_SPECIAL_VALUES.astype(np.float32)], np.isinf),
    Case("IsFinite", [_SPECIAL_VALUES], np.isfinite),
    Case("Invert", [_ints(2, 3)], np.invert),
    Case("Invert", [_ints(4, low=0, high=255, dtype=np.uint8)], np.invert),
    # Binary functions, with broadcasting.
    Case("Atan2", [rand(2, 3), _away_from_zero(3)], np.arctan2, grad=[0, 1]),
    Case("Atan2", [np.array([1.0, -1.0, 0.0, -0.0]), np.array([-1.0, -1.0, -1.0, -1.0])],
         np.arctan2),
    Case("Xlogy", [_WITH_ZEROS, rand(3, low=0.2, high=2)],
         lambda x, y: np.where(x == 0, 0.0, x * np.log(y)), grad=[1]),
    Case("Xlogy", [_NONZERO, rand(3, low=0.2, high=2)], lambda x, y: x * np.log(y), grad=[0, 1]),
    # 0 * log(0) is 0 here, not NaN.
    Case("Xlogy", [np.array([0.0, 0.0, 1.0]), np.array([0.0, -1.0, 2.0])],
         lambda x, y: np.array([0.0, 0.0, np.log(2.0)])),
    Case("Xdivy", [_WITH_ZEROS, _away_from_zero(3)],
         lambda x, y: np.where(x == 0, 0.0, x / y), grad=[1]),
    Case("Xdivy", [_NONZERO, _away_from_zero(3)], lambda x, y: x / y, grad=[0, 1]),
    Case("Xlog1py", [_WITH_ZEROS, rand(3, low=-0.5, high=2)],
         lambda x, y: np.where(x == 0, 0.0, x * np.log1p(y)), grad=[1]),
    Case("Xlog1py", [_NONZERO, rand(3, low=-0.5, high=2)], lambda x, y: x * np.log1p(y),
         grad=[0, 1]),
    Case("TruncateDiv", [np.array([7, -7, 7, -7, -2147483648], np.int32),
                         np.array([2, 2, -2, -2, -1], np.int32)],
         lambda a, b: np.array([3, -3, -3, 3, -2147483648], np.int32)),
    Case("TruncateDiv", [rand(2, 3, low=-9, high=9), _away_from_zero(3)],
         lambda a, b: np.trunc(a / b)),
    Case("TruncateMod", [_ints(2, 3), _ints(3, nonzero=True)], np.fmod),
    Case("TruncateMod", [rand(2, 3, low=-9, high=9), _away_from_zero(3)], np.fmod),
    Case("BitwiseAnd", [_ints(2, 3), _ints(3)], np.bitwise_and),
    Case("BitwiseOr", [_ints(2, 3, dtype=np.int64), _ints(2, 1, dtype=np.int64)], np.bitwise_or),
    Case("BitwiseXor", [_ints(3, low=0, high=255, dtype=np.uint8),
                        _ints(3, low=0, high=255, dtype=np.uint8)], np.bitwise_xor),
    # Shift counts outside [0, bits) are clamped into it.
    Case("LeftShift", [np.array([1, 3, -1, 5, 1], np.int32), np.array([0, 4, 3, -2, 40], np.int32)],
         lambda a, b: np.array([1, 48, -8, 5, -2147483648], np.int32)),
    Case("RightShift", [np.array([64, -64, 7, 1 << 30], np.int32),
                        np.array([3, 3, -1, 99], np.int32)],
         lambda a, b: np.array([8, -8, 7, 0], np.int32)),
    # Logical reductions.
    Case("Any", [rand(2, 3, 4) > 0.5, np.array([1], np.int32)], lambda x, a: x.any(axis=1)),
    Case("Any", [np.zeros((2, 0), bool), np.array([1], np.int32)], lambda x, a: np.zeros(2, bool)),
    Case("All", [rand(2, 3, 4) > -0.5, np.array([0, 2], np.int64)],
         lambda x, a: x.all(axis=(0, 2), keepdims=True), attrs={"keep_dims": True}),
    Case("All", [np.zeros((0, 3), bool), np.array([0], np.int32)], lambda x, a: np.ones(3, bool)),
]

# Special functions of two arguments; TensorFlow differentiates them in the second only.
CASES += [
    Case("Zeta", [np.array([2.0, 3.0, 4.5, 1.5, 30.0]), np.array([1.0, 0.5, 2.0, 10.0, 1.2])],
         special.zeta, rtol=1e-12, grad=[1]),
    # A pole at s == 1 and q == 0, outside the domain below s == 1 and for non-integer s at q < 0.
    Case("Zeta", [np.array([1.0, 2.0, 0.5, 2.5, 2.0]), np.array([1.0, 0.0, 1.0, -1.5, -1.5])],
         lambda s, q: np.array([np.inf, np.inf, np.nan, np.nan, special.zeta(2.0, -1.5)])),
    Case("Polygamma", [np.array([[0.0], [1.0], [2.0], [3.0]]), rand(3, low=0.3, high=5)],
         special.polygamma, rtol=1e-11, grad=[1]),
    Case("Polygamma",
         [np.array([1.5, -1.0, 1.0], np.float32), np.array([2.0, 2.0, 0.5], np.float32)],
         lambda a, x: np.array([np.nan, np.nan, special.polygamma(1, 0.5)], np.float32), rtol=1e-6),
]

# Every differentiable op of this family has its gradient.
GRADIENT_PENDING = set()
