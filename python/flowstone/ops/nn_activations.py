"""Composite activations of tf.nn: crelu, swish (silu) and gelu."""

import math

from flowstone.framework import ops as _ops
from flowstone.ops import array_ops, math_functions, math_ops
from flowstone.util.tf_export import tf_export


@tf_export("nn.crelu")
def crelu(features, name=None, axis=-1):
    """Concatenated ReLU: relu(concat([features, -features], axis)), which doubles the depth."""
    with _ops.name_scope(name, "CRelu"):
        features = _ops.convert_to_tensor(features, name="features")
        c = array_ops.concat([features, math_ops.negative(features)], axis)
        return math_ops.relu(c)


@tf_export("nn.swish", "nn.silu")
def swish(features, beta=1.0):
    """features * sigmoid(beta * features) (Ramachandran et al. 2017; Hendrycks and Gimpel's
    SiLU when beta = 1)."""
    with _ops.name_scope(None, "swish"):
        features = _ops.convert_to_tensor(features, name="features")
        beta = _ops.convert_to_tensor(beta, name="beta")
        if beta.dtype != features.dtype:
            beta = math_ops.cast(beta, features.dtype)
        return math_ops.multiply(features, math_ops.sigmoid(math_ops.multiply(beta, features)))


@tf_export("nn.gelu")
def gelu(features, approximate=False, name=None):
    """The Gaussian error linear unit, x * P(X <= x) for a standard normal X:
    0.5 x (1 + erf(x / sqrt(2))), or with `approximate` Hendrycks and Gimpel's tanh form
    0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))."""
    with _ops.name_scope(name, "Gelu"):
        features = _ops.convert_to_tensor(features, name="features")
        dtype = features.dtype
        half = math_ops.multiply(_ops.convert_to_tensor(0.5, dtype=dtype), features)
        if approximate:
            cube = math_ops.multiply(_ops.convert_to_tensor(0.044715, dtype=dtype),
                                     math_ops.pow(features, _ops.convert_to_tensor(3, dtype=dtype)))
            inner = math_ops.multiply(_ops.convert_to_tensor(math.sqrt(2 / math.pi), dtype=dtype),
                                      math_ops.add(features, cube))
            return math_ops.multiply(half, math_ops.add(
                _ops.convert_to_tensor(1, dtype=dtype), math_ops.tanh(inner)))
        scaled = math_ops.multiply(features, _ops.convert_to_tensor(1 / math.sqrt(2), dtype=dtype))
        return math_ops.multiply(half, math_ops.add(_ops.convert_to_tensor(1, dtype=dtype),
                                                    math_functions.erf(scaled)))
