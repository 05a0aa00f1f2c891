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
    Case("AddV2", [rand(2, 3), rand(3)], np.add),
    Case("AddV2", [_ints(2, 3), _ints(2, 1)], np.add),
    Case("Sub", [rand(2, 1), rand(1, 3)], np.subtract),
    Case("Mul", [rand(2, 3), rand()], np.multiply),
    Case("Mul", [_ints(4, dtype=np.int64), _ints(4, dtype=np.int64)], np.multiply),
    Case("RealDiv", [rand(2, 3), _away_from_zero(3)], np.true_divide),
    Case("Div", [rand(3), _away_from_zero(3)], np.true_divide),
    Case("Div", [np.array([7, -7, 7, -7], np.int32), np.array([2, 2, -2, -2], np.int32)],
         lambda a, b: np.array([3, -3, -3, 3], np.int32)),
    Case("FloorDiv", [_ints(2, 3), _ints(3, nonzero=True)], np.floor_divide),
    Case("FloorDiv", [rand(2, 3), _away_from_zero(2, 3)], np.floor_divide),
    Case("FloorMod", [_ints(2, 3), _ints(3, nonzero=True)], np.mod),
    Case("FloorMod", [rand(2, 3), _away_from_zero(2, 3)], np.mod),
    Case("Pow", [rand(2, 3, low=0.5, high=2.0), rand(3)], np.power),
    Case("Pow", [_ints(2, 3, low=-4, high=4), _ints(3, low=0, high=4)], np.power),
    Case("Maximum", [rand(2, 3), rand(3)], np.maximum),
    Case("Minimum", [_ints(2, 3, dtype=np.uint8, low=0), _ints(1, dtype=np.uint8, low=0)],
         np.minimum),
    Case("SquaredDifference", [rand(2, 3), rand(2, 1)], lambda a, b: (a - b) ** 2),
    # Unary math.
    Case("Neg", [rand(2, 3)], np.negative),
    Case("Abs", [_away_from_zero(2, 3)], np.abs),
    Case("Square", [rand(2, 3)], np.square),
    Case("Sqrt", [rand(2, 3, low=0.1, high=2.0)], np.sqrt),
    Case("Rsqrt", [rand(2, 3, low=0.1, high=2.0)], lambda x: 1 / np.sqrt(x)),
    Case("Exp", [rand(2, 3)], np.exp),
    Case("Log", [rand(2, 3, low=0.1, high=2.0)], np.log),
    Case("Log1p", [rand(2, 3, low=-0.5, high=2.0)], np.log1p),
    Case("Sign", [rand(2, 3)], np.sign),
    Case("Floor", [_away_from_half(2, 3)], np.floor),
    Case("Ceil", [_away_from_half(2, 3)], np.ceil),
    Case("Round", [np.array([0.5, 1.5, 2.5, -0.5, -2.5, 1.2])], np.round),
    Case("Sigmoid", [rand(2, 3, low=-5, high=5)], _sigmoid),
    Case("Tanh", [rand(2, 3)], np.tanh),
    Case("Relu", [_away_from_zero(2, 3)], lambda x: np.maximum(x, 0)),
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
    Case("SelectV2", [rand(2, 3) > 0, rand(2, 3), rand(3)], np.where),
    Case("Where", [rand(2, 3) > 0], np.argwhere),
]

# No gradient defined for these in TensorFlow; the family marks them .NotDifferentiable().
NOT_DIFFERENTIABLE = {
    "FloorDiv", "Sign", "Floor", "Ceil", "Round", "LogicalNot", "Equal", "NotEqual", "Less",
    "LessEqual", "Greater", "GreaterEqual", "LogicalAnd", "LogicalOr", "Where",
}

# Differentiable ops of this family whose gradients are still to be written.
GRADIENT_PENDING = {case.op for case in CASES} - NOT_DIFFERENTIABLE
