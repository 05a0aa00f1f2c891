"""Conformance cases for the elementwise op family (see op_cases.py): binary arithmetic,
unary math, comparisons and logic, Cast, SelectV2 and Where."""

import numpy as np

from flowstone import dtypes
from op_cases import Case, rand


def _ints(*shape, low=-9, high=9, dtype=np.int32, nonzero=False):
    values = np.random.default_rng(99).integers(low, high + 1, size=shape).astype(dtype)
    if nonzero:
        values[values == 0] = 1
    return values


def _away_from_zero(*shape):
    x = rand(*shape)
    return np.where(np.abs(x) < 0.1, 0.5, x)


def _away_from_half(*shape):
    """Values whose rounding, floor and ceiling do not change under a tiny perturbation."""
    return np.floor(rand(*shape, low=-5, high=5)) + 0.3


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


CASES = [
    # Binary arithmetic, with broadcasting.
    Case("AddV2", [rand(2, 3), rand(3)], np.add, grad=[0, 1]),
    Case("AddV2", [_ints(2, 3), _ints(2, 1)], np.add),
    Case("Sub", [rand(2, 1), rand(1, 3)], np.subtract, grad=[0, 1]),
    Case("Mul", [rand(2, 3), rand()], np.multiply, grad=[0, 1]),
    Case("Mul", [_ints(4, dtype=np.int64), _ints(4, dtype=np.int64)], np.multiply),
    Case("RealDiv", [rand(2, 3), _away_from_zero(3)], np.true_divide, grad=[0, 1]),
    Case("Div", [rand(3), _away_from_zero(3)], np.true_divide, grad=[0, 1]),
    Case("Div", [np.array([7, -7, 7, -7], np.int32), np.array([2, 2, -2, -2], np.int32)],
         lambda a, b: np.array([3, -3, -3, 3], np.int32)),
    Case("FloorDiv", [_ints(2, 3), _ints(3, nonzero=True)], np.floor_divide),
    Case("FloorDiv", [rand(2, 3), _away_from_zero(2, 3)], np.floor_divide),
    Case("FloorMod", [_ints(2, 3), _ints(3, nonzero=True)], np.mod),
    Case("FloorMod", [rand(2, 3), _away_from_zero(2, 3)], np.mod, grad=[0, 1]),
    Case("Pow", [rand(2, 3, low=0.5, high=2.0), rand(3)], np.power, grad=[0, 1]),
    Case("Pow", [_ints(2, 3, low=-4, high=4), _ints(3, low=0, high=4)], np.power),
    Case("Maximum", [rand(2, 3), rand(3)], np.maximum, grad=[0, 1]),
    Case("Minimum", [_ints(2, 3, dtype=np.uint8, low=0), _ints(1, dtype=np.uint8, low=0)],
         np.minimum),
    Case("SquaredDifference", [rand(2, 3), rand(2, 1)], lambda a, b: (a - b) ** 2,
         grad=[0, 1]),
    # Unary math.
    Case("Neg", [rand(2, 3)], np.negative, grad=[0]),
    Case("Abs", [_away_from_zero(2, 3)], np.abs, grad=[0]),
    Case("Square", [rand(2, 3)], np.square, grad=[0]),
    Case("Sqrt", [rand(2, 3, low=0.1, high=2.0)], np.sqrt, grad=[0]),
    Case("Rsqrt", [rand(2, 3, low=0.1, high=2.0)], lambda x: 1 / np.sqrt(x), grad=[0]),
    Case("Exp", [rand(2, 3)], np.exp, grad=[0]),
    Case("Log", [rand(2, 3, low=0.1, high=2.0)], np.log, grad=[0]),
    Case("Log1p", [rand(2, 3, low=-0.5, high=2.0)], np.log1p, grad=[0]),
    Case("Sign", [_away_from_zero(2, 3)], np.sign, grad=[0]),
    Case("Floor", [_away_from_half(2, 3)], np.floor),
    Case("Ceil", [_away_from_half(2, 3)], np.ceil),
    Case("Round", [np.array([0.5, 1.5, 2.5, -0.5, -2.5, 1.2])], np.round),
    Case("Sigmoid", [rand(2, 3, low=-5, high=5)], _sigmoid, grad=[0]),
    Case("Tanh", [rand(2, 3)], np.tanh, grad=[0]),
    Case("Relu", [_away_from_zero(2, 3)], lambda x: np.maximum(x, 0), grad=[0]),
    # Comparisons and logic.
    Case("Equal", [_ints(2, 3, low=0, high=2), _ints(3, low=0, high=2)], np.equal),
    Case("NotEqual", [_ints(2, 3, low=0, high=2), _ints(3, low=0, high=2)], np.not_equal),
    Case("Less", [rand(2, 3), rand(3)], np.less),
    Case("LessEqual", [_ints(2, 3), _ints(2, 1)], np.less_equal),
    Case("Greater", [rand(2, 3), rand(2, 1)], np.greater),
    Case("GreaterEqual", [_ints(3), _ints(3)], np.greater_equal),
    Case("LogicalAnd", [rand(2, 3) > 0, rand(3) > 0], np.logical_and),
    Case("LogicalOr", [rand(2, 3) > 0, rand(2, 1) > 0], np.logical_or),
    Case("LogicalNot", [rand(2, 3) > 0], np.logical_not),
    # Conversion and selection.
    Case("Cast", [rand(2, 3)], lambda x: x.astype(np.float32), attrs={"DstT": dtypes.float32},
         rtol=1e-7),
    Case("Cast", [rand(2, 3, low=-9, high=9)], lambda x: np.trunc(x).astype(np.int32),
         attrs={"DstT": dtypes.int32}),
    Case("Cast", [_ints(2, 3)], lambda x: x != 0, attrs={"DstT": dtypes.bool}),
    Case("SelectV2", [rand(2, 3) > 0, rand(2, 3), rand(3)], np.where, grad=[1, 2]),
    Case("Where", [rand(2, 3) > 0], np.argwhere),
]

# Gradients where inputs were broadcast: each input's gradient must be summed back to its shape.
# (Appended here so that the random inputs of the cases above stay as they were.)
CASES += [
    Case("AddV2", [rand(3, 1), rand(1, 4)], np.add, grad=[0, 1]),
    Case("AddV2", [rand(), rand(2, 3)], np.add, grad=[0, 1]),
    Case("Sub", [rand(2, 3), rand()], np.subtract, grad=[0, 1]),
    Case("Mul", [rand(3, 1), rand(1, 4)], np.multiply, grad=[0, 1]),
    Case("RealDiv", [rand(3, 1), _away_from_zero(1, 4)], np.true_divide, grad=[0, 1]),
    Case("Div", [rand(2, 3), _away_from_zero()], np.true_divide, grad=[0, 1]),
    # x / y stays well away from integers, where x mod y jumps.
    Case("FloorMod", [np.array([[-2.3], [0.4], [1.7]]), np.array([[0.7, -1.1, 2.5, -0.45]])],
         np.mod, grad=[0, 1]),
    Case("Pow", [rand(3, 1, low=0.5, high=2.0), rand(1, 4)], np.power, grad=[0, 1]),
    # A zero base: both gradients are 0 there (not NaN from 0 * log(0)).
    Case("Pow", [np.array([0.0, 0.5, 2.0]), np.array([2.0, 1.5, 3.0])], np.power, grad=[0, 1]),
    Case("Maximum", [rand(3, 1), rand(1, 4)], np.maximum, grad=[0, 1]),
    Case("Minimum", [rand(2, 3), rand()], np.minimum, grad=[0, 1]),
    Case("Minimum", [rand(3, 1), rand(1, 4)], np.minimum, grad=[0, 1]),
    Case("SquaredDifference", [rand(), rand(2, 3)], lambda a, b: (a - b) ** 2, grad=[0, 1]),
    Case("Cast", [rand(2, 3)], lambda x: x, attrs={"DstT": dtypes.float64}, grad=[0]),
    Case("SelectV2", [rand(3, 1) > 0, rand(1, 4), rand()], np.where, grad=[1, 2]),
    Case("SelectV2", [rand(2, 3) > 0, rand(), rand(2, 3)], np.where, grad=[1, 2]),
]

# TF1's Select: a condition of the values' shape, or a vector that picks rows.
CASES += [
    Case("Select", [rand(2, 3) > 0, rand(2, 3), rand(2, 3)], np.where, grad=[1, 2]),
    Case("Select", [rand(3) > 0, rand(3, 2), rand(3, 2)],
         lambda c, t, e: np.where(c[:, None], t, e), grad=[1, 2]),
]

# No gradient defined for these in TensorFlow; the family marks them .NotDifferentiable().
NOT_DIFFERENTIABLE = {
    "FloorDiv", "Floor", "Ceil", "Round", "LogicalNot", "Equal", "NotEqual", "Less",
    "LessEqual", "Greater", "GreaterEqual", "LogicalAnd", "LogicalOr", "Where",
}

# Differentiable ops of this family whose gradients are still to be written.
GRADIENT_PENDING = set()
