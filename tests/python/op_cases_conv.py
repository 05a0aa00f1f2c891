"""Conformance cases for the convolution, pooling and bias ops (see op_cases.py). The exhaustive
tests (data formats, padding schemes, strides, dilations, errors) are in test_conv_ops.py."""

import numpy as np

from conv_reference import (conv_backprop_filter_ref, conv_backprop_input_ref, conv_ref,
                            pool_grad_ref, pool_ref)
from op_cases import Case, rand

_X = rand(1, 5, 4, 2)
_F = rand(3, 2, 2, 3)
_DY_SAME_S2 = rand(1, 3, 4, 3)  # conv of _X with _F, SAME, strides [2, 1]
_CONV_ATTRS = {"strides": [1, 2, 1, 1], "padding": "SAME"}
_DW_F = rand(2, 2, 2, 2)
_DW_DY = rand(1, 4, 3, 4)  # depthwise conv of _X with _DW_F, VALID
_DW_ATTRS = {"strides": [1, 1, 1, 1], "padding": "VALID"}
# Distinct values, so that no pooling window has a tie and max pooling is smooth around them.
_DISTINCT = np.random.default_rng(5).permutation(40).reshape(1, 5, 4, 2) / 10.0
_POOL_ATTRS = {"ksize": [1, 2, 2, 1], "strides": [1, 2, 1, 1], "padding": "SAME"}

CASES = [
    Case("Conv2D", [_X, _F], lambda x, f: conv_ref(x, f, (2, 1), "SAME"), _CONV_ATTRS,
         grad=[0, 1]),
    Case("Conv2D", [_X.transpose(0, 3, 1, 2), _F],
         lambda x, f: conv_ref(x, f, dilations=(2, 1), data_format="NCHW"),
         {"strides": [1, 1, 1, 1], "padding": "VALID", "data_format": "NCHW",
          "dilations": [1, 1, 2, 1]}, grad=[0, 1]),
    Case("Conv2D", [_X.astype(np.float32), _F.astype(np.float32)],
         lambda x, f: conv_ref(x, f, (2, 1), "SAME").astype(np.float32), _CONV_ATTRS,
         rtol=1e-4, atol=1e-5),
    Case("Conv2DBackpropInput", [np.array(_X.shape, np.int32), _F, _DY_SAME_S2],
         lambda s, f, dy: conv_backprop_input_ref(tuple(s), f, dy, (2, 1), "SAME"), _CONV_ATTRS,
         grad=[1, 2]),
    Case("Conv2DBackpropFilter", [_X, np.array(_F.shape, np.int32), _DY_SAME_S2],
         lambda x, s, dy: conv_backprop_filter_ref(x, tuple(s), dy, (2, 1), "SAME"),
         _CONV_ATTRS, grad=[0, 2]),
    Case("DepthwiseConv2dNative", [_X, _DW_F],
         lambda x, f: conv_ref(x, f, depthwise=True), _DW_ATTRS, grad=[0, 1]),
    Case("DepthwiseConv2dNativeBackpropInput", [np.array(_X.shape, np.int32), _DW_F, _DW_DY],
         lambda s, f, dy: conv_backprop_input_ref(tuple(s), f, dy, depthwise=True), _DW_ATTRS,
         grad=[1, 2]),
    Case("DepthwiseConv2dNativeBackpropFilter", [_X, np.array(_DW_F.shape, np.int32), _DW_DY],
         lambda x, s, dy: conv_backprop_filter_ref(x, tuple(s), dy, depthwise=True), _DW_ATTRS,
         grad=[0, 2]),
    Case("MaxPool", [_DISTINCT], lambda x: pool_ref(x, (2, 2), (2, 1), "SAME"), _POOL_ATTRS,
         grad=[0]),
    Case("MaxPool", [_DISTINCT.astype(np.float32)],
         lambda x: pool_ref(x, (2, 2), (2, 1), "SAME").astype(np.float32), _POOL_ATTRS),
    Case("MaxPoolGrad",
         [_DISTINCT, pool_ref(_DISTINCT, (2, 2), (2, 1), "SAME"), rand(1, 3, 4, 2)],
         lambda x, y, dy: pool_grad_ref(x, dy, (2, 2), (2, 1), "SAME"), _POOL_ATTRS),
    Case("AvgPool", [_X], lambda x: pool_ref(x, (2, 2), (2, 1), "SAME", kind="avg"),
         _POOL_ATTRS, grad=[0]),
    Case("AvgPoolGrad", [np.array(_X.shape, np.int32), rand(1, 3, 4, 2)],
         lambda s, dy: pool_grad_ref(np.zeros(tuple(s)), dy, (2, 2), (2, 1), "SAME", kind="avg"),
         _POOL_ATTRS, grad=[1]),
    Case("BiasAdd", [rand(2, 3, 4), rand(4)], lambda x, b: x + b, grad=[0, 1]),
    Case("BiasAdd", [rand(2, 3, 2, 2), rand(3)], lambda x, b: x + b.reshape(1, 3, 1, 1),
         {"data_format": "NCHW"}, grad=[0, 1]),
    Case("BiasAdd", [np.arange(6, dtype=np.int32).reshape(2, 3), np.array([1, 2, 3], np.int32)],
         lambda x, b: x + b),
    Case("BiasAddGrad", [rand(2, 3, 4)], lambda g: g.sum(axis=(0, 1)), grad=[0]),
    Case("BiasAddGrad", [rand(2, 3, 2, 2)], lambda g: g.sum(axis=(0, 2, 3)),
         {"data_format": "NCHW"}, grad=[0]),
]
