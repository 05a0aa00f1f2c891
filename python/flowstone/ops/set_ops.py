"""tf.sets: sizes, intersections, unions and differences of the sets held in the last dimension
of dense tensors and SparseTensors, over the C++ SetSize and *SetOperation ops."""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.framework.sparse_tensor import SparseTensor
from flowstone.ops.value_conversions import convert_to_tensor_or_sparse_tensor
from flowstone.util.tf_export import tf_export

_VALID_DTYPES = {_dtypes.int32, _dtypes.int64, _dtypes.uint8, _dtypes.string}


@tf_export("sets.size", "sets.set_size")
def set_size(a, validate_indices=True):
    """The number of distinct values in each set of the SparseTensor `a` (its last dimension),
    as an int32 tensor of a's other dimensions."""
    a = convert_to_tensor_or_sparse_tensor(a, name="a")
    if not isinstance(a, SparseTensor):
        raise TypeError(f"Expected `SparseTensor`, got {a}.")
    if a.values.dtype not in _VALID_DTYPES:
        raise TypeError(f"Invalid dtype `{a.values.dtype!r}` not in supported dtypes: "
                        f"`{sorted(d.name for d in _VALID_DTYPES)}`.")
    return _ops.apply_op("SetSize", [a.indices, a.values, a.dense_shape],
                         {"validate_indices": bool(validate_indices)}).outputs[0]


def _convert_operands(a, b):
    """a and b as tensors or SparseTensors of one set dtype; a SparseTensor a with a dense b is
    swapped (the ops take dense inputs first), and the third value says so."""
    a = convert_to_tensor_or_sparse_tensor(a, name="a")
    if a.dtype not in _VALID_DTYPES:
        raise TypeError(f"'a' has invalid dtype `{a.dtype!r}` not in supported dtypes: "
                        f"`{sorted(d.name for d in _VALID_DTYPES)}`.")
    b = convert_to_tensor_or_sparse_tensor(b, name="b")
    if b.dtype not in _VALID_DTYPES:
        raise TypeError(f"'b' has invalid dtype `{b.dtype!r}` not in supported dtypes: "
                        f"`{sorted(d.name for d in _VALID_DTYPES)}`.")
    if a.dtype != b.dtype:
        raise TypeError(f"Types don't match, {a.dtype!r} vs {b.dtype!r}.")
    if isinstance(a, SparseTensor) and not isinstance(b, SparseTensor):
        return b, a, True
    return a, b, False


def _set_operation(a, b, operation, validate_indices):
    attrs = {"set_operation": operation, "validate_indices": bool(validate_indices)}
    if isinstance(a, SparseTensor):
        op = _ops.apply_op("SparseToSparseSetOperation",
                           [a.indices, a.values, a.dense_shape, b.indices, b.values,
                            b.dense_shape], attrs)
    elif isinstance(b, SparseTensor):
        op = _ops.apply_op("DenseToSparseSetOperation",
                           [a, b.indices, b.values, b.dense_shape], attrs)
    else:
        op = _ops.apply_op("DenseToDenseSetOperation", [a, b], attrs)
    return SparseTensor(*op.outputs)


@tf_export("sets.intersection", "sets.set_intersection")
def set_intersection(a, b, validate_indices=True):
    """The values in both a's and b's sets, group by group, sorted, as a SparseTensor."""
    a, b, _ = _convert_operands(a, b)
    return _set_operation(a, b, "intersection", validate_indices)


@tf_export("sets.union", "sets.set_union")
def set_union(a, b, validate_indices=True):
    """The values in a's or b's sets, group by group, sorted, as a SparseTensor."""
    a, b, _ = _convert_operands(a, b)
    return _set_operation(a, b, "union", validate_indices)


@tf_export("sets.difference", "sets.set_difference")
def set_difference(a, b, aminusb=True, validate_indices=True):
    """The values of a's sets not in b's (b's not in a's with aminusb=False), group by group,
    sorted, as a SparseTensor."""
    a, b, flipped = _convert_operands(a, b)
    if flipped:
        aminusb = not aminusb
    return _set_operation(a, b, "a-b" if aminusb else "b-a", validate_indices)
