"""Conformance cases (see op_cases.py) for the fused op the model zoo's MobileNetV2 needs,
_FusedDepthwiseConv2dNative. Like _FusedConv2D it is not in tf.raw_ops; test_fusion.py and
test_batch_norm_folding.py check it against the unfused ops it replaces."""

import numpy as np

from conv_reference import conv_ref
from flowstone.framework.ops import apply_op
from op_cases import Case, rand


def depthwise_ref(x, f, **kwargs):
    return conv_ref(x, f, depthwise=True, **kwargs)


def _fused(attrs):
    def build(x, f, *args):
        return apply_op("_FusedDepthwiseConv2dNative", [x, f, list(args)],
                        dict(attrs, num_args=len(args)))
    return build


def _fused_case(inputs, ref, attrs, **kwargs):
    """A case of the fused op; its attrs are also kept on the case, where the fuzzer
    (tests/fuzz/op_strategies.py) reads them to call the op with the flat inputs."""
    return Case("_FusedDepthwiseConv2dNative", inputs, ref, attrs=attrs, build=_fused(attrs),
                **kwargs)


CASES = [
    _fused_case([rand(2, 5, 5, 3), rand(3, 3, 3, 2), rand(6)],
                lambda x, f, b: np.clip(depthwise_ref(x, f, padding="SAME") + b, 0, 6),
                {"strides": [1, 1, 1, 1], "padding": "SAME", "fused_ops": ["BiasAdd", "Relu6"]}),
    _fused_case([rand(2, 6, 6, 4, dtype=np.float32), rand(3, 3, 4, 1, dtype=np.float32),
                 rand(4, dtype=np.float32), rand(4, dtype=np.float32), rand(4, dtype=np.float32),
                 rand(4, low=0.5, high=1.5, dtype=np.float32)],
                lambda x, f, scale, offset, mean, var: np.maximum(
                    (depthwise_ref(x, f, strides=(2, 2), padding="VALID") - mean) * scale
                    / np.sqrt(var + 1e-3) + offset, 0).astype(np.float32),
                {"strides": [1, 2, 2, 1], "padding": "VALID",
                 "fused_ops": ["FusedBatchNorm", "Relu"], "epsilon": 1e-3},
                rtol=1e-5, atol=1e-5),
]
