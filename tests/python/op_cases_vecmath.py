"""Conformance cases (see op_cases.py) for TensorFlow's gradient ops of the unary math family
(src/ops/math/unary_grad_ops.cc): their values against numpy in float64 and complex128, and their
own gradients (second derivatives of Tanh, Sigmoid, ...) against finite differences."""

import numpy as np

from op_cases import Case, rand


def _crand(*shape):
    return rand(*shape) + 1j * rand(*shape)


_DY = rand(2, 3)
_Y_TANH = np.tanh(rand(2, 3))
_Y_SIGMOID = 1 / (1 + np.exp(-rand(2, 3, low=-3, high=3)))
_Y_POSITIVE = rand(2, 3, low=0.5, high=2.0)
_X = rand(2, 3, low=-3, high=3)
_CY = _crand(2, 3)
_CDY = _crand(2, 3)

CASES = [
    Case("TanhGrad", [_Y_TANH, _DY], lambda y, dy: dy * (1 - y * y), grad=[0, 1]),
    Case("SigmoidGrad", [_Y_SIGMOID, _DY], lambda y, dy: dy * y * (1 - y), grad=[0, 1]),
    Case("SqrtGrad", [_Y_POSITIVE, _DY], lambda y, dy: 0.5 * dy / y, grad=[0, 1]),
    Case("RsqrtGrad", [_Y_POSITIVE, _DY], lambda y, dy: -0.5 * dy * y ** 3, grad=[0, 1]),
    Case("ReciprocalGrad", [_Y_POSITIVE, _DY], lambda y, dy: -dy * y * y, grad=[0, 1]),
    Case("InvGrad", [_Y_POSITIVE, _DY], lambda y, dy: -dy * y * y, grad=[0, 1]),
    Case("SoftplusGrad", [_DY, _X], lambda g, x: g / (np.exp(-x) + 1), grad=[0, 1]),
    Case("SoftsignGrad", [_DY, _X], lambda g, x: g / (np.abs(x) + 1) ** 2, grad=[0, 1]),
    # Complex: Sqrt, Rsqrt and Reciprocal's ops conjugate y themselves; Tanh and Sigmoid's take
    # it conjugated already, as in TensorFlow.
    Case("TanhGrad", [_CY, _CDY], lambda y, dy: dy * (1 - y * y)),
    Case("SigmoidGrad", [_CY, _CDY], lambda y, dy: dy * y * (1 - y)),
    Case("SqrtGrad", [_CY, _CDY], lambda y, dy: 0.5 * dy / np.conj(y)),
    Case("RsqrtGrad", [_CY, _CDY], lambda y, dy: -0.5 * dy * np.conj(y) ** 3),
    Case("ReciprocalGrad", [_CY, _CDY], lambda y, dy: -dy * np.conj(y) ** 2),
    # float32 on a length that is not a multiple of the vector width.
    Case("TanhGrad", [_Y_TANH.ravel()[:5].astype(np.float32), _DY.ravel()[:5].astype(np.float32)],
         lambda y, dy: dy * (1 - y * y), rtol=1e-6),
]

# TensorFlow's graphs may carry int64 shapes (attr T); the axes come back in that dtype.
CASES += [
    Case("BroadcastGradientArgs", [np.array([2, 1, 3], np.int64), np.array([4, 1], np.int64)],
         lambda a, b: (np.array([1], np.int64), np.array([0, 2], np.int64)), outputs=2),
]
