"""tf.sparse.cross and tf.sparse.cross_hashed over the C++ SparseCross op: the per-row cartesian
product of sparse and dense feature columns, as crossed_column uses it."""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.framework.sparse_tensor import SparseTensor
from flowstone.ops import math_ops
from flowstone.util.tf_export import tf_export

# TensorFlow's default key of cross_hashed, so that hashed crosses equal TensorFlow's.
DEFAULT_HASH_KEY = 0xDECAFCAFFE


def _feature(tensor):
    """int64 or string: int32 ids are widened as TensorFlow's callers do."""
    if tensor.dtype == _dtypes.int32:
        return math_ops.cast(tensor, _dtypes.int64)
    return tensor


def _cross(inputs, hashed_output, num_buckets, hash_key, name):
    if not isinstance(inputs, (list, tuple)):
        raise TypeError("Inputs must be a list")
    sparse = [x for x in inputs if isinstance(x, SparseTensor)]
    dense = [_feature(_ops.convert_to_tensor(x)) for x in inputs
             if not isinstance(x, SparseTensor)]
    sparse_values = [_feature(s.values) for s in sparse]
    out_type = _dtypes.int64 if hashed_output else _dtypes.string
    op = _ops.apply_op("SparseCross", [
        [s.indices for s in sparse], sparse_values, [s.dense_shape for s in sparse], dense,
    ], {
        "N": len(sparse), "sparse_types": [v.dtype for v in sparse_values],
        "dense_types": [d.dtype for d in dense], "hashed_output": hashed_output,
        "num_buckets": int(num_buckets), "hash_key": int(hash_key), "out_type": out_type,
        "internal_type": out_type,
    }, name=name or "SparseCross")
    return SparseTensor(*op.outputs)


@tf_export("sparse.cross")
def sparse_cross(inputs, name=None, separator=None):
    """The crosses of `inputs` (SparseTensors and dense [batch, k] tensors) as strings joined
    with "_X_"; sparse inputs come first, in order, then dense ones (TensorFlow's order)."""
    if separator not in (None, "_X_"):
        raise ValueError(f"sparse.cross: only the separator \"_X_\" is supported, got "
                         f"{separator!r}")
    return _cross(inputs, False, 0, 0, name)


@tf_export("sparse.cross_hashed")
def sparse_cross_hashed(inputs, num_buckets=0, hash_key=None, name=None):
    """The crosses of `inputs` as FingerprintCat64 hashes modulo `num_buckets` (no modulus when
    0), chained from `hash_key`."""
    return _cross(inputs, True, num_buckets,
                  DEFAULT_HASH_KEY if hash_key is None else hash_key, name)
