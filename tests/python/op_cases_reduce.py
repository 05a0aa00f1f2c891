"""Conformance cases (see op_cases.py) for reductions, ArgMax/ArgMin, MatMul/BatchMatMulV2,
Softmax/LogSoftmax; the random ops are exempt (their values are checked statistically in
test_random_ops.py)."""

import numpy as np

from flowstone import dtypes
from op_cases import Case, rand


def _axes(*axes, dtype=np.int32):
    return np.array(axes, dtype)


def _log_softmax(x):
    shifted = x - x.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


# Max/Min inputs with a two-way tie in some rows: central differences then see half the slope at
# each tied element, which is how the gradient splits it.
_TIED = np.array([[0.3, 0.9, 0.9, -0.2], [0.5, -0.4, 0.1, -0.4], [0.7, 0.2, 0.6, -0.1]])
# Prod over rows with no zero, one zero and two zeros.
_ZEROS = np.array([[0.5, 0.0, 1.5, 1.2], [0.0, 1.2, 0.0, 0.7], [1.1, 0.9, 1.3, 0.8]])


def _t(x):
    return np.swapaxes(x, -1, -2)


CASES = [
    Case("Sum", [rand(2, 3, 4), _axes(0, 2)], lambda x, a: x.sum(axis=(0, 2)), grad=[0]),
    Case("Sum", [rand(2, 3), _axes(-1, dtype=np.int64)], lambda x, a: x.sum(axis=1, keepdims=True),
         attrs={"keep_dims": True}, grad=[0]),
    Case("Sum", [rand(3, 2), _axes()], lambda x, a: x, grad=[0]),
    Case("Mean", [rand(3, 4), _axes(0)], lambda x, a: x.mean(axis=0), grad=[0]),
    Case("Mean", [rand(2, 3, 2), _axes(2, 0)], lambda x, a: x.mean(axis=(0, 2), keepdims=True),
         attrs={"keep_dims": True}, grad=[0]),
    Case("Mean", [np.array([[-3, 4], [-3, -4]], np.int32), _axes(1)],
         lambda x, a: np.array([0, -3], np.int32)),
    Case("Max", [rand(2, 3, 4), _axes(1)], lambda x, a: x.max(axis=1), grad=[0]),
    Case("Max", [_TIED, _axes(1)], lambda x, a: x.max(axis=1), grad=[0]),
    Case("Min", [rand(2, 3), _axes(0, 1)], lambda x, a: x.min(), grad=[0]),
    Case("Min", [_TIED, _axes(-1)], lambda x, a: x.min(axis=1, keepdims=True),
         attrs={"keep_dims": True}, grad=[0]),
    Case("Prod", [rand(3, 4, low=0.5, high=1.5), _axes(1)], lambda x, a: x.prod(axis=1), grad=[0]),
    Case("Prod", [_ZEROS, _axes(1)], lambda x, a: x.prod(axis=1), grad=[0]),
    Case("Prod", [_ZEROS, _axes(0, 1)], lambda x, a: x.prod(), grad=[0]),
    Case("ArgMax", [rand(3, 4), np.array(1, np.int32)], lambda x, a: x.argmax(axis=1)),
    Case("ArgMin", [rand(3, 4), np.array(0, np.int32)],
         lambda x, a: x.argmin(axis=0).astype(np.int32), attrs={"output_type": dtypes.int32}),
    Case("MatMul", [rand(3, 4), rand(4, 5)], np.matmul, grad=[0, 1]),
    Case("MatMul", [rand(3, 4), rand(5, 4)], lambda a, b: a @ b.T,
         attrs={"transpose_b": True}, grad=[0, 1]),
    Case("MatMul", [rand(4, 3), rand(4, 5)], lambda a, b: a.T @ b,
         attrs={"transpose_a": True}, grad=[0, 1]),
    Case("MatMul", [rand(4, 3), rand(5, 4)], lambda a, b: a.T @ b.T,
         attrs={"transpose_a": True, "transpose_b": True}, grad=[0, 1]),
    Case("BatchMatMulV2", [rand(2, 1, 3, 4), rand(3, 4, 2)], np.matmul, grad=[0, 1]),
    Case("BatchMatMulV2", [rand(2, 4, 3), rand(2, 5, 4)], lambda a, b: np.matmul(_t(a), _t(b)),
         attrs={"adj_x": True, "adj_y": True}, grad=[0, 1]),
    Case("BatchMatMulV2", [rand(3, 2), rand(2, 2, 4)], np.matmul, grad=[0, 1]),
    Case("BatchMatMulV2", [rand(1, 4, 3), rand(2, 4, 5)], lambda a, b: np.matmul(_t(a), b),
         attrs={"adj_x": True}, grad=[0, 1]),
    Case("BatchMatMulV2", [rand(2, 3, 4), rand(1, 5, 4)], lambda a, b: np.matmul(a, _t(b)),
         attrs={"adj_y": True}, grad=[0, 1]),
    Case("Softmax", [rand(3, 5)], lambda x: np.exp(_log_softmax(x)), grad=[0]),
    Case("LogSoftmax", [rand(2, 3, 4)], _log_softmax, grad=[0]),
]

EXEMPT = {
    op: "tests/python/test_random_ops.py (shapes, statistics, seeds, concurrency)"
    for op in ["RandomStandardNormal", "RandomUniform", "RandomUniformInt", "TruncatedNormal",
               "StatelessRandomUniform", "StatelessRandomNormal", "StatelessTruncatedNormal",
               "StatelessRandomUniformInt"]
}

# Every differentiable op of this family has its gradient.
GRADIENT_PENDING = set()
