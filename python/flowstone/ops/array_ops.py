"""Array ops: shapes, reshaping, joining and splitting, slicing and indexing, filling, padding.

Each function normalizes its Python arguments and adds one C++ op (shape checks, static shapes
and errors come from the op's C++ shape function and kernel). Importing this module also gives
`Tensor` its numpy-style indexing, `t[1:, ..., None, 0]`.
"""

import builtins
import numbers
import operator

import numpy as np

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.framework.tensor_shape import TensorShape
from flowstone.ops import basic_ops as _basic_ops
from flowstone.util import dispatch as _dispatch

__all__ = [
    "reshape", "transpose", "expand_dims", "squeeze", "concat", "stack", "unstack", "split",
    "slice", "strided_slice", "gather", "one_hot", "fill", "zeros", "ones", "zeros_like",
    "ones_like", "range", "shape", "size", "rank", "tile", "pad", "newaxis",
    "invert_permutation", "unsorted_segment_sum",
]

newaxis = None

_INDEX_DTYPES = (_dtypes.int32, _dtypes.int64)
# Constant zeros/ones bigger than this become a Fill op instead of a Const in the graph.
_MAX_CONSTANT_ELEMENTS = 1000


def _apply(op_type, inputs, attrs=None, name=None, exact_name=False):
    return _ops.apply_op(op_type, inputs, attrs, name=name or op_type,
                         exact_name=exact_name).outputs


def _tensor_of(values):
    """The first Tensor among values, or None."""
    return next((v for v in values if isinstance(v, _ops.Tensor)), None)


def _convert_list(values, name):
    """Converts a list of tensor-likes, giving Python values the dtype of the first Tensor in the
    list (as TensorFlow does for list arguments such as tf.concat's values)."""
    if not isinstance(values, (list, tuple)):
        raise TypeError(f"{name} expects a list of tensors, got {type(values).__name__}")
    first = _tensor_of(values)
    dtype = None if first is None else first.dtype
    return [_ops.convert_to_tensor(v, preferred_dtype=dtype) for v in values]


def _index_tensor(value):
    """A shape-like argument (a list of ints, a TensorShape, a Tensor, or a list mixing ints and
    scalar Tensors such as `[tf.shape(x)[0], -1]`) as an int32/int64 Tensor."""
    if isinstance(value, _ops.Tensor):
        return value
    if isinstance(value, TensorShape):
        if not value.is_fully_defined():
            raise ValueError(f"Cannot convert a partially known TensorShape {value} to a Tensor.")
        value = value.as_list()
    if isinstance(value, (list, tuple)) and _tensor_of(value) is not None:
        return stack([_as_int_scalar(v, _tensor_of(value).dtype) for v in value])
    return _ops.convert_to_tensor(value, preferred_dtype=_dtypes.int32)


def _index_tensors(*values):
    """Several shape-like arguments of one op as index Tensors of one dtype: Python values take
    the dtype of the first argument that holds a Tensor (as TensorFlow converts an op's inputs)."""
    def holds_tensor(value):
        return isinstance(value, _ops.Tensor) or (
            isinstance(value, (list, tuple)) and _tensor_of(value) is not None)

    converted = [_index_tensor(v) if holds_tensor(v) else None for v in values]
    dtype = next((t.dtype for t in converted if t is not None), None)
    if dtype not in _INDEX_DTYPES:
        return [_index_tensor(v) for v in values]
    return [t if t is not None else _ops.convert_to_tensor(v, dtype=dtype)
            for t, v in zip(converted, values)]


def _as_int_scalar(value, dtype):
    return value if isinstance(value, _ops.Tensor) else _ops.convert_to_tensor(value, dtype=dtype)


def _static_dims(shape):
    """The dims of a shape argument when they are all Python ints, else None."""
    if isinstance(shape, TensorShape):
        return shape.as_list() if shape.is_fully_defined() else None
    if isinstance(shape, numbers.Integral):
        return [int(shape)]
    if isinstance(shape, (list, tuple, np.ndarray)):
        if all(isinstance(d, numbers.Integral) and not isinstance(d, bool) for d in shape):
            return [int(d) for d in shape]
    return None


# --- shapes -------------------------------------------------------------------------------------

def shape(input, name=None, out_type=_dtypes.int32):  # noqa: A002 - TensorFlow's names
    """The shape of `input` as a 1-D int32 (or out_type) tensor; a Const when it is static."""
    value = _ops.convert_to_tensor(input)
    out_type = _dtypes.as_dtype(out_type)
    if value.shape.is_fully_defined():
        return _ops.constant(value.shape.as_list(), dtype=out_type, name=name or "Shape")
    return _apply("Shape", [value], {"out_type": out_type}, name=name)[0]


def size(input, name=None, out_type=_dtypes.int32):  # noqa: A002
    """The number of elements of `input`; a Const when it is static."""
    value = _ops.convert_to_tensor(input)
    out_type = _dtypes.as_dtype(out_type)
    static = value.shape
    if static.is_fully_defined():
        return _ops.constant(static.num_elements(), dtype=out_type, name=name or "Size")
    if static.rank is not None and 0 in static.as_list():
        return _ops.constant(0, dtype=out_type, name=name or "Size")
    return _apply("Size", [value], {"out_type": out_type}, name=name)[0]


def rank(input, name=None):  # noqa: A002
    """The number of dimensions of `input` (int32); a Const when it is static."""
    value = _ops.convert_to_tensor(input)
    if value.shape.rank is not None:
        return _ops.constant(value.shape.rank, dtype=_dtypes.int32, name=name or "Rank")
    return _apply("Rank", [value], name=name)[0]


def reshape(tensor, shape, name=None):
    """`tensor`'s elements in `shape`; one entry may be -1 (inferred). No copy is made."""
    return _apply("Reshape", [_ops.convert_to_tensor(tensor), _index_tensor(shape)],
                  name=name)[0]


def expand_dims(input, axis=None, name=None, dim=None):  # noqa: A002
    """Inserts a dimension of size 1 at `axis` (TF1 also accepts `dim`)."""
    if dim is not None:
        if axis is not None:
            raise ValueError("Cannot specify both 'axis' and 'dim'")
        axis = dim
    if axis is None:
        raise ValueError("Must specify an axis argument to tf.expand_dims()")
    return _apply("ExpandDims", [_ops.convert_to_tensor(input), _index_tensor(axis)],
                  name=name)[0]


def squeeze(input, axis=None, name=None, squeeze_dims=None):  # noqa: A002
    """Removes dimensions of size 1: those in `axis`, or all of them."""
    if squeeze_dims is not None:
        if axis is not None:
            raise ValueError("Cannot specify both 'axis' and 'squeeze_dims'")
        axis = squeeze_dims
    if axis is None:
        axis = []
    elif isinstance(axis, numbers.Integral):
        axis = [axis]
    return _apply("Squeeze", [_ops.convert_to_tensor(input)],
                  {"squeeze_dims": [int(a) for a in axis]}, name=name)[0]


def transpose(a, perm=None, name="transpose", conjugate=False):
    """Permutes dimensions; by default reverses them. With `conjugate`, complex elements are
    conjugated too."""
    value = _ops.convert_to_tensor(a)
    if perm is None:
        if value.shape.rank is not None:
            perm = list(builtins.range(value.shape.rank - 1, -1, -1))
        else:
            perm = range(rank(value) - 1, -1, -1)
    op_type = "ConjugateTranspose" if conjugate and value.dtype.is_complex else "Transpose"
    return _apply(op_type, [value, _index_tensor(perm)], name=name)[0]


def invert_permutation(x, name=None):
    """The inverse of a permutation `x` of [0, n): y[x[i]] = i."""
    return _apply("InvertPermutation", [_index_tensor(x)], name=name)[0]


# --- joining and splitting ----------------------------------------------------------------------

def concat(values, axis, name="concat"):
    """Joins tensors along `axis`. A single tensor is returned as an identity."""
    handler = _dispatch.lookup("concat", values)
    if handler is not None:  # tf.RaggedTensor operands
        return handler(values, axis, name)
    if not isinstance(values, (list, tuple)):
        values = [values]
    if len(values) == 1:
        axis_tensor = _ops.convert_to_tensor(axis, dtype=_dtypes.int32)
        if axis_tensor.shape.rank not in (None, 0):
            raise ValueError(f"concat axis must be a scalar, got shape {axis_tensor.shape}")
        return _basic_ops.identity(values[0], name=name)
    return _apply("ConcatV2", [_convert_list(values, "concat"), _index_tensor(axis)],
                  name=name)[0]


def stack(values, axis=0, name="stack"):
    """Stacks tensors of one shape along a new dimension `axis`."""
    if axis == 0 and values and _tensor_of(values) is None:
        # Python or numpy values: one constant, as TensorFlow makes. Other tensor-likes (such as
        # Variables) do not convert as a list and are packed below.
        try:
            return _ops.convert_to_tensor(list(values), name=name)
        except (TypeError, ValueError):
            pass
    return _apply("Pack", [_convert_list(values, "stack")], {"axis": int(axis)}, name=name)[0]


def unstack(value, num=None, axis=0, name="unstack"):
    """Splits `value` along `axis` into a list of tensors with that dimension removed."""
    value = _ops.convert_to_tensor(value)
    if num is None:
        static = value.shape
        if static.rank is None:
            raise ValueError(f"Cannot infer num from shape {static}")
        if not -static.rank <= axis < static.rank:
            raise ValueError(f"axis = {axis} not in [{-static.rank}, {static.rank})")
        num = static.as_list()[axis]
        if num is None:
            raise ValueError(f"Cannot infer num from shape {static}")
    return _apply("Unpack", [value], {"num": int(num), "axis": int(axis)}, name=name)


def split(value, num_or_size_splits, axis=0, num=None, name="split"):
    """Splits `value` along `axis` into num_or_size_splits equal pieces, or pieces of the given
    sizes (one may be -1)."""
    value = _ops.convert_to_tensor(value)
    if isinstance(num_or_size_splits, numbers.Integral) and not isinstance(
            num_or_size_splits, bool):
        return _apply("Split", [_ops.convert_to_tensor(axis, dtype=_dtypes.int32), value],
                      {"num_split": int(num_or_size_splits)}, name=name)
    size_splits = _index_tensor(num_or_size_splits)
    if num is None:
        static = size_splits.shape
        num = static.as_list()[0] if static.rank == 1 else None
        if num is None:
            raise ValueError(f"Cannot infer num from shape {num_or_size_splits}")
    return _apply("SplitV", [value, size_splits, _ops.convert_to_tensor(axis, dtype=_dtypes.int32)],
                  {"num_split": int(num)}, name=name)


def tile(input, multiples, name=None):  # noqa: A002
    """Repeats `input` multiples[i] times along dimension i."""
    return _apply("Tile", [_ops.convert_to_tensor(input), _index_tensor(multiples)], name=name)[0]


def pad(tensor, paddings, mode="CONSTANT", name=None, constant_values=0):
    """Pads `tensor` by paddings[i] = [before, after] in dimension i. mode is CONSTANT (with
    constant_values), REFLECT or SYMMETRIC (mirroring the edges), case-insensitive."""
    value = _ops.convert_to_tensor(tensor)
    paddings = _index_tensor(paddings)
    mode = mode.upper()
    if mode == "CONSTANT":
        is_zero = not isinstance(constant_values, _ops.Tensor) and np.all(
            np.asarray(constant_values) == 0)
        if is_zero:
            return _apply("Pad", [value, paddings], name=name)[0]
        fill_value = _ops.convert_to_tensor(constant_values, dtype=value.dtype)
        return _apply("PadV2", [value, paddings, fill_value], name=name)[0]
    if mode in ("REFLECT", "SYMMETRIC"):
        return _apply("MirrorPad", [value, paddings], {"mode": mode}, name=name)[0]
    raise ValueError(f"Unknown padding mode: {mode}")


# --- slicing and gathering ----------------------------------------------------------------------

def slice(input_, begin, size, name=None):  # noqa: A001 - TensorFlow's name
    """input_[begin[i] : begin[i] + size[i]] in every dimension; size -1 means to the end."""
    return _apply("Slice", [_ops.convert_to_tensor(input_)] + _index_tensors(begin, size),
                  name=name)[0]


def strided_slice(input_, begin, end, strides=None, begin_mask=0, end_mask=0, ellipsis_mask=0,
                  new_axis_mask=0, shrink_axis_mask=0, var=None, name=None):
    """The StridedSlice op that `tensor[...]` builds; see TensorFlow's documentation of the
    masks. Strides default to 1; `var` (for sliced assignment in TensorFlow) is not used."""
    begin = _index_tensor(begin)
    end = _index_tensor(end)
    if strides is None:
        strides = ones_like(begin)
    return _apply("StridedSlice", [_ops.convert_to_tensor(input_), begin, end,
                                   _index_tensor(strides)], {
        "begin_mask": begin_mask, "end_mask": end_mask, "ellipsis_mask": ellipsis_mask,
        "new_axis_mask": new_axis_mask, "shrink_axis_mask": shrink_axis_mask,
    }, name=name)[0]


def gather(params, indices, validate_indices=None, name=None, axis=None, batch_dims=0):
    """Slices of `params` along `axis` (default: batch_dims) at `indices`. validate_indices is
    ignored: indices are always checked."""
    handler = _dispatch.lookup("gather", params)
    if handler is not None:  # a tf.RaggedTensor
        return handler(params, indices, name=name, axis=axis, batch_dims=batch_dims)
    # As in TensorFlow, the axis defaults to the first one after the batch dimensions.
    return _apply("GatherV2", [_ops.convert_to_tensor(params), _index_tensor(indices),
                               _index_tensor(batch_dims if axis is None else axis)],
                  {"batch_dims": int(batch_dims)}, name=name)[0]


def unsorted_segment_sum(data, segment_ids, num_segments, name=None):
    """Sums the rows of `data` (its dims after segment_ids' dims) by segment id into
    `num_segments` rows; rows with a negative id are dropped."""
    return _apply("UnsortedSegmentSum", [_ops.convert_to_tensor(data), _index_tensor(segment_ids),
                                         _index_tensor(num_segments)], name=name)[0]


_SLICE_TYPE_ERROR = ("Only integers, slices (`:`), ellipsis (`...`), tf.newaxis (`None`) and "
                     "scalar tf.int32/tf.int64 tensors are valid indices")


def _check_index(index):
    """An index entry as an int or a scalar int32/int64 Tensor; anything else is a TypeError."""
    if isinstance(index, _ops.Tensor):
        if index.dtype in _INDEX_DTYPES and index.shape.rank in (None, 0):
            return index
    elif not isinstance(index, bool) and hasattr(index, "__index__"):
        return operator.index(index)  # ints, numpy integers, Dimensions
    raise TypeError(f"{_SLICE_TYPE_ERROR}, got {index!r}")


def _slice_helper(tensor, slice_spec):
    """`tensor[slice_spec]`: numpy basic indexing as one StridedSlice op."""
    with _ops.name_scope(None, "strided_slice", [tensor]) as scope:
        packed, masks = _strided_slice_spec(slice_spec)
        return _apply("StridedSlice", [_ops.convert_to_tensor(tensor)] + packed, masks,
                      name=scope.rstrip("/"), exact_name=True)[0]


def strided_slice_assign(variable, slice_spec, value, name=None):
    """`variable[slice_spec] = value` in place (`variable[...].assign(value)`), as one
    ResourceStridedSliceAssign op; returns the variable's value after it."""
    with _ops.name_scope(name, "strided_slice_assign", [value]):
        packed, masks = _strided_slice_spec(slice_spec)
        value = _ops.convert_to_tensor(value, dtype=variable.dtype, name="value")
        op = _ops.apply_op("ResourceStridedSliceAssign", [variable.handle] + packed + [value],
                           masks, name="ResourceStridedSliceAssign")
    if _ops.executing_eagerly():
        return variable.value()
    with _ops.control_dependencies([op]):
        return variable.read_value()


def _strided_slice_spec(slice_spec):
    """The begin, end and strides index vectors and the masks of StridedSlice for numpy basic
    indexing `slice_spec`.

    Each entry becomes a (begin, end, stride) triple and a bit in one of the masks: a slice with
    a missing start/stop sets begin_mask/end_mask, `...` ellipsis_mask, None new_axis_mask, and an
    integer (or scalar Tensor) index shrink_axis_mask.
    """
    if not isinstance(slice_spec, tuple):
        slice_spec = (slice_spec,)
    begin, end, strides = [], [], []
    masks = {"begin_mask": 0, "end_mask": 0, "ellipsis_mask": 0, "new_axis_mask": 0,
             "shrink_axis_mask": 0}
    for i, s in enumerate(slice_spec):
        bit = 1 << i
        if isinstance(s, builtins.slice):
            for value, out, mask in ((s.start, begin, "begin_mask"), (s.stop, end, "end_mask")):
                if value is None:
                    out.append(0)
                    masks[mask] |= bit
                else:
                    out.append(_check_index(value))
            strides.append(1 if s.step is None else _check_index(s.step))
        elif s is Ellipsis or s is None:
            begin.append(0)
            end.append(0)
            strides.append(1)
            masks["ellipsis_mask" if s is Ellipsis else "new_axis_mask"] |= bit
        else:
            s = _check_index(s)
            begin.append(s)
            # A shrink entry reads only its begin; the end is s + 1 as TensorFlow writes it, or
            # the index itself for a Tensor index (the kernel ignores it), sparing an add op.
            end.append(s if isinstance(s, _ops.Tensor) else s + 1)
            strides.append(1)
            masks["shrink_axis_mask"] |= bit
    index_dtype = _dtypes.int64 if any(
        isinstance(v, _ops.Tensor) and v.dtype == _dtypes.int64
        for v in begin + end + strides) else _dtypes.int32
    return [_pack_indices(v, index_dtype) for v in (begin, end, strides)], masks


def _pack_indices(values, dtype):
    """A list of ints and scalar int Tensors as one index vector of `dtype`."""
    if _tensor_of(values) is None:
        return _ops.constant(values, dtype=dtype, name="stack")
    items = []
    for v in values:
        if isinstance(v, _ops.Tensor) and v.dtype != dtype:
            from flowstone.ops import math_ops
            v = math_ops.cast(v, dtype)
        items.append(v if isinstance(v, _ops.Tensor) else _ops.convert_to_tensor(v, dtype=dtype))
    return _apply("Pack", [items], {"axis": 0}, name="stack")[0]


# --- making tensors -----------------------------------------------------------------------------

def fill(dims, value, name=None):
    """A tensor of shape `dims` filled with the scalar `value`."""
    return _apply("Fill", [_index_tensor(dims), _ops.convert_to_tensor(value)], name=name)[0]


def _filled(shape, value, dtype, name):
    """zeros/ones: a Const when the shape is static and small, otherwise a Fill op."""
    dtype = _dtypes.as_dtype(dtype)
    dims = _static_dims(shape)
    if dims is not None and all(d >= 0 for d in dims) and \
            int(np.prod(dims)) < _MAX_CONSTANT_ELEMENTS:
        return _ops.constant(value, dtype=dtype, shape=dims, name=name)
    with _ops.name_scope(None, name, [shape]) as scope:
        dims_tensor = _index_tensor(shape)
        if dims_tensor.shape.rank == 0:
            dims_tensor = reshape(dims_tensor, [-1])
        fill_value = _ops.convert_to_tensor(value, dtype=dtype)
        return _apply("Fill", [dims_tensor, fill_value], name=scope.rstrip("/"),
                      exact_name=True)[0]


def zeros(shape, dtype=_dtypes.float32, name=None):
    """A tensor of zeros (False for bool)."""
    dtype = _dtypes.as_dtype(dtype)
    return _filled(shape, False if dtype == _dtypes.bool else 0, dtype, name or "zeros")


def ones(shape, dtype=_dtypes.float32, name=None):
    """A tensor of ones (True for bool)."""
    dtype = _dtypes.as_dtype(dtype)
    return _filled(shape, True if dtype == _dtypes.bool else 1, dtype, name or "ones")


def _like(op_type, filled, tensor, dtype, name, optimize):
    value = _ops.convert_to_tensor(tensor)
    dtype = value.dtype if dtype is None else _dtypes.as_dtype(dtype)
    # A variant's zeros depend on its value (a list of zeros as long as the list).
    if optimize and value.shape.is_fully_defined() and dtype != _dtypes.variant:
        # The result does not depend on the value of `tensor`: a constant will do.
        return filled(value.shape.as_list(), dtype=dtype, name=name)
    if dtype != value.dtype:
        result = filled(shape(value), dtype=dtype, name=name)
        result.set_shape(value.shape)
        return result
    return _apply(op_type, [value], name=name)[0]


def zeros_like(tensor, dtype=None, name=None, optimize=True):
    """Zeros with the shape of `tensor` (and its dtype unless `dtype` is given)."""
    return _like("ZerosLike", zeros, tensor, dtype, name or "zeros_like", optimize)


def ones_like(tensor, dtype=None, name=None, optimize=True):
    """Ones with the shape of `tensor` (and its dtype unless `dtype` is given)."""
    return _like("OnesLike", ones, tensor, dtype, name or "ones_like", optimize)


_RANGE_DTYPES = [_dtypes.int32, _dtypes.int64, _dtypes.float32, _dtypes.float64]


def range(start, limit=None, delta=1, dtype=None, name="range"):  # noqa: A001
    """[start, start + delta, ...) up to limit, like Python's range; `range(n)` is [0, n).

    Without `dtype` the result takes the widest dtype of the arguments in the order int32 <
    int64 < float32 < float64 (Python ints are int32, floats float32).
    """
    if limit is None:
        start, limit = 0, start
    dtype = None if dtype is None else _dtypes.as_dtype(dtype)
    args = [v if isinstance(v, _ops.Tensor) else _ops.convert_to_tensor(v, dtype=dtype)
            for v in (start, limit, delta)]
    if dtype is None:
        for arg in args:
            if arg.dtype not in _RANGE_DTYPES:
                raise TypeError(f"range arguments must be int32, int64, float32 or float64, "
                                f"got {arg.dtype.name}")
        dtype = max((arg.dtype for arg in args), key=_RANGE_DTYPES.index)
    converted = []
    for original, arg in zip((start, limit, delta), args):
        if arg.dtype != dtype:
            if isinstance(original, _ops.Tensor):
                from flowstone.ops import math_ops
                arg = math_ops.cast(arg, dtype)
            else:
                arg = _ops.convert_to_tensor(original, dtype=dtype)
        converted.append(arg)
    return _apply("Range", converted, name=name)[0]


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    """A one-hot encoding of `indices` with a new dimension of size `depth` at `axis` (default
    last). The dtype comes from `dtype`, else on_value/off_value, else float32."""
    dtype = None if dtype is None else _dtypes.as_dtype(dtype)
    on = None if on_value is None else _ops.convert_to_tensor(on_value, preferred_dtype=dtype)
    off = None if off_value is None else _ops.convert_to_tensor(off_value, preferred_dtype=dtype)
    for value, what in ((on, "on_value"), (off, "off_value")):
        if value is not None and dtype is not None and value.dtype != dtype:
            raise TypeError(f"dtype {value.dtype.name} of {what} does not match dtype parameter "
                            f"{dtype.name}")
    if on is not None and off is not None and on.dtype != off.dtype:
        raise TypeError(f"dtype {on.dtype.name} of on_value does not match dtype "
                        f"{off.dtype.name} of off_value")
    if dtype is None:
        dtype = on.dtype if on is not None else off.dtype if off is not None else _dtypes.float32
    if on is None:
        on = _ops.convert_to_tensor(True if dtype == _dtypes.bool else 1, dtype=dtype)
    if off is None:
        off = _ops.convert_to_tensor(False if dtype == _dtypes.bool else 0, dtype=dtype)
    return _apply("OneHot", [_ops.convert_to_tensor(indices),
                             _ops.convert_to_tensor(depth, dtype=_dtypes.int32), on, off],
                  {"axis": -1 if axis is None else int(axis)}, name=name)[0]


_ops.Tensor.__getitem__ = _slice_helper
