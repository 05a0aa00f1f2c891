"""tf.identity_n: several tensors through one IdentityN node."""

from flowstone.framework import ops as _ops
from flowstone.util.tf_export import tf_export


@tf_export("identity_n")
def identity_n(input, name=None):  # noqa: A002 - TensorFlow's argument name
    """Returns the tensors of `input` unchanged, as outputs of one IdentityN op."""
    tensors = [_ops.convert_to_tensor(t) for t in input]
    return _ops.apply_op("IdentityN", [tensors], {}, name=name or "IdentityN").outputs
