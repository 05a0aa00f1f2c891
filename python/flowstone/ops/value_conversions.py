"""TF1's small value helpers: saturate_cast, histogram_fixed_width_bins, floor_div and
convert_to_tensor_or_sparse_tensor."""

import numpy as np

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.framework.sparse_tensor import SparseTensor, SparseTensorValue
from flowstone.ops import math_ops
from flowstone.util.tf_export import export_value, tf_export

export_value("floor_div", math_ops.floordiv)


@tf_export("dtypes.saturate_cast", "saturate_cast")
def saturate_cast(value, dtype, name=None):
    """`value` cast to `dtype`, clamped first to the range `dtype` can hold (no wrap-around)."""
    with _ops.name_scope(name, "saturate_cast", [value]):
        value = _ops.convert_to_tensor(value, name="value")
        dtype = _dtypes.as_dtype(dtype)
        if value.dtype.min < dtype.min:
            value = math_ops.maximum(value, _ops.constant(dtype.min, dtype=value.dtype))
        if value.dtype.max > dtype.max:
            value = math_ops.minimum(value, _ops.constant(
                np.array(dtype.max).astype(value.dtype.as_numpy_dtype), dtype=value.dtype))
        return math_ops.cast(value, dtype)


@tf_export("histogram_fixed_width_bins")
def histogram_fixed_width_bins(values, value_range, nbins=100, dtype=_dtypes.int32, name=None):
    """The bin of each value among `nbins` equal bins over value_range = [lo, hi]; values below
    lo go to bin 0 and values at or above hi to the last bin."""
    with _ops.name_scope(name, "histogram_fixed_width_bins"):
        values = _ops.convert_to_tensor(values, name="values")
        value_range = _ops.convert_to_tensor(value_range, dtype=values.dtype, name="value_range")
        lo, hi = value_range[0], value_range[1]
        scaled = math_ops.divide(math_ops.subtract(values, lo), math_ops.subtract(hi, lo))
        bins = math_ops.floor(math_ops.multiply(scaled, float(nbins)))
        bins = math_ops.minimum(math_ops.maximum(bins, 0.0), float(nbins - 1))
        return math_ops.cast(bins, dtype)


@tf_export("convert_to_tensor_or_sparse_tensor")
def convert_to_tensor_or_sparse_tensor(value, dtype=None, name=None):
    """A SparseTensor (or SparseTensorValue) as a SparseTensor, anything else as a Tensor."""
    if isinstance(value, SparseTensorValue):
        value = SparseTensor.from_value(value)
    if isinstance(value, SparseTensor):
        if dtype is not None and _dtypes.as_dtype(dtype) != value.dtype:
            raise RuntimeError(f"Sparse dtype: requested = {_dtypes.as_dtype(dtype)!r}, actual "
                               f"= {value.dtype!r}")
        return value
    return _ops.convert_to_tensor(value, dtype=dtype, name=name)
