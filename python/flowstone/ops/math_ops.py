"""Elementwise math, comparisons, logic, casts and selection, plus the Tensor operators.

Every op is created the way TensorFlow creates ops: inside a name scope named after the op, so
that a Python value converted for it is named like 'add/y' and the op itself takes the scope's
name ('add'). The C++ kernels do all checking and computing.
"""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops

__all__ = [
    "add", "subtract", "multiply", "divide", "truediv", "realdiv", "div", "floordiv", "floormod",
    "mod", "pow", "maximum", "minimum", "squared_difference", "add_n",
    "negative", "abs", "square", "sqrt", "rsqrt", "exp", "log", "log1p", "sign", "floor", "ceil",
    "round", "sigmoid", "tanh", "relu",
    "cast", "to_float", "to_double", "to_int32", "to_int64",
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "logical_and", "logical_or", "logical_not", "where", "where_v2",
]


# --- helpers ------------------------------------------------------------------------------------

def _is_symbolic(value):
    """True for Tensors and tensor-like graph values (variables) that carry their own dtype."""
    return isinstance(value, _ops.Tensor) or isinstance(getattr(value, "dtype", None),
                                                          _dtypes.DType)


def _binary_operands(x, y):
    """x and y as Tensors. A Python or numpy operand takes the dtype of the Tensor operand (as
    in TensorFlow, `x + 1` with float32 x adds a float32 constant); when both are Tensors their
    dtypes are left for the op to check."""
    if _is_symbolic(x):
        x = _ops.convert_to_tensor(x, name="x")
        y = _ops.convert_to_tensor(y, dtype=None if _is_symbolic(y) else x.dtype, name="y")
    elif _is_symbolic(y):
        y = _ops.convert_to_tensor(y, name="y")
        x = _ops.convert_to_tensor(x, dtype=y.dtype, name="x")
    else:
        x = _ops.convert_to_tensor(x, name="x")
        y = _ops.convert_to_tensor(y, dtype=x.dtype, name="y")
    return x, y


def _finish(op_type, inputs, scope, attrs=None):
    """Adds the op named exactly after the enclosing scope ('add/' names it 'add')."""
    return _ops.apply_op(op_type, inputs, attrs, name=scope.rstrip("/") or op_type,
                         exact_name=bool(scope)).outputs[0]


def _binary(op_type, x, y, name, default_name):
    with _ops.name_scope(name, default_name, [x, y]) as scope:
        x, y = _binary_operands(x, y)
        return _finish(op_type, [x, y], scope)


def _unary(op_type, x, name, default_name=None):
    with _ops.name_scope(name, default_name or op_type, [x]) as scope:
        x = _ops.convert_to_tensor(x, name="x")
        return _finish(op_type, [x], scope)


# --- binary arithmetic --------------------------------------------------------------------------

def add(x, y, name=None):
    """x + y elementwise, with numpy broadcasting."""
    return _binary("AddV2", x, y, name, "Add")


def subtract(x, y, name=None):
    """x - y elementwise, with numpy broadcasting."""
    return _binary("Sub", x, y, name, "Sub")


def multiply(x, y, name=None):
    """x * y elementwise, with numpy broadcasting."""
    return _binary("Mul", x, y, name, "Mul")


def realdiv(x, y, name=None):
    """x / y elementwise for floating types."""
    return _binary("RealDiv", x, y, name, "RealDiv")


# Python 3 division of integers gives floats: TensorFlow divides int8/int16/uint8/uint16 in
# float32 and wider integers in float64.
_TRUEDIV_FLOAT = {_dtypes.uint8: _dtypes.float32, _dtypes.int32: _dtypes.float64,
                  _dtypes.int64: _dtypes.float64}


def truediv(x, y, name=None):
    """x / y with Python 3 semantics: integers are converted to floats first."""
    with _ops.name_scope(name, "truediv", [x, y]) as scope:
        x, y = _binary_operands(x, y)
        if x.dtype != y.dtype:
            raise TypeError(f"x and y must have the same dtype, got {x.dtype!r} != {y.dtype!r}.")
        float_dtype = _TRUEDIV_FLOAT.get(x.dtype)
        if float_dtype is not None:
            x = cast(x, float_dtype)
            y = cast(y, float_dtype)
        return _finish("RealDiv", [x, y], scope)


def divide(x, y, name=None):
    """x / y with Python 3 semantics (truediv)."""
    return truediv(x, y, name=name)


def div(x, y, name=None):
    """x / y with Python 2 semantics: floor division for integers, real division for floats."""
    with _ops.name_scope(name, "div", [x, y]) as scope:
        x, y = _binary_operands(x, y)
        op_type = "FloorDiv" if x.dtype.is_integer else "RealDiv"
        return _finish(op_type, [x, y], scope)


def floordiv(x, y, name=None):
    """floor(x / y) elementwise, like Python's //. Integer division by zero fails at run time."""
    return _binary("FloorDiv", x, y, name, "floordiv")


def floormod(x, y, name=None):
    """x - floor(x / y) * y elementwise, like Python's % (the result has the sign of y)."""
    return _binary("FloorMod", x, y, name, "FloorMod")


mod = floormod


def pow(x, y, name=None):  # noqa: A001 - TensorFlow's name
    """x ** y elementwise, with numpy broadcasting."""
    return _binary("Pow", x, y, name, "Pow")


def maximum(x, y, name=None):
    """max(x, y) elementwise, with numpy broadcasting."""
    return _binary("Maximum", x, y, name, "Maximum")


def minimum(x, y, name=None):
    """min(x, y) elementwise, with numpy broadcasting."""
    return _binary("Minimum", x, y, name, "Minimum")


def squared_difference(x, y, name=None):
    """(x - y) ** 2 elementwise, with numpy broadcasting."""
    return _binary("SquaredDifference", x, y, name, "SquaredDifference")


def add_n(inputs, name=None):
    """The elementwise sum of a list of Tensors of one dtype and shape."""
    if not isinstance(inputs, (list, tuple)) or not inputs:
        raise ValueError("inputs must be a list of at least one Tensor with the same dtype and "
                         "shape")
    with _ops.name_scope(name, "AddN", inputs) as scope:
        inputs = [_ops.convert_to_tensor(t) for t in inputs]
        if len(inputs) == 1:
            return _ops.apply_op("Identity", [inputs[0]], name=scope.rstrip("/") or "Identity",
                                 exact_name=bool(scope)).outputs[0]
        return _finish("AddN", [inputs], scope)


# --- unary math ---------------------------------------------------------------------------------

def negative(x, name=None):
    return _unary("Neg", x, name)


def abs(x, name=None):  # noqa: A001 - TensorFlow's name
    """|x| elementwise; for a complex x its magnitude, of the real dtype (ComplexAbs)."""
    with _ops.name_scope(name, "Abs", [x]) as scope:
        x = _ops.convert_to_tensor(x, name="x")
        if x.dtype.is_complex:
            return _finish("ComplexAbs", [x], scope, {"Tout": x.dtype.real_dtype})
        return _finish("Abs", [x], scope)


def square(x, name=None):
    return _unary("Square", x, name)


def sqrt(x, name=None):
    return _unary("Sqrt", x, name)


def rsqrt(x, name=None):
    return _unary("Rsqrt", x, name)


def exp(x, name=None):
    return _unary("Exp", x, name)


def log(x, name=None):
    return _unary("Log", x, name)


def log1p(x, name=None):
    return _unary("Log1p", x, name)


def sign(x, name=None):
    return _unary("Sign", x, name)


def floor(x, name=None):
    return _unary("Floor", x, name)


def ceil(x, name=None):
    return _unary("Ceil", x, name)


def round(x, name=None):  # noqa: A001 - TensorFlow's name
    """Rounds to the nearest integer, halves to even (banker's rounding)."""
    return _unary("Round", x, name)


def sigmoid(x, name=None):
    return _unary("Sigmoid", x, name)


def tanh(x, name=None):
    return _unary("Tanh", x, name)


def relu(features, name=None):
    """max(features, 0) elementwise (tf.nn.relu)."""
    return _unary("Relu", features, name)


# --- casts --------------------------------------------------------------------------------------

def cast(x, dtype, name=None):
    """x converted to `dtype`; a Tensor that already has it is returned unchanged."""
    dtype = _dtypes.as_dtype(dtype)
    if isinstance(x, _ops.Tensor) and x.dtype == dtype:
        return x
    with _ops.name_scope(name, "Cast", [x]) as scope:
        x = _ops.convert_to_tensor(x, name="x")
        if x.dtype == dtype:
            return x
        return _finish("Cast", [x], scope, {"SrcT": x.dtype, "DstT": dtype})


def to_float(x, name="ToFloat"):
    return cast(x, _dtypes.float32, name=name)


def to_double(x, name="ToDouble"):
    return cast(x, _dtypes.float64, name=name)


def to_int32(x, name="ToInt32"):
    return cast(x, _dtypes.int32, name=name)


def to_int64(x, name="ToInt64"):
    return cast(x, _dtypes.int64, name=name)


# --- comparisons and logic ----------------------------------------------------------------------

def equal(x, y, name=None):
    """x == y elementwise (bool), with numpy broadcasting."""
    return _binary("Equal", x, y, name, "Equal")


def not_equal(x, y, name=None):
    return _binary("NotEqual", x, y, name, "NotEqual")


def less(x, y, name=None):
    return _binary("Less", x, y, name, "Less")


def less_equal(x, y, name=None):
    return _binary("LessEqual", x, y, name, "LessEqual")


def greater(x, y, name=None):
    return _binary("Greater", x, y, name, "Greater")


def greater_equal(x, y, name=None):
    return _binary("GreaterEqual", x, y, name, "GreaterEqual")


def logical_and(x, y, name=None):
    return _binary("LogicalAnd", x, y, name, "LogicalAnd")


def logical_or(x, y, name=None):
    return _binary("LogicalOr", x, y, name, "LogicalOr")


def logical_not(x, name=None):
    return _unary("LogicalNot", x, name)


# --- selection ----------------------------------------------------------------------------------

def _where(condition, x, y, name, select_name):
    if x is None and y is None:
        with _ops.name_scope(name, "Where", [condition]) as scope:
            condition = _ops.convert_to_tensor(condition, preferred_dtype=_dtypes.bool,
                                               name="condition")
            return _finish("Where", [condition], scope, {"T": condition.dtype})
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    with _ops.name_scope(name, select_name, [condition, x, y]) as scope:
        # A Tensor condition keeps its dtype so that the op reports a non-bool one.
        condition = _ops.convert_to_tensor(
            condition, dtype=None if _is_symbolic(condition) else _dtypes.bool, name="condition")
        x, y = _binary_operands(x, y)
        if select_name == "Select" and _selects_rows(condition, x):
            # TF1's Select: a vector condition picks whole rows of x and y (its length is their
            # first dimension), where broadcasting would align it with their last one.
            from flowstone.ops import array_ops  # lazily: array_ops builds on this module
            condition = array_ops.reshape(condition, [-1] + [1] * (x.shape.rank - 1))
        return _finish("SelectV2", [condition, x, y], scope)


def _selects_rows(condition, x):
    """Whether a v1 select reads its condition as one bool per row: a vector condition and a
    higher-rank x, unless the static shapes show the vector's length is not x's row count
    (then it broadcasts, as the v2 select does)."""
    if condition.shape.rank != 1 or (x.shape.rank or 0) < 2:
        return False
    length, rows = condition.shape.as_list()[0], x.shape.as_list()[0]
    return length is None or rows is None or length == rows


def where(condition, x=None, y=None, name=None):
    """With x and y: elements of x where condition is true, else of y (the three broadcast
    together, as in tf.where_v2). Without them: the int64 coordinates [num_true, rank] of the
    true elements of condition."""
    return _where(condition, x, y, name, "Select")


def where_v2(condition, x=None, y=None, name=None):
    return _where(condition, x, y, name, "SelectV2")


# --- Tensor operators ---------------------------------------------------------------------------

def _matmul(a, b):
    # The matmul module is its own op family; importing it lazily keeps the modules independent.
    from flowstone.ops import matmul_ops
    return matmul_ops.matmul(a, b)


def _operator(func, default_name, reverse=False):
    """A binary operator method: `x + y` is add(x, y) named 'add', `1 - x` is sub(1, x)."""
    if reverse:
        def method(self, other):
            return func(other, self, name=default_name)
    else:
        def method(self, other):
            return func(self, other, name=default_name)
    return method


_BINARY_OPERATORS = [
    ("add", add, "add"), ("sub", subtract, "sub"), ("mul", multiply, "mul"),
    ("truediv", truediv, "truediv"), ("floordiv", floordiv, "floordiv"),
    ("mod", floormod, "mod"), ("pow", pow, "pow"),
    ("and", logical_and, "and"), ("or", logical_or, "or"),
]

for _op_name, _func, _default in _BINARY_OPERATORS:
    setattr(_ops.Tensor, f"__{_op_name}__", _operator(_func, _default))
    setattr(_ops.Tensor, f"__r{_op_name}__", _operator(_func, _default, reverse=True))

_ops.Tensor.__lt__ = lambda self, other: less(self, other)
_ops.Tensor.__le__ = lambda self, other: less_equal(self, other)
_ops.Tensor.__gt__ = lambda self, other: greater(self, other)
_ops.Tensor.__ge__ = lambda self, other: greater_equal(self, other)
_ops.Tensor.__neg__ = lambda self: negative(self)
_ops.Tensor.__abs__ = lambda self: abs(self)
_ops.Tensor.__invert__ = lambda self: logical_not(self)
_ops.Tensor.__matmul__ = lambda self, other: _matmul(self, other)
_ops.Tensor.__rmatmul__ = lambda self, other: _matmul(other, self)
