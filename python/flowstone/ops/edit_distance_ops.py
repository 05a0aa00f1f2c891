"""tf.edit_distance on the EditDistance op (src/ops/array/edit_distance_ops.cc)."""

from flowstone.framework import ops as _ops
from flowstone.framework.sparse_tensor import SparseTensor, SparseTensorValue
from flowstone.util.tf_export import tf_export


@tf_export("edit_distance")
def edit_distance(hypothesis, truth, normalize=True, name="edit_distance"):
    """The Levenshtein distance between each hypothesis and truth sequence (SparseTensors whose
    last dimension runs along the sequences), divided by the truth's length when `normalize`."""
    if not isinstance(hypothesis, (SparseTensor, SparseTensorValue)):
        raise TypeError("Hypothesis must be a SparseTensor.")
    if not isinstance(truth, (SparseTensor, SparseTensorValue)):
        raise TypeError("Truth must be a SparseTensor.")
    hypothesis, truth = SparseTensor.from_value(hypothesis), SparseTensor.from_value(truth)
    op = _ops.apply_op("EditDistance", [
        hypothesis.indices, hypothesis.values, hypothesis.dense_shape, truth.indices,
        truth.values, truth.dense_shape], {"normalize": bool(normalize)}, name=name)
    return op.outputs[0]
