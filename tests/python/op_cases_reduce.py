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


CASES = [
    Case("Sum", [rand(2, 3, 4), _axes(0, 2)], lambda x, a: x.sum(axis=(0, 2))),
    Case("Sum", [rand(2, 3), _axes(-1, dtype=np.int64)], lambda x, a: x.sum(axis=1, keepdims=True),
         attrs={"keep_dims": True}),
    Case("Mean", [rand(3, 4), _axes(0)], lambda x, a: x.mean(axis=0)),
    Case("Mean", [np.array([[-3, 4], [-3, -4]], np.int32), _axes(1)],
         lambda x, a: np.array([0, -3], np.int32)),
    Case("Max", [rand(2, 3, 4), _axes(1)], lambda x, a: x.max(axis=1)),
    Case("Min", [rand(2, 3), _axes(0, 1)], lambda x, a: x.min()),
    Case("Prod", [rand(3, 4, low=0.5, high=1.5), _axes(1)], lambda x, a: x.prod(axis=1)),
    Case("ArgMax", [rand(3, 4), np.array(1, np.int32)], lambda x, a: x.argmax(axis=1)),
    Case("ArgMin", [rand(3, 4), np.array(0, np.int32)],
         lambda x, a: x.argmin(axis=0).astype(np.int32), attrs={"output_type": dtypes.int32}),
    Case("MatMul", [rand(3, 4), rand(4, 5)], np.matmul),
    Case("MatMul", [rand(4, 3), rand(5, 4)], lambda a, b: a.T @ b.T,
         attrs={"transpose_a": True, "transpose_b": True}),
    Case("BatchMatMulV2", [rand(2, 1, 3, 4), rand(3, 4, 2)], np.matmul),
    Case("BatchMatMulV2", [rand(2, 4, 3), rand(2, 5, 4)],
         lambda a, b: np.matmul(np.swapaxes(a, 1, 2), np.swapaxes(b, 1, 2)),
         attrs={"adj_x": True, "adj_y": True}),
    Case("Softmax", [rand(3, 5)], lambda x: np.exp(_log_softmax(x))),
    Case("LogSoftmax", [rand(2, 3, 4)], _log_softmax),
]

EXEMPT = {
    op: "tests/python/test_random_ops.py (shapes, statistics, seeds, concurrency)"
    for op in ["RandomStandardNormal", "RandomUniform", "RandomUniformInt", "TruncatedNormal"]
}

# Differentiable ops of this family whose gradients come with the training work.
GRADIENT_PENDING = {"Sum", "Mean", "Max", "Min", "Prod", "MatMul", "BatchMatMulV2", "Softmax",
                    "LogSoftmax"}
