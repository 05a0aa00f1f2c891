"""TensorShape and Dimension: static shapes that may be partly unknown."""

import operator
import sys

from flowstone.util.tf_export import tf_export

__all__ = ["Dimension", "TensorShape", "as_shape", "unknown_shape", "dimension_value"]

# TensorFlow 2's behaviour (the default here, as in TensorFlow 2's compat.v1): indexing or
# iterating a TensorShape gives ints and None. tf.disable_v2_tensorshape() (also run by
# tf.compat.v1.disable_v2_behavior()) brings back TF 1.x's Dimension objects, whose `.value`
# TF1 programs read (`x.get_shape()[1].value`).
_V2_BEHAVIOR = True


def _dimensions_for_caller():
    """Whether indexing gives the caller Dimension objects: in TF1 mode, to user code only.
    Flowstone's own modules are written against TensorFlow 2's ints and None (`dim is None`), so
    they see those whichever mode the program chose."""
    if _V2_BEHAVIOR:
        return False
    caller = sys._getframe(2).f_globals.get("__name__", "")
    return not (caller == "flowstone" or caller.startswith("flowstone."))


@tf_export("enable_v2_tensorshape")
def enable_v2_tensorshape():
    """TensorShape indexing and iteration give ints and None (TensorFlow 2)."""
    global _V2_BEHAVIOR
    _V2_BEHAVIOR = True


@tf_export("disable_v2_tensorshape")
def disable_v2_tensorshape():
    """TensorShape indexing and iteration give Dimension objects (TensorFlow 1.x)."""
    global _V2_BEHAVIOR
    _V2_BEHAVIOR = False


def _binary(op):
    """A Dimension operator: unknown if either side is, as TensorFlow's Dimension."""

    def apply(self, other):
        try:
            other = as_dimension(other)
        except (TypeError, ValueError):
            return NotImplemented
        if self._value is None or other.value is None:
            return Dimension(None)
        return Dimension(op(self._value, other.value))

    def reflected(self, other):
        try:
            other = as_dimension(other)
        except (TypeError, ValueError):
            return NotImplemented
        return apply(other, self)

    return apply, reflected


def _comparison(op):
    """A Dimension comparison: None (unknown) if either side is unknown."""

    def compare(self, other):
        other = as_dimension(other)
        if self._value is None or other.value is None:
            return None
        return op(self._value, other.value)

    return compare


class Dimension:
    """One dimension of a static shape; `value` is None when unknown."""

    __slots__ = ("_value",)

    def __init__(self, value):
        if isinstance(value, Dimension):
            value = value.value
        if value is not None:
            value = int(value)
            if value < 0:
                raise ValueError(f"Dimension {value} must be >= 0")
        self._value = value

    value = property(lambda self: self._value)

    def is_compatible_with(self, other):
        other = as_dimension(other)
        return self._value is None or other.value is None or self._value == other.value

    def merge_with(self, other):
        other = as_dimension(other)
        if not self.is_compatible_with(other):
            raise ValueError(f"Dimensions {self} and {other} are not compatible")
        return Dimension(self._value if self._value is not None else other.value)

    def __eq__(self, other):
        try:
            other = as_dimension(other)
        except (TypeError, ValueError):
            return NotImplemented
        if self._value is None or other.value is None:
            return None
        return self._value == other.value

    def __ne__(self, other):
        equal = self.__eq__(other)
        return equal if equal is None or equal is NotImplemented else not equal

    def __hash__(self):
        return hash(self._value)

    def __int__(self):
        return self._value

    __index__ = __int__

    __add__, __radd__ = _binary(operator.add)
    __sub__, __rsub__ = _binary(operator.sub)
    __mul__, __rmul__ = _binary(operator.mul)
    __floordiv__, __rfloordiv__ = _binary(operator.floordiv)
    __mod__, __rmod__ = _binary(operator.mod)
    __lt__ = _comparison(operator.lt)
    __le__ = _comparison(operator.le)
    __gt__ = _comparison(operator.gt)
    __ge__ = _comparison(operator.ge)

    def __reduce__(self):
        return Dimension, (self._value,)

    def __repr__(self):
        return f"Dimension({self._value})"

    def __str__(self):
        return "?" if self._value is None else str(self._value)


def as_dimension(value):
    return value if isinstance(value, Dimension) else Dimension(value)


@tf_export("dimension_value", "compat.dimension_value")
def dimension_value(dimension):
    """The int (or None) of a Dimension, int or None."""
    return dimension.value if isinstance(dimension, Dimension) else dimension


@tf_export("dimension_at_index", "compat.dimension_at_index")
def dimension_at_index(shape, index):
    """Dimension `index` of `shape`, unknown when the rank is."""
    shape = as_shape(shape)
    if shape.rank is None:
        return Dimension(None)
    return as_dimension(shape.dims[index])


class TensorShape:
    """A static shape: unknown rank (dims is None) or a list of dims that may be None."""

    __slots__ = ("_dims",)

    def __init__(self, dims):
        if dims is None:
            self._dims = None
        elif isinstance(dims, TensorShape):
            self._dims = dims._dims
        elif isinstance(dims, (int, Dimension)):
            self._dims = (dimension_value(Dimension(dims)),)
        else:
            self._dims = tuple(dimension_value(Dimension(d)) for d in dims)

    @property
    def rank(self):
        return None if self._dims is None else len(self._dims)

    ndims = rank

    @property
    def dims(self):
        return None if self._dims is None else [Dimension(d) for d in self._dims]

    def as_list(self):
        if self._dims is None:
            raise ValueError("as_list() is not defined on an unknown TensorShape.")
        return list(self._dims)

    def is_fully_defined(self):
        return self._dims is not None and all(d is not None for d in self._dims)

    def num_elements(self):
        if not self.is_fully_defined():
            return None
        n = 1
        for d in self._dims:
            n *= d
        return n

    def is_compatible_with(self, other):
        other = as_shape(other)
        if self._dims is None or other._dims is None:
            return True
        if len(self._dims) != len(other._dims):
            return False
        return all(a is None or b is None or a == b for a, b in zip(self._dims, other._dims))

    def merge_with(self, other):
        other = as_shape(other)
        if self._dims is None:
            return other
        if other._dims is None:
            return self
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {other} are not compatible")
        return TensorShape([a if a is not None else b for a, b in zip(self._dims, other._dims)])

    def assert_is_compatible_with(self, other):
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {as_shape(other)} are incompatible")

    def assert_has_rank(self, rank):
        if self.rank not in (None, rank):
            raise ValueError(f"Shape {self} must have rank {rank}")

    def with_rank(self, rank):
        if self._dims is None:
            return TensorShape([None] * rank)
        self.assert_has_rank(rank)
        return self

    def concatenate(self, other):
        other = as_shape(other)
        if self._dims is None or other._dims is None:
            return TensorShape(None)
        return TensorShape(self._dims + other._dims)

    def __len__(self):
        if self._dims is None:
            raise ValueError("Cannot take the length of shape with unknown rank.")
        return len(self._dims)

    def __iter__(self):
        if self._dims is None:
            raise ValueError("Cannot iterate over a shape with unknown rank.")
        if not _dimensions_for_caller():
            return iter(self._dims)
        return iter([Dimension(d) for d in self._dims])

    def __getitem__(self, key):
        if self._dims is None:
            if isinstance(key, slice):
                return TensorShape(None)
            return Dimension(None) if _dimensions_for_caller() else None
        if isinstance(key, slice):
            return TensorShape(self._dims[key])
        return Dimension(self._dims[key]) if _dimensions_for_caller() else self._dims[key]

    def __eq__(self, other):
        try:
            other = as_shape(other)
        except (TypeError, ValueError):
            return NotImplemented
        return self._dims == other._dims

    def __hash__(self):
        return hash(self._dims)

    def __bool__(self):
        return self._dims is not None

    def __repr__(self):
        if self._dims is None:
            return "TensorShape(None)"
        return f"TensorShape({list(self._dims)})"

    def __str__(self):
        if self._dims is None:
            return "<unknown>"
        dims = ["None" if d is None else str(d) for d in self._dims]
        if len(dims) == 1:
            return f"({dims[0]},)"
        return "(" + ", ".join(dims) + ")"

    def as_proto_dims(self):
        """The shape as the C++ attr expects it: None (unknown rank) or a list with None."""
        return None if self._dims is None else list(self._dims)


def as_shape(shape):
    return shape if isinstance(shape, TensorShape) else TensorShape(shape)


def unknown_shape(rank=None):
    return TensorShape(None if rank is None else [None] * rank)
