"""Indexing and the Python operators of tf.RaggedTensor (`rt[0]`, `rt[1:, :-1]`, `rt + 1`,
`rt < other`), set on the class when this module loads, as TensorFlow's ragged_getitem and
ragged_operators do: they build on ragged_tensor.py's kernels (RaggedGather, RaggedRange) and
on the dense ops of the flat values."""

from flowstone.framework import ops as _ops
from flowstone.ops import array_ops, math_ops
from flowstone.ops import ragged_tensor as _rt
from flowstone.ops.basic_ops import identity as _identity
from flowstone.ops.ragged_tensor import RaggedTensor

# --- Indexing ------------------------------------------------------------------------------------

def _row(rt, index):
    """Row `index` (a Python int or scalar tensor, negative counting from the end)."""
    nrows = rt.nrows()
    index = math_ops.cast(_ops.convert_to_tensor(index, name="index"), rt.row_splits.dtype)
    index = math_ops.where(index < 0, index + nrows, index)
    start, limit = rt.row_splits[index], rt.row_splits[index + 1]
    if isinstance(rt.values, RaggedTensor):
        return _slice_rows(rt.values, start, limit)
    return rt.values[start:limit]


def _slice_rows(rt, start, limit):
    """Rows [start, limit) of rt (scalars), as a RaggedTensor."""
    return _rt.gather_rows(rt, array_ops.range(start, limit))


def _getitem_first_dim(rt, key):
    if isinstance(key, slice):
        if key.start is None and key.stop is None and key.step is None:
            return rt
        return _rt.gather_rows(rt, array_ops.range(rt.nrows())[key])
    return _row(rt, key)


def getitem(rt, key):
    """rt[key]: ints and slices on the first dimension, slices (or `:`) on a ragged one, any
    index on the flat values' uniform dimensions."""
    if not isinstance(key, tuple):
        key = (key,)
    if any(k is Ellipsis or k is None for k in key):
        raise ValueError("Flowstone's RaggedTensor indexing takes ints and slices; Ellipsis and "
                         "tf.newaxis are not supported (see docs/COMPAT.md)")
    if not key:
        return rt
    first, rest = key[0], key[1:]
    if not rest:
        return _getitem_first_dim(rt, first)
    if not isinstance(first, slice):
        row = _row(rt, first)
        return row[rest] if len(rest) > 1 else row[rest[0]]
    rows = _getitem_first_dim(rt, first)
    return _index_inner(rows, rest)


def _index_inner(rt, key):
    """rt[:, key...]: key[0] indexes the second dimension (ragged or uniform)."""
    second, rest = key[0], key[1:]
    if not isinstance(second, slice):
        # As in TensorFlow: a row may be shorter than any index.
        raise ValueError("Cannot index into an inner ragged dimension.")
    if second == slice(None):  # the whole dimension: index within each of its elements
        if not rest:
            return rt
        inner = (slice(None),) + tuple(rest)
        return rt.with_values(getitem(rt.values, inner) if isinstance(rt.values, RaggedTensor)
                              else rt.values[inner])
    if second.step is not None or isinstance(rt.values, RaggedTensor):
        raise ValueError("Flowstone slices a ragged dimension without step and over dense values "
                         "(ragged_rank 1) only (see docs/COMPAT.md)")
    starts, limits = rt.row_splits[:-1], rt.row_splits[1:]
    lengths = limits - starts
    begin = _clamp_bound(second.start, lengths, array_ops.zeros_like(lengths))
    end = math_ops.maximum(_clamp_bound(second.stop, lengths, lengths), begin)
    op = _ops.apply_op("RaggedRange", [starts + begin, starts + end,
                                       _ops.convert_to_tensor(1, dtype=starts.dtype)],
                       {"Tsplits": rt.row_splits.dtype})
    result = RaggedTensor._from_splits(array_ops.gather(rt.values, op.outputs[1]),
                                       op.outputs[0], validate=False)
    return result if not rest else result.with_values(
        result.values[(slice(None),) + tuple(rest)])


def _clamp_bound(bound, lengths, if_none):
    """A slice bound per row: negative counts from the row's end, clamped to [0, length];
    `if_none` when the slice gives none."""
    if bound is None:
        return if_none
    bound = math_ops.cast(_ops.convert_to_tensor(bound), lengths.dtype)
    bound = math_ops.where(bound < 0, lengths + bound, bound + array_ops.zeros_like(lengths))
    return math_ops.minimum(math_ops.maximum(bound, 0), lengths)


RaggedTensor.__getitem__ = getitem

# --- Elementwise operators -----------------------------------------------------------------------

_OPERATORS = {
    "add": math_ops.add, "sub": math_ops.subtract, "mul": math_ops.multiply,
    "truediv": math_ops.truediv, "floordiv": math_ops.floordiv, "mod": math_ops.floormod,
    "pow": math_ops.pow, "lt": math_ops.less, "le": math_ops.less_equal,
    "gt": math_ops.greater, "ge": math_ops.greater_equal, "and": math_ops.logical_and,
    "or": math_ops.logical_or,
}
_UNARY = {"neg": math_ops.negative, "abs": math_ops.abs, "invert": math_ops.logical_not}


def _elementwise_operator(name, rt, *args):
    if name in _UNARY:
        return rt.with_flat_values(_UNARY[name](rt.flat_values))
    reflected = name.startswith("r") and name[1:] in _OPERATORS
    fn = _OPERATORS[name[1:] if reflected else name]
    other = args[0]
    return elementwise(lambda a, b: fn(b, a) if reflected else fn(a, b), rt, other)


def elementwise(fn, x, y):
    """fn(x, y) for a RaggedTensor x and a RaggedTensor of the same row partitions, a scalar, a
    tensor that broadcasts against the flat values' inner dimensions, or (ragged_rank 1) a
    [nrows, 1, ...] tensor broadcast along each row."""
    if isinstance(y, RaggedTensor):
        with _ops.control_dependencies(_rt.same_partitions(x, y)):
            other = _identity(y.flat_values)
        return x.with_flat_values(fn(x.flat_values, other))
    y = _ops.convert_to_tensor(y, dtype=x.dtype if not isinstance(y, _ops.Tensor) else None)
    inner_rank = x.flat_values.shape.ndims
    if y.shape.ndims is not None and inner_rank is not None and y.shape.ndims < inner_rank:
        return x.with_flat_values(fn(x.flat_values, y))
    if x.ragged_rank == 1 and y.shape.ndims is not None and y.shape.ndims >= 2 and \
            y.shape[1] == 1:
        per_value = array_ops.gather(y[:, 0], x.value_rowids())
        return x.with_flat_values(fn(x.flat_values, per_value))
    raise ValueError(f"Flowstone broadcasts a RaggedTensor of shape {x.shape} against scalars, "
                     f"ragged tensors of the same partitions, tensors of its values' inner "
                     f"shape or of shape [nrows, 1, ...]; got shape {y.shape} "
                     "(see docs/COMPAT.md)")


def _operator(name):
    def apply(self, *args):
        return _elementwise_operator(name, self, *args)
    apply.__name__ = f"__{name}__"
    return apply


for _name in ("add", "radd", "sub", "rsub", "mul", "rmul", "truediv", "rtruediv", "floordiv",
              "rfloordiv", "mod", "rmod", "pow", "rpow", "neg", "abs", "lt", "le", "gt", "ge",
              "and", "rand", "or", "ror", "invert"):
    setattr(RaggedTensor, f"__{_name}__", _operator(_name))
