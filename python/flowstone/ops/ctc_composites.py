"""TF2's CTC loss (tf.nn.ctc_loss_v2: dense or sparse labels, any blank class) and the label
helpers collapse_repeated and ctc_unique_labels, composed of other ops as in TensorFlow. The loss
itself is the CTCLoss op's (ops/ctc_ops.py): dense labels become sparse ones and the blank class
moves to the end, where the op expects it."""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.framework.sparse_tensor import SparseTensor
from flowstone.ops import (array_ops, ctc_ops, functional_ops, manip_ops, math_ops,
                           partition_ops, reduction_ops, scatter_ops, sort_ops)
from flowstone.util.tf_export import tf_export


def _blank_last(logits, labels, blank_index):
    """Moves class blank_index of logits [.., .., num_classes] to the end (the CTCLoss op's
    blank) and renumbers the labels above it down by one."""
    if isinstance(blank_index, int) and logits.shape.rank is not None and \
            logits.shape[2] is not None and blank_index == logits.shape[2] - 1:
        return logits, labels
    logits = array_ops.concat([logits[:, :, :blank_index], logits[:, :, blank_index + 1:],
                               logits[:, :, blank_index:blank_index + 1]], axis=2)
    values = math_ops.cast(labels.values, _dtypes.int32)
    values = math_ops.where_v2(values < blank_index, values, values - 1)
    return logits, SparseTensor(labels.indices, values, labels.dense_shape)


def _dense_to_sparse_labels(labels, label_length):
    """The SparseTensor of the first label_length[b] labels of each row of dense [batch,
    max_label_length] labels."""
    labels = _ops.convert_to_tensor(labels, name="labels")
    label_length = _ops.convert_to_tensor(label_length, name="label_length")
    mask = manip_ops.sequence_mask(label_length, maxlen=array_ops.shape(labels)[1])
    indices = math_ops.cast(math_ops.where(mask), _dtypes.int64)
    values = scatter_ops.gather_nd(labels, indices)
    return SparseTensor(indices, values, math_ops.cast(array_ops.shape(labels), _dtypes.int64))


@tf_export("nn.ctc_loss_v2")
def ctc_loss_v2(labels, logits, label_length, logit_length, logits_time_major=True, unique=None,
                blank_index=None, name=None):
    """The CTC loss (TF2's tf.nn.ctc_loss): labels are dense [batch, max_label_length] with
    label_length, or a SparseTensor (then blank_index is required); logits are [frames, batch,
    num_classes] (or batch-major) with logit_length frames per entry. The blank is class
    blank_index (0 for dense labels by default; negative counts from the end). `unique` is
    accepted and unused: it only speeds TensorFlow's dense path up."""
    del unique
    with _ops.name_scope(name, "ctc_loss_dense"):
        logits = _ops.convert_to_tensor(logits, name="logits")
        if not logits_time_major:
            logits = array_ops.transpose(logits, [1, 0, 2])
        if isinstance(labels, SparseTensor):
            if blank_index is None:
                raise ValueError("Argument `blank_index` must be provided when `labels` is a "
                                 "`SparseTensor`.")
        else:
            if blank_index is None:
                blank_index = 0
            labels = _dense_to_sparse_labels(labels, label_length)
        if blank_index < 0:
            if logits.shape.rank is None or logits.shape[2] is None:
                raise ValueError("A negative blank_index needs logits with a known number of "
                                 "classes")
            blank_index += logits.shape[2]
        logits, labels = _blank_last(logits, labels, blank_index)
        return ctc_ops.ctc_loss(labels, logits, logit_length, time_major=True)


@tf_export("nn.collapse_repeated")
def collapse_repeated(labels, seq_length, name=None):
    """Merges runs of one label in each row of labels [batch, max_length] (the first
    seq_length[b] entries count): (collapsed labels [batch, new_max_length] padded with 0,
    their lengths)."""
    with _ops.name_scope(name, "collapse_repeated_labels", [labels, seq_length]):
        labels = _ops.convert_to_tensor(labels, name="labels")
        seq_length = _ops.convert_to_tensor(seq_length, name="seq_length")
        # Keep a label that differs from the one before it, within the row's length.
        starts_run = array_ops.concat([
            array_ops.ones_like(labels[:, :1], dtype=_dtypes.bool),
            math_ops.not_equal(labels[:, 1:], labels[:, :-1])], axis=1)
        keep = math_ops.logical_and(
            starts_run, manip_ops.sequence_mask(seq_length, maxlen=array_ops.shape(labels)[1]))
        new_length = reduction_ops.reduce_sum(math_ops.cast(keep, _dtypes.int32), axis=1)
        new_max = reduction_ops.reduce_max(new_length)
        # The kept labels land, in order, on the first new_length[b] places of their row.
        slots = math_ops.where(manip_ops.sequence_mask(new_length, maxlen=new_max))
        collapsed = scatter_ops.scatter_nd(
            slots, partition_ops.boolean_mask(labels, keep),
            math_ops.cast(array_ops.stack([array_ops.shape(labels)[0], new_max]), _dtypes.int64))
        return collapsed, math_ops.cast(new_length, seq_length.dtype)


@tf_export("nn.ctc_unique_labels")
def ctc_unique_labels(labels, name=None):
    """Per row of labels [batch, max_length]: (its distinct labels in order of first appearance,
    int64, padded with 0 to max_length; the position of each label among them, int32)."""
    with _ops.name_scope(name, "ctc_unique_labels", [labels]):
        labels = _ops.convert_to_tensor(labels, name="labels")

        def row_unique(row):
            found = sort_ops.unique(row)
            padded = array_ops.pad(found.y, [[0, array_ops.shape(found.idx)[0] -
                                              array_ops.shape(found.y)[0]]])
            return [math_ops.cast(padded, _dtypes.int64), found.idx]

        return functional_ops.map_fn(row_unique, labels, dtype=[_dtypes.int64, _dtypes.int32])
