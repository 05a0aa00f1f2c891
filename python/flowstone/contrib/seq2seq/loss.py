"""tf.contrib.seq2seq.sequence_loss: the weighted cross-entropy of sequences of logits."""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.ops import (array_ops, math_composites, math_ops, math_reductions, nn_impl,
                           reduction_ops)


def _check_rank(tensor, rank, what):
    tensor = _ops.convert_to_tensor(tensor)
    if tensor.shape.rank is not None and tensor.shape.rank != rank:
        dims = "batch_size x sequence_length" + (" x logits" if rank == 3 else "")
        raise ValueError(f"{what} must be a [{dims}] tensor, got shape {tensor.shape}")
    return tensor


def sequence_loss(logits, targets, weights, average_across_timesteps=True,
                  average_across_batch=True, sum_over_timesteps=False, sum_over_batch=False,
                  softmax_loss_function=None, name=None):
    """The weighted cross-entropy of [batch, time, classes] logits against [batch, time]
    targets. Averaged (over the weights' sum) or summed (over their nonzero count) across time
    steps and/or the batch; with neither for an axis it is kept."""
    logits = _check_rank(logits, 3, "Logits")
    targets = _check_rank(targets, 2, "Targets")
    weights = _check_rank(weights, 2, "Weights")
    if average_across_timesteps and sum_over_timesteps:
        raise ValueError("average_across_timesteps and sum_over_timesteps cannot be set to "
                         "True at same time.")
    if average_across_batch and sum_over_batch:
        raise ValueError("average_across_batch and sum_over_batch cannot be set to True at "
                         "same time.")
    with _ops.name_scope(name, "sequence_loss", [logits, targets, weights]):
        num_classes = array_ops.shape(logits)[2]
        logits_flat = array_ops.reshape(logits, array_ops.stack([-1, num_classes]))
        targets = array_ops.reshape(targets, [-1])
        if softmax_loss_function is None:
            crossent = nn_impl.sparse_softmax_cross_entropy_with_logits(labels=targets,
                                                                       logits=logits_flat)
        else:
            crossent = softmax_loss_function(labels=targets, logits=logits_flat)
        crossent = math_ops.multiply(crossent, array_ops.reshape(weights, [-1]))

        def average(values, axis):
            return math_composites.divide_no_nan(reduction_ops.reduce_sum(values, axis),
                                             reduction_ops.reduce_sum(weights, axis))

        def total(values, axis):
            count = math_reductions.count_nonzero(weights, axis, dtype=_dtypes.float32)
            return math_composites.divide_no_nan(reduction_ops.reduce_sum(values, axis), count)

        if average_across_timesteps and average_across_batch:
            return average(crossent, None)
        if sum_over_timesteps and sum_over_batch:
            return total(crossent, None)
        crossent = array_ops.reshape(crossent, array_ops.shape(logits)[0:2])
        if average_across_timesteps or average_across_batch:
            return average(crossent, [0] if average_across_batch else [1])
        if sum_over_timesteps or sum_over_batch:
            return total(crossent, [0] if sum_over_batch else [1])
        return crossent
