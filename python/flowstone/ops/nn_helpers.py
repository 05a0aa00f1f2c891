"""Small tf.nn helpers built from other ops: xw_plus_b, relu_layer, compute_average_loss and
scale_regularization_loss (one replica: Flowstone runs no distribution strategy)."""

from flowstone.framework import ops as _ops
from flowstone.ops import array_ops, conv_ops, math_ops, reduction_ops
from flowstone.ops.matmul_ops import matmul
from flowstone.util.tf_export import tf_export


@tf_export("nn.xw_plus_b")
def xw_plus_b(x, weights, biases, name=None):
    """matmul(x, weights) + biases."""
    with _ops.name_scope(name, "xw_plus_b") as scope:
        x = _ops.convert_to_tensor(x, name="x")
        weights = _ops.convert_to_tensor(weights, dtype=x.dtype, name="weights")
        biases = _ops.convert_to_tensor(biases, dtype=x.dtype, name="biases")
        return _ops.apply_op("BiasAdd", [matmul(x, weights), biases], name=scope.rstrip("/"),
                             exact_name=True).outputs[0]


@tf_export("nn.relu_layer")
def relu_layer(x, weights, biases, name=None):
    """relu(matmul(x, weights) + biases)."""
    with _ops.name_scope(name, "relu_layer") as scope:
        x = _ops.convert_to_tensor(x, name="x")
        weights = _ops.convert_to_tensor(weights, dtype=x.dtype, name="weights")
        biases = _ops.convert_to_tensor(biases, dtype=x.dtype, name="biases")
        return math_ops.relu(conv_ops.bias_add(matmul(x, weights), biases), name=scope)


@tf_export("nn.scale_regularization_loss")
def scale_regularization_loss(regularization_loss):
    """The sum of the regularization losses divided by the number of replicas (1 here)."""
    if isinstance(regularization_loss, (list, tuple)):
        regularization_loss = math_ops.add_n(list(regularization_loss))
    return reduction_ops.reduce_sum(regularization_loss)


@tf_export("nn.compute_average_loss")
def compute_average_loss(per_example_loss, sample_weight=None, global_batch_size=None,
                         regularization_losses=None):
    """sum(per_example_loss * sample_weight) / global_batch_size (default: the batch size), plus
    the scaled regularization losses; 0 when the batch is empty."""
    per_example_loss = _ops.convert_to_tensor(per_example_loss)
    dtype = per_example_loss.dtype
    if per_example_loss.shape.rank == 0:
        raise ValueError("Invalid value passed for `per_example_loss`. Expected a tensor with at "
                         f"least rank 1. Received: {per_example_loss}.")
    if sample_weight is not None:
        sample_weight = _ops.convert_to_tensor(sample_weight, dtype=dtype)
        per_example_loss = math_ops.multiply(per_example_loss, sample_weight)
    loss = reduction_ops.reduce_sum(per_example_loss)
    if global_batch_size is None:
        global_batch_size = math_ops.cast(array_ops.shape(per_example_loss)[0], dtype)
    else:
        global_batch_size = _ops.convert_to_tensor(global_batch_size)
        global_batch_size = math_ops.cast(global_batch_size, dtype)
    zero = array_ops.zeros_like(global_batch_size)
    empty = math_ops.equal(global_batch_size, zero)
    safe = math_ops.where_v2(empty, array_ops.ones_like(global_batch_size), global_batch_size)
    loss = math_ops.where_v2(empty, array_ops.zeros_like(loss), math_ops.divide(loss, safe))
    if regularization_losses:
        loss = math_ops.add(loss, scale_regularization_loss(regularization_losses))
    return loss
