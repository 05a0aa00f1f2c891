"""Global-step helpers beyond get/create (those are in optimizer.py)."""

from flowstone.framework import ops as _ops
from flowstone.ops import variables
from flowstone.util.tf_export import tf_export


@tf_export("train.global_step")
def global_step(sess, global_step_tensor):
    """The global step's value, as a Python int."""
    return int(sess.run(global_step_tensor))


@tf_export("train.assert_global_step")
def assert_global_step(global_step_tensor):
    """Raises TypeError unless `global_step_tensor` is an integer scalar variable or tensor."""
    if not isinstance(global_step_tensor, (variables.Variable, _ops.Tensor)):
        raise TypeError(f"Existing \"global_step\" must be a Variable or Tensor: "
                        f"{global_step_tensor}.")
    if not global_step_tensor.dtype.base_dtype.is_integer:
        raise TypeError(f"Existing \"global_step\" does not have integer type: "
                        f"{global_step_tensor.dtype}")
    shape = global_step_tensor.shape
    if shape.ndims != 0 and shape.is_fully_defined():
        raise TypeError(f"Existing \"global_step\" is not scalar: {shape}")
