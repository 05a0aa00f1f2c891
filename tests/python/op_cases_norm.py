"""Conformance cases for the normalization ops LRN and FusedBatchNormV3 and their gradients (see
op_cases.py)."""

import numpy as np

from norm_reference import batch_norm_grad_ref, batch_norm_ref, lrn_grad_ref, lrn_ref
from op_cases import Case, rand


_LRN = {"depth_radius": 2, "bias": 1.5, "alpha": 0.3, "beta": 0.75}
_LRN_X = rand(2, 2, 3, 6)


_BN_X = rand(2, 3, 2, 4)
_BN_SCALE, _BN_OFFSET = rand(4, low=0.5, high=1.5), rand(4)
_BN_MEAN, _BN_VAR = rand(4), rand(4, low=0.5, high=1.5)
_EMPTY = np.zeros(0)
_NCHW = {"data_format": "NCHW"}


CASES = [
    Case("LRN", [_LRN_X], lambda x: lrn_ref(x, **_LRN), _LRN, grad=[0]),
    Case("LRN", [_LRN_X.astype(np.float32)], lambda x: lrn_ref(x).astype(np.float32),
         rtol=1e-5),
    Case("LRNGrad", [rand(2, 2, 3, 6), _LRN_X, lrn_ref(_LRN_X, **_LRN)],
         lambda g, x, y: lrn_grad_ref(g, x, **_LRN), _LRN),
    Case("FusedBatchNormV3", [_BN_X, _BN_SCALE, _BN_OFFSET, _EMPTY, _EMPTY],
         lambda x, s, o, m, v: batch_norm_ref(x, s, o, m, v), grad=[0, 1, 2], outputs=6),
    Case("FusedBatchNormV3", [_BN_X.transpose(0, 3, 1, 2), _BN_SCALE, _BN_OFFSET, _EMPTY, _EMPTY],
         lambda x, s, o, m, v: batch_norm_ref(x, s, o, m, v, data_format="NCHW"),
         _NCHW, grad=[0, 1, 2], outputs=6),
    Case("FusedBatchNormV3", [_BN_X, _BN_SCALE, _BN_OFFSET, _BN_MEAN, _BN_VAR],
         lambda x, s, o, m, v: batch_norm_ref(x, s, o, m, v, epsilon=0.01, avg_factor=0.25),
         {"epsilon": 0.01, "exponential_avg_factor": 0.25}, outputs=6),
    Case("FusedBatchNormV3", [_BN_X, _BN_SCALE, _BN_OFFSET, _BN_MEAN, _BN_VAR],
         lambda x, s, o, m, v: batch_norm_ref(x, s, o, m, v, training=False),
         {"is_training": False}, grad=[0, 1, 2], outputs=6),
    Case("FusedBatchNormV3", [_BN_X.transpose(0, 3, 1, 2), _BN_SCALE, _BN_OFFSET, _BN_MEAN,
                              _BN_VAR],
         lambda x, s, o, m, v: batch_norm_ref(x, s, o, m, v, training=False, data_format="NCHW"),
         {"is_training": False, "data_format": "NCHW"}, grad=[0, 1, 2], outputs=6),
    Case("FusedBatchNormV3",
         [_BN_X.astype(np.float32)] + [a.astype(np.float32) for a in (_BN_SCALE, _BN_OFFSET)] +
         [np.zeros(0, np.float32)] * 2,
         lambda x, s, o, m, v: batch_norm_ref(x, s, o, m, v), rtol=1e-4, atol=1e-5, outputs=6),
    Case("FusedBatchNormGradV3",
         [rand(2, 3, 2, 4), _BN_X, _BN_SCALE, _BN_X.mean(axis=(0, 1, 2)),
          _BN_X.var(axis=(0, 1, 2)), _EMPTY],
         lambda dy, x, s, m, v, r: batch_norm_grad_ref(dy, x, s, m, v), outputs=5),
    Case("FusedBatchNormGradV3",
         [rand(2, 4, 3, 2), _BN_X.transpose(0, 3, 1, 2), _BN_SCALE, _BN_MEAN, _BN_VAR, _EMPTY],
         lambda dy, x, s, m, v, r: batch_norm_grad_ref(dy, x, s, m, v, training=False,
                                                       data_format="NCHW"),
         {"is_training": False, "data_format": "NCHW"}, outputs=5),
]
