"""Conformance cases of the ops that encode composites as variants for tf.data
(src/ops/array/ragged_variant_ops.cc, the variant rows of src/ops/io/sparse_serialization_ops.cc).
Variants cannot be fed or fetched, so each case encodes and decodes again and checks the
decoded components."""

import numpy as np

import flowstone as tf
from flowstone.framework.ops import apply_op
from op_cases import Case

F32 = np.float32

# A ragged tensor of ragged_rank 2: [[[1, 2], []], [[3, 4, 5]], [], [[6]]].
_SPLITS0 = np.array([0, 2, 3, 3, 4], np.int64)
_SPLITS1 = np.array([0, 2, 2, 5, 6], np.int64)
_VALUES = np.arange(1, 7).astype(F32)


def _encode(splits, values, batched):
    return apply_op("RaggedTensorToVariant", [list(splits), values], {
        "RAGGED_RANK": len(splits), "Tvalues": values.dtype, "Tsplits": tf.int64,
        "batched_input": batched}).outputs[0]


def _decode(encoded, output_ragged_rank, dtype=tf.float32):
    return apply_op("RaggedTensorFromVariant", [encoded], {
        "input_ragged_rank": -1, "output_ragged_rank": output_ragged_rank, "Tvalues": dtype,
        "Tsplits": tf.int64})


def _sparse_round_trip(op_type, indices, values, shape):
    encoded = apply_op(op_type, [indices, values, shape], {"out_type": tf.variant}).outputs[0]
    return apply_op("DeserializeSparse", [encoded], {"dtype": values.dtype,
                                                     "Tserialized": tf.variant})


CASES = [
    # Each row encoded on its own ([4] variants), decoded again as one batch: the same tensor.
    Case("RaggedTensorToVariant", [_SPLITS0, _SPLITS1, _VALUES],
         lambda s0, s1, v: (s0, s1, v), outputs=3,
         build=lambda s0, s1, v: _decode(_encode([s0, s1], v, True), 2)),
    # The whole tensor as one scalar variant, decoded with input_ragged_rank 2.
    Case("RaggedTensorToVariant", [_SPLITS0, _SPLITS1, _VALUES],
         lambda s0, s1, v: (s0, s1, v), outputs=3,
         build=lambda s0, s1, v: _decode(_encode([s0, s1], v, False), 2)),
    # Rows laid out [2, 2]: the variant tensor's first dimension becomes a uniform ragged one.
    Case("RaggedTensorFromVariant", [_SPLITS1, _VALUES],
         lambda s1, v: (np.array([0, 2, 4], np.int64), s1, v), outputs=3,
         build=lambda s1, v: _decode(tf.reshape(_encode([s1], v, True), [2, 2]), 2)),
    # Dense rows of different lengths (ragged_rank 0 each) batched into ragged_rank 1.
    Case("RaggedTensorFromVariant", [np.array([0, 2, 3], np.int64), np.array([1.5, -2, 3], F32)],
         lambda s, v: (s, v), outputs=2,
         build=lambda s, v: _decode(_encode([s], v, True), 1)),
    # A SparseTensor encoded row by row ([2, 3] variants) and decoded: the same SparseTensor.
    Case("DeserializeSparse", [np.array([[0, 1], [1, 0], [1, 2]], np.int64),
                               np.array([1.0, 2.0, 3.0], F32), np.array([2, 4], np.int64)],
         lambda i, v, s: (i, v, s), outputs=3,
         build=lambda i, v, s: _sparse_round_trip("SerializeManySparse", i, v, s)),
    Case("SerializeSparse", [np.array([[0, 1], [1, 0]], np.int64), np.array([5, 6], np.int32),
                             np.array([3, 2], np.int64)],
         lambda i, v, s: (i, v, s), outputs=3,
         build=lambda i, v, s: _sparse_round_trip("SerializeSparse", i, v, s)),
]
