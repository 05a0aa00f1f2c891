"""Composite activations of tf.nn: crelu and swish (silu)."""

from flowstone.framework import ops as _ops
from flowstone.ops import array_ops, math_ops
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
