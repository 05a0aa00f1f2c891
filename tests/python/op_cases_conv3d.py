"""Conformance cases for the 3-D convolution and pooling ops, MaxPoolWithArgmax and the
morphological Dilation2D (see op_cases.py). Data formats, padding, strides, dilations, errors and oneDNN against the reference
loops are in test_conv3d_ops.py."""

import numpy as np

from conv3d_reference import (conv3d_backprop_filter_ref, conv3d_backprop_input_ref, conv3d_ref,
                              pool3d_grad_ref, pool3d_ref)
from conv_reference import window as _window
from op_cases import Case, rand

_X = rand(1, 4, 3, 3, 2)
_F = rand(2, 2, 1, 2, 3)
_ATTRS = {"strides": [1, 2, 1, 1, 1], "padding": "SAME"}
_DY = rand(1, 2, 3, 3, 3)  # conv of _X with _F, SAME, strides [2, 1, 1]
_NC_ATTRS = {"strides": [1, 1, 1, 1, 1], "padding": "VALID", "data_format": "NCDHW",
             "dilations": [1, 1, 2, 1, 1]}
# Distinct values, so that no pooling window has a tie and max pooling is smooth around them.
_DISTINCT = np.random.default_rng(11).permutation(36).reshape(1, 3, 3, 2, 2) / 10.0
_POOL = {"ksize": [1, 2, 2, 1, 1], "strides": [1, 1, 2, 1, 1], "padding": "SAME"}
_POOLED_SHAPE = (1, 3, 2, 2, 2)
_DISTINCT_2D = np.random.default_rng(12).permutation(40).reshape(1, 5, 4, 2) / 10.0
_ARGMAX = {"ksize": [1, 2, 2, 1], "strides": [1, 2, 1, 1], "padding": "SAME"}


def _argmax_ref(x, include_batch):
    """Max pooling with 2x2 windows, strides (2, 1), SAME, and TensorFlow's flat argmax."""
    n, h, w, c = x.shape
    oh, ow = -(-h // 2), w
    pad_top = max((oh - 1) * 2 + 2 - h, 0) // 2
    pad_left = max((ow - 1) + 2 - w, 0) // 2
    y = np.zeros((n, oh, ow, c))
    arg = np.zeros((n, oh, ow, c), np.int64)
    for b, i, j, ch in np.ndindex(n, oh, ow, c):
        rows = range(max(i * 2 - pad_top, 0), min(i * 2 - pad_top + 2, h))
        cols = range(max(j - pad_left, 0), min(j - pad_left + 2, w))
        best = max((x[b, r, s, ch], r, s) for r in rows for s in cols)
        y[b, i, j, ch] = best[0]
        arg[b, i, j, ch] = ((b * h if include_batch else 0) + best[1]) * w * c + best[2] * c + ch
    return y, arg


def _dilation_maxima(x, f, strides, rates, padding):
    """Dilation by direct loops: the output, and for each output the input index and filter
    index of its (first) maximum."""
    n, h, w, c = x.shape
    kh, kw, _ = f.shape
    (oh, top, _), (ow, left, _) = (_window(h, kh, strides[0], rates[0], padding),
                                   _window(w, kw, strides[1], rates[1], padding))
    y = np.zeros((n, oh, ow, c))
    in_pos, tap_pos = {}, {}
    for b, i, j, ch in np.ndindex(n, oh, ow, c):
        best = None
        for di, dj in np.ndindex(kh, kw):
            yy, xx = i * strides[0] + di * rates[0] - top, j * strides[1] + dj * rates[1] - left
            if 0 <= yy < h and 0 <= xx < w:
                v = x[b, yy, xx, ch] + f[di, dj, ch]
                if best is None or v > best:
                    best, in_pos[b, i, j, ch], tap_pos[b, i, j, ch] = v, (b, yy, xx, ch), (
                        di, dj, ch)
        y[b, i, j, ch] = best
    return y, in_pos, tap_pos


def _dilation_grad_ref(x, f, dy, wrt, strides, rates, padding):
    _, in_pos, tap_pos = _dilation_maxima(x, f, strides, rates, padding)
    grad = np.zeros(x.shape if wrt == "input" else f.shape)
    for k, g in np.ndenumerate(dy):
        grad[(in_pos if wrt == "input" else tap_pos)[k]] += g
    return grad


_DIL_X = np.random.default_rng(13).permutation(2 * 5 * 6 * 2).reshape(2, 5, 6, 2) / 7.0
_DIL_F = np.random.default_rng(14).permutation(3 * 2 * 2).reshape(3, 2, 2) / 11.0
_DIL_ATTRS = {"strides": [1, 2, 1, 1], "rates": [1, 1, 2, 1], "padding": "SAME"}

CASES = [
    Case("Conv3D", [_X, _F], lambda x, f: conv3d_ref(x, f, (2, 1, 1), "SAME"), _ATTRS,
         grad=[0, 1]),
    Case("Conv3D", [_X.transpose(0, 4, 1, 2, 3), rand(2, 2, 1, 2, 2)],
         lambda x, f: conv3d_ref(x, f, dilations=(2, 1, 1), data_format="NCDHW"), _NC_ATTRS,
         grad=[0, 1]),
    Case("Conv3D", [_X.astype(np.float32), _F.astype(np.float32)],
         lambda x, f: conv3d_ref(x, f, (2, 1, 1), "SAME").astype(np.float32), _ATTRS,
         rtol=1e-4, atol=1e-5),
    Case("Conv3DBackpropInputV2", [np.array(_X.shape, np.int32), _F, _DY],
         lambda s, f, dy: conv3d_backprop_input_ref(tuple(s), f, dy, (2, 1, 1), "SAME"), _ATTRS,
         grad=[1, 2]),
    Case("Conv3DBackpropInputV2",
         [np.array(_X.shape, np.int32), _F.astype(np.float32), _DY.astype(np.float32)],
         lambda s, f, dy: conv3d_backprop_input_ref(tuple(s), f, dy, (2, 1, 1), "SAME").astype(
             np.float32), _ATTRS, rtol=1e-4, atol=1e-5),
    Case("Conv3DBackpropFilterV2", [_X, np.array(_F.shape, np.int32), _DY],
         lambda x, s, dy: conv3d_backprop_filter_ref(x, tuple(s), dy, (2, 1, 1), "SAME"),
         _ATTRS, grad=[0, 2]),
    Case("Conv3DBackpropFilterV2",
         [_X.astype(np.float32), np.array(_F.shape, np.int32), _DY.astype(np.float32)],
         lambda x, s, dy: conv3d_backprop_filter_ref(x, tuple(s), dy, (2, 1, 1), "SAME").astype(
             np.float32), _ATTRS, rtol=1e-4, atol=1e-5),
    Case("MaxPool3D", [_DISTINCT], lambda x: pool3d_ref(x, (2, 2, 1), (1, 2, 1), "SAME"), _POOL,
         grad=[0]),
    Case("MaxPool3D", [_DISTINCT.astype(np.float32)],
         lambda x: pool3d_ref(x, (2, 2, 1), (1, 2, 1), "SAME"), _POOL),
    Case("AvgPool3D", [_X], lambda x: pool3d_ref(x, (2, 2, 1), (1, 2, 1), "SAME", kind="avg"),
         _POOL, grad=[0]),
    Case("MaxPool3DGrad",
         [_DISTINCT, pool3d_ref(_DISTINCT, (2, 2, 1), (1, 2, 1), "SAME"), rand(*_POOLED_SHAPE)],
         lambda x, y, dy: pool3d_grad_ref(x, dy, (2, 2, 1), (1, 2, 1), "SAME"), _POOL),
    Case("AvgPool3DGrad", [np.array(_DISTINCT.shape, np.int32), rand(*_POOLED_SHAPE)],
         lambda s, dy: pool3d_grad_ref(np.zeros(tuple(s)), dy, (2, 2, 1), (1, 2, 1), "SAME",
                                       kind="avg"), _POOL, grad=[1]),
    Case("MaxPoolWithArgmax", [_DISTINCT_2D], lambda x: _argmax_ref(x, False), _ARGMAX,
         grad=[0], outputs=2),
    Case("MaxPoolWithArgmax", [_DISTINCT_2D], lambda x: _argmax_ref(x, True),
         dict(_ARGMAX, include_batch_in_index=True), outputs=2),
    Case("MaxPoolGradWithArgmax",
         [_DISTINCT_2D, rand(1, 3, 4, 2), _argmax_ref(_DISTINCT_2D, False)[1]],
         lambda x, g, arg: np.bincount(arg.ravel(), g.ravel(), x.size).reshape(x.shape),
         _ARGMAX),
    Case("Dilation2D", [_DIL_X, _DIL_F],
         lambda x, f: _dilation_maxima(x, f, (2, 1), (1, 2), "SAME")[0], _DIL_ATTRS,
         grad=[0, 1]),
    Case("Dilation2D", [_DIL_X.astype(np.float32), _DIL_F.astype(np.float32)],
         lambda x, f: _dilation_maxima(x, f, (1, 1), (1, 1), "VALID")[0].astype(np.float32),
         {"strides": [1, 1, 1, 1], "rates": [1, 1, 1, 1], "padding": "VALID"}),
    Case("Dilation2DBackpropInput", [_DIL_X, _DIL_F, rand(2, 3, 6, 2)],
         lambda x, f, dy: _dilation_grad_ref(x, f, dy, "input", (2, 1), (1, 2), "SAME"),
         _DIL_ATTRS),
    Case("Dilation2DBackpropFilter", [_DIL_X, _DIL_F, rand(2, 3, 6, 2)],
         lambda x, f, dy: _dilation_grad_ref(x, f, dy, "filter", (2, 1), (1, 2), "SAME"),
         _DIL_ATTRS),
]
