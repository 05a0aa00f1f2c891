"""Conformance cases (see op_cases.py) for the fused ops of TensorFlow's remapper, _FusedConv2D
and _FusedMatMul. TensorFlow does not expose them in tf.raw_ops, so test_ops_vs_tensorflow.py
skips them (built around the op); test_fusion.py checks them bit for bit against the unfused ops
they replace."""

import numpy as np

from conv_reference import conv_ref
from flowstone.framework.ops import apply_op
from op_cases import Case, rand


def _fused(op, attrs):
    """A case builder: the op with its per-channel vectors (the placeholders after the first two)
    as the args list."""
    def build(a, b, *args):
        attrs_here = dict(attrs, num_args=len(args))
        if op == "_FusedConv2D":  # args is a list of any types there: TArgs says which
            attrs_here["TArgs"] = [a.dtype] * len(args)
        return apply_op(op, [a, b, list(args)], attrs_here)
    return build


def _fused_case(op, inputs, ref, attrs, **kwargs):
    """A case of a fused op; its attrs are also kept on the case, where the fuzzer
    (tests/fuzz/op_strategies.py) reads them to call the op with the flat inputs."""
    return Case(op, inputs, ref, attrs=attrs, build=_fused(op, attrs), **kwargs)


def _elu(x):
    return np.where(x > 0, x, np.expm1(np.minimum(x, 0)))


_CONV = {"strides": [1, 1, 1, 1], "padding": "SAME"}


def _relu_grad_bias_add_grad(g, features, channel_axis=-1):
    backprops = g * (features > 0)
    axes = tuple(a for a in range(g.ndim) if a != channel_axis % g.ndim)
    return backprops, backprops.sum(axis=axes)


CASES = [
    _fused_case("_FusedConv2D", [rand(2, 5, 5, 3), rand(3, 3, 3, 4), rand(4)],
                lambda x, f, b: np.maximum(conv_ref(x, f, padding="SAME") + b, 0),
                dict(_CONV, fused_ops=["BiasAdd", "Relu"])),
    _fused_case("_FusedConv2D", [rand(2, 5, 5, 3, dtype=np.float32),
                                 rand(3, 3, 3, 4, dtype=np.float32), rand(4, dtype=np.float32)],
                lambda x, f, b: np.clip(conv_ref(x, f, padding="SAME") + b, 0, 6).astype(
                    np.float32),
                dict(_CONV, fused_ops=["BiasAdd", "Relu6"]), rtol=1e-5, atol=1e-5),
    _fused_case("_FusedConv2D", [rand(1, 3, 6, 6), rand(2, 2, 3, 2)],
                lambda x, f: _elu(conv_ref(x, f, data_format="NCHW")),
                {"strides": [1, 1, 1, 1], "padding": "VALID", "data_format": "NCHW",
                 "fused_ops": ["Elu"]}),
    _fused_case("_FusedConv2D", [rand(2, 4, 4, 3), rand(2, 2, 3, 4), rand(4), rand(4), rand(4),
                                 rand(4, low=0.5, high=1.5)],
                lambda x, f, scale, offset, mean, var: np.maximum(
                    (conv_ref(x, f) - mean) * scale / np.sqrt(var + 1e-3) + offset, 0),
                {"strides": [1, 1, 1, 1], "padding": "VALID",
                 "fused_ops": ["FusedBatchNorm", "Relu"], "epsilon": 1e-3}),
    Case("_ReluGradBiasAddGrad", [rand(4, 3, 3, 5), rand(4, 3, 3, 5)], _relu_grad_bias_add_grad,
         outputs=2),
    Case("_ReluGradBiasAddGrad", [rand(600, 7), rand(600, 7)], _relu_grad_bias_add_grad,
         outputs=2),
    Case("_ReluGradBiasAddGrad", [rand(2, 5, 3, 3), rand(2, 5, 3, 3)],
         lambda g, f: _relu_grad_bias_add_grad(g, f, channel_axis=1), attrs={"data_format": "NCHW"},
         outputs=2),
    _fused_case("_FusedMatMul", [rand(3, 5), rand(5, 4), rand(4)], lambda a, b, c: a @ b + c,
                {"fused_ops": ["BiasAdd"]}),
    _fused_case("_FusedMatMul", [rand(5, 3), rand(4, 5), rand(4)],
                lambda a, b, c: np.where(a.T @ b.T + c > 0, a.T @ b.T + c, 0.3 * (a.T @ b.T + c)),
                {"fused_ops": ["BiasAdd", "LeakyRelu"], "leakyrelu_alpha": 0.3,
                 "transpose_a": True, "transpose_b": True}),
]
