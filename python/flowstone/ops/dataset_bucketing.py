"""The per-element functions of Dataset.bucket_by_sequence_length and sample_from_datasets:
graph code traced into the GroupByWindowDataset and MapDataset functions, built as TF builds
them, so buckets and batches are TF's."""

import numpy as np

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.framework.tensor_shape import TensorShape
from flowstone.ops import array_ops, check_ops, math_ops, reduction_ops, stateless_random_ops


def bucket_id_fn(element_length_func, bucket_boundaries):
    """The function of an element to the index of the bucket its length falls in: the first
    [min, max) range of [int32 min] + boundaries and boundaries + [int32 max] holding it."""
    boundaries = [int(b) for b in bucket_boundaries]
    buckets_min = [np.iinfo(np.int32).min] + boundaries
    buckets_max = boundaries + [np.iinfo(np.int32).max]

    def bucket_id(*args):
        length = _ops.convert_to_tensor(element_length_func(*args))
        conditions = math_ops.logical_and(
            math_ops.less_equal(_ops.convert_to_tensor(buckets_min, dtype=length.dtype), length),
            math_ops.less(length, _ops.convert_to_tensor(buckets_max, dtype=length.dtype)))
        return reduction_ops.reduce_min(math_ops.where(conditions))

    return bucket_id


def batching_fn(bucket_boundaries, bucket_batch_sizes, padded_shapes, padding_values,
                pad_to_bucket_boundary, no_padding, drop_remainder):
    """reduce_func of the buckets: batch_size(bucket) elements batched, or padded to
    `padded_shapes` (unknown dimensions to the longest element, or to the bucket's boundary - 1
    with pad_to_bucket_boundary)."""
    def batch_size(bucket_id):
        sizes = _ops.convert_to_tensor(list(bucket_batch_sizes), dtype=_dtypes.int64,
                                       name="bucket_batch_sizes")
        return array_ops.gather(sizes, bucket_id)

    def batch(bucket_id, grouped):
        size = batch_size(bucket_id)
        if no_padding:
            return grouped.batch(size, drop_remainder=drop_remainder)
        filler = None
        if pad_to_bucket_boundary:
            check = check_ops.assert_less(
                bucket_id, _ops.convert_to_tensor(len(bucket_batch_sizes) - 1, _dtypes.int64),
                message="When pad_to_bucket_boundary=True, elements must have length < "
                        "max(bucket_boundaries).")
            with _ops.control_dependencies([check]):
                boundaries = _ops.convert_to_tensor(list(bucket_boundaries), _dtypes.int64)
                filler = array_ops.gather(boundaries, bucket_id) - 1
        shapes = padded_shapes if padded_shapes is not None else grouped.output_shapes
        return grouped.padded_batch(size, _fill_unknown(shapes, filler), padding_values,
                                    drop_remainder=drop_remainder)

    return batch_size, batch


def _fill_unknown(shapes, filler):
    """`shapes` (a structure of shapes) with unknown dimensions replaced by `filler` (a scalar
    tensor; None keeps them unknown)."""
    if isinstance(shapes, dict):
        return {k: _fill_unknown(v, filler) for k, v in shapes.items()}
    if isinstance(shapes, tuple):
        return tuple(_fill_unknown(s, filler) for s in shapes)
    dims = TensorShape(shapes).as_list()
    return [filler if d is None else d for d in dims]


def constant_selector(weights, num_datasets):
    """The map from a pair of random int64 seeds to an index drawn with probabilities
    `weights` (uniform when None), through stateless_multinomial as TF draws it."""
    def select(seed):
        if weights is None:
            logits = _ops.convert_to_tensor([[1.0] * num_datasets], name="logits")
        else:
            w = _ops.convert_to_tensor(weights, name="weights")
            logits = array_ops.expand_dims(math_ops.log(w, name="logits"), 0)
        return array_ops.squeeze(stateless_random_ops.stateless_multinomial(logits, 1, seed),
                                 axis=[0, 1])

    return select


def varying_selector(seed, weights):
    """The map from (seeds, weights element) to an index, for weights given as a dataset."""
    logits = array_ops.expand_dims(math_ops.log(weights, name="logits"), 0)
    return array_ops.squeeze(stateless_random_ops.stateless_multinomial(logits, 1, seed),
                             axis=[0, 1])
