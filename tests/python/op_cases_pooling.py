"""Conformance cases (see op_cases.py) for the MaxPool / MaxPoolGrad pair the remapper makes in
training graphs, _MaxPoolWithWorkspace and _MaxPoolGradWithWorkspace (src/ops/pooling_ops.cc).
test_max_pool_grad.py checks them bit for bit against MaxPool and MaxPoolGrad in training graphs;
TensorFlow has no such ops, so test_ops_vs_tensorflow.py skips them."""

import numpy as np

from conv_reference import pool_grad_ref, pool_ref
from op_cases import Case

_ATTRS = {"ksize": [1, 2, 2, 1], "strides": [1, 2, 1, 1], "padding": "SAME"}
# Distinct values: each window has one maximum.
_X = (np.random.default_rng(7).permutation(2 * 5 * 4 * 3).reshape(2, 5, 4, 3) / 10).astype(
    np.float32)


def _taps(x):
    """Where each window's maximum is: its tap, row-major in the 2x2 window (SAME padding cuts
    the last row's windows to 1 row; the tap counts the window's elements inside the input)."""
    n, h, w, c = x.shape
    out = np.zeros((n, 3, 4, c), np.uint8)
    for oy in range(3):
        rows = range(2 * oy, min(2 * oy + 2, h))
        for ox in range(4):
            cols = range(ox, min(ox + 2, w))
            taps = [x[:, iy, ix, :] for iy in rows for ix in cols]
            out[:, oy, ox, :] = np.argmax(np.stack(taps, axis=1), axis=1)
    return out


_DY = np.random.default_rng(8).uniform(-1, 1, size=(2, 3, 4, 3)).astype(np.float32)

CASES = [
    Case("_MaxPoolWithWorkspace", [_X],
         lambda x: (pool_ref(x, (2, 2), (2, 1), "SAME").astype(np.float32), _taps(x)), _ATTRS,
         outputs=2),
    Case("_MaxPoolGradWithWorkspace", [_X, _taps(_X), _DY],
         lambda x, ws, dy: pool_grad_ref(x, dy, (2, 2), (2, 1), "SAME").astype(np.float32),
         _ATTRS),
]
