"""Assertions (tf.Assert, tf.debugging.assert_*) and numeric checks, with TensorFlow's messages.

As in TensorFlow 1, an assertion is an op that checks only when it runs: make it a control
dependency of what must be checked (`with tf.control_dependencies([tf.assert_positive(x)]):`) or
fetch it. When both sides are constants, a failing check raises at graph construction, as in
TensorFlow."""

import numpy as np

from flowstone import dtypes as _dtypes
from flowstone import errors as _errors
from flowstone.framework import ops as _ops
from flowstone.ops import array_ops as _array_ops
from flowstone.ops import math_ops as _math_ops
from flowstone.ops import reduction_ops as _reduction_ops
from flowstone.ops.basic_ops import group as _group
from flowstone.ops.basic_ops import no_op as _no_op
from flowstone.util.tf_export import tf_export


def split_string_data(data):
    """Splits the data of Assert and Print into tensors and the strings among them.

    Flowstone has no string dtype, so strings travel in the `string_data` attr with their
    positions among all items (`string_positions`)."""
    tensors, strings, positions = [], [], []
    for index, item in enumerate(data):
        if isinstance(item, (str, bytes)):
            strings.append(item.decode() if isinstance(item, bytes) else item)
            positions.append(index)
        else:
            tensors.append(_ops.convert_to_tensor(item))
    return tensors, {"string_data": strings, "string_positions": positions}


def _constant_value(tensor):
    if isinstance(tensor, _ops.Tensor) and tensor.op.type == "Const":
        return tensor.op.get_attr("value")
    return None


def _all(condition):
    """reduce_all of a bool tensor (True when empty)."""
    as_int = _math_ops.cast(condition, _dtypes.int32)
    return _math_ops.greater(_reduction_ops.reduce_min(as_int), 0)


def _message_prefix(message):
    return f"{message}.  " if message else ""


def _label(tensor):
    """How messages name a tensor: its name in a graph; executing eagerly, where tensors have
    no names, its shape and dtype (as TensorFlow does)."""
    if _ops.executing_eagerly():
        return f"shape={tensor.shape} dtype={tensor.dtype.name}"
    return tensor.name


def _eager_item(item, summarize):
    """One item of an eager assertion's data as TensorFlow prints it."""
    if isinstance(item, _ops.Tensor) or hasattr(item, "numpy"):
        flat = np.asarray(item.numpy()).reshape(-1)
        return str([str(v) for v in flat[:summarize]])
    return str(item)


def _eager_binary_data(symbol, x, y, holds, summarize):
    """TensorFlow's eager message for a failed `x <symbol> y`: the differing values when x and
    y have one (non-scalar) shape, then the first values of each."""
    data = [f"Condition x {symbol} y did not hold."]
    if summarize <= 0:
        return data
    if x.shape == y.shape and x.ndim:
        differ = ~holds
        indices = np.argwhere(differ)
        count = min(summarize, len(indices))
        data += [f"Indices of first {count} different values:", indices[:count],
                 "Corresponding x values:", x[differ][:count],
                 "Corresponding y values:", y[differ][:count]]
    x_flat, y_flat = x.reshape(-1), y.reshape(-1)
    data += [f"First {min(x_flat.size, summarize)} elements of x:", x_flat[:summarize],
             f"First {min(y_flat.size, summarize)} elements of y:", y_flat[:summarize]]
    return data


def _eager_binary_assert(symbol, numpy_test, x, y, data, summarize, message):
    """An assertion executed eagerly: checked now, None when it holds (as in TensorFlow)."""
    x_value, y_value = np.asarray(x.numpy()), np.asarray(y.numpy())
    holds = np.broadcast_to(numpy_test(x_value, y_value),
                            np.broadcast_shapes(x_value.shape, y_value.shape))
    if np.all(holds):
        return None
    summarize = 3 if summarize is None else (10 ** 9 if summarize < 0 else summarize)
    if data is None:
        lines = [str(d) for d in _eager_binary_data(symbol, x_value, y_value, holds, summarize)]
    else:
        lines = [_eager_item(d, summarize) for d in data]
    if message is not None:
        lines = [str(message)] + lines
    raise _errors.InvalidArgumentError(None, None, "\n".join(lines))


@tf_export("debugging.Assert", "Assert")
def Assert(condition, data, summarize=None, name=None):  # noqa: N802 - TensorFlow's name
    """Fails with InvalidArgumentError listing `data` (strings and tensors, `summarize` values
    each) when `condition` is false at run time; returns the op to depend on."""
    with _ops.name_scope(name, "Assert", [condition, data]) as scope:
        condition = _ops.convert_to_tensor(condition, name="Condition")
        tensors, attrs = split_string_data(data)
        attrs["summarize"] = 3 if summarize is None else summarize
        return _ops.apply_op("Assert", [condition, tensors], attrs, name="Assert")


def _assert_static(condition, data):
    if not condition:
        lines = []
        for item in data:
            value = _constant_value(item)
            lines.append(str(item) if value is None else str(value))
        raise _errors.InvalidArgumentError(None, None, "\n".join(lines))


def _binary_assert(symbol, opname, test, numpy_test, x, y, data, summarize, message, name):
    with _ops.name_scope(name, opname, [x, y, data]):
        x = _ops.convert_to_tensor(x, name="x")
        y = _ops.convert_to_tensor(y, name="y", dtype=x.dtype)
        if _ops.executing_eagerly():
            return _eager_binary_assert(symbol, numpy_test, x, y, data, summarize, message)
        if data is None:
            data = [f"Condition x {symbol} y did not hold element-wise:",
                    f"x ({_label(x)}) = ", x, f"y ({_label(y)}) = ", y]
        if message is not None:
            data = [message] + list(data)
        x_static, y_static = _constant_value(x), _constant_value(y)
        if x_static is not None and y_static is not None:
            _assert_static(np.all(numpy_test(x_static, y_static)), data)
        return Assert(_all(test(x, y)), data, summarize=summarize)


def _export_binary(symbol, opname, test, numpy_test):
    def assertion(x, y, data=None, summarize=None, message=None, name=None):
        return _binary_assert(symbol, opname, test, numpy_test, x, y, data, summarize, message,
                              name)

    assertion.__name__ = opname
    assertion.__doc__ = (f"Asserts `x {symbol} y` element-wise (with broadcasting); returns the "
                         "Assert op to depend on.")
    return tf_export(f"debugging.{opname}", opname)(assertion)


assert_equal = _export_binary("==", "assert_equal", _math_ops.equal, np.equal)
assert_none_equal = _export_binary("!=", "assert_none_equal", _math_ops.not_equal, np.not_equal)
assert_less = _export_binary("<", "assert_less", _math_ops.less, np.less)
assert_less_equal = _export_binary("<=", "assert_less_equal", _math_ops.less_equal,
                                   np.less_equal)
assert_greater = _export_binary(">", "assert_greater", _math_ops.greater, np.greater)
assert_greater_equal = _export_binary(">=", "assert_greater_equal", _math_ops.greater_equal,
                                      np.greater_equal)


def _sign_assert(opname, condition, compare, x, data, summarize, message, name):
    message = _message_prefix(message)
    with _ops.name_scope(name, opname, [x, data]):
        x = _ops.convert_to_tensor(x, name="x")
        if data is None:
            data = [message, f"Condition x {condition} 0 did not hold element-wise:",
                    f"x ({_label(x)}) = ", x]
        zero = _ops.convert_to_tensor(0, dtype=x.dtype)
        return compare(zero, x, data=data, summarize=summarize)


@tf_export("debugging.assert_positive", "assert_positive")
def assert_positive(x, data=None, summarize=None, message=None, name=None):
    """Asserts `x > 0` element-wise."""
    return _sign_assert("assert_positive", ">", assert_less, x, data, summarize, message, name)


@tf_export("debugging.assert_non_negative", "assert_non_negative")
def assert_non_negative(x, data=None, summarize=None, message=None, name=None):
    """Asserts `x >= 0` element-wise."""
    return _sign_assert("assert_non_negative", ">=", assert_less_equal, x, data, summarize,
                        message, name)


@tf_export("debugging.assert_negative", "assert_negative")
def assert_negative(x, data=None, summarize=None, message=None, name=None):
    """Asserts `x < 0` element-wise."""
    return _sign_assert("assert_negative", "<", assert_greater, x, data, summarize, message,
                        name)


@tf_export("debugging.assert_non_positive", "assert_non_positive")
def assert_non_positive(x, data=None, summarize=None, message=None, name=None):
    """Asserts `x <= 0` element-wise."""
    return _sign_assert("assert_non_positive", "<=", assert_greater_equal, x, data, summarize,
                        message, name)


@tf_export("debugging.assert_near", "assert_near")
def assert_near(x, y, rtol=None, atol=None, data=None, summarize=None, message=None, name=None):
    """Asserts `|x - y| <= atol + rtol * |y|` element-wise; the tolerances default to 10 times
    the dtype's epsilon."""
    message = _message_prefix(message)
    with _ops.name_scope(name, "assert_near", [x, y, rtol, atol, data]):
        x = _ops.convert_to_tensor(x, name="x")
        y = _ops.convert_to_tensor(y, name="y", dtype=x.dtype)
        eps = np.finfo(x.dtype.as_numpy_dtype).eps if x.dtype.is_floating else 0
        rtol = _ops.convert_to_tensor(10 * eps if rtol is None else rtol, name="rtol",
                                      dtype=x.dtype)
        atol = _ops.convert_to_tensor(10 * eps if atol is None else atol, name="atol",
                                      dtype=x.dtype)
        if data is None:
            data = [message,
                    f"x and y not equal to tolerance rtol = {rtol}, atol = {atol}",
                    f"x ({_label(x)}) = ", x, f"y ({_label(y)}) = ", y]
        tolerance = _math_ops.add(atol, _math_ops.multiply(rtol, _math_ops.abs(y)))
        difference = _math_ops.abs(_math_ops.subtract(x, y))
        return Assert(_all(_math_ops.less_equal(difference, tolerance)), data,
                      summarize=summarize)


@tf_export("debugging.assert_rank", "assert_rank")
def assert_rank(x, rank, message=None, name=None):
    """Asserts that `x` has rank `rank`: a ValueError now when the rank is known, else an
    assertion checked at run time."""
    with _ops.name_scope(name, "assert_rank", [x, rank]):
        x = _ops.convert_to_tensor(x)
        static_rank = x.shape.rank
        if static_rank is not None:
            if static_rank != rank:
                raise ValueError(f"{_message_prefix(message)}Tensor {_label(x)} must have rank "
                                 f"{rank}.  Received rank {static_rank}, shape {x.shape}")
            return _no_op(name="static_checks_determined_all_ok")
        data = [message or "", f"Tensor {_label(x)} must have rank", rank, "Received shape: ",
                _array_ops.shape(x)]
        actual = _array_ops.rank(x)
        return Assert(_math_ops.equal(actual, _ops.convert_to_tensor(rank, _dtypes.int32)),
                      data)


@tf_export("debugging.assert_type", "assert_type")
def assert_type(tensor, tf_type, message=None, name=None):
    """Raises TypeError now unless `tensor` has dtype `tf_type`; returns a no-op."""
    tf_type = _dtypes.as_dtype(tf_type)
    with _ops.name_scope(name, "assert_type", [tensor]):
        tensor = _ops.convert_to_tensor(tensor)
        if tensor.dtype != tf_type:
            raise TypeError(f"{_message_prefix(message)}{_label(tensor)} must be of type {tf_type!r}; "
                            f"got {tensor.dtype!r}")
        return _no_op(name="statically_determined_correct_type")


@tf_export("debugging.assert_shapes")
def assert_shapes(shapes, data=None, summarize=None, message=None, name=None):
    """Asserts the shapes of several tensors, with dimensions given as ints or as names that must
    agree across tensors (`[(x, ("N", "D")), (y, ("N",))]`). Known dimensions are checked now
    (ValueError); the rest at run time."""
    message = _message_prefix(message)
    checks = []
    sizes = {}
    with _ops.name_scope(name, "assert_shapes", [shapes, data]):
        for x, spec in (shapes.items() if isinstance(shapes, dict) else shapes):
            x = _ops.convert_to_tensor(x)
            spec = tuple(spec) if isinstance(spec, (list, tuple)) else (spec,)
            if x.shape.rank is not None and x.shape.rank != len(spec):
                raise ValueError(f"{message}Specified by tensor {_label(x)} dimension 0.  Tensor "
                                 f"{_label(x)} must have rank {len(spec)}.  Received rank "
                                 f"{x.shape.rank}, shape {x.shape}")
            if x.shape.rank is None:
                checks.append(assert_rank(x, len(spec), message=message or None))
            dynamic = None
            for axis, want in enumerate(spec):
                have = x.shape[axis] if x.shape.rank is not None else None
                if isinstance(want, str):
                    if want not in sizes:
                        sizes[want] = (have, x, axis)
                        continue
                    known, other, other_axis = sizes[want]
                    if known is not None and have is not None:
                        if known != have:
                            raise ValueError(
                                f"{message}Specified by tensor {_label(other)} dimension "
                                f"{other_axis}.  Tensor {_label(x)} dimension {axis} must have "
                                f"size {known}.  Received size {have}, shape {x.shape}")
                        continue
                    if known is not None:
                        want = known
                    else:
                        if dynamic is None:
                            dynamic = _array_ops.shape(x)
                        expected = _array_ops.shape(other)[other_axis]
                        checks.append(assert_equal(dynamic[axis], expected, data=data,
                                                   summarize=summarize,
                                                   message=message or None))
                        continue
                if have is not None:
                    if have != want:
                        raise ValueError(f"{message}Specified explicitly.  Tensor {_label(x)} "
                                         f"dimension {axis} must have size {want}.  Received "
                                         f"size {have}, shape {x.shape}")
                    continue
                if dynamic is None:
                    dynamic = _array_ops.shape(x)
                checks.append(assert_equal(dynamic[axis], want, data=data, summarize=summarize,
                                           message=message or None))
        if not checks:
            return _no_op(name="static_checks_determined_all_ok")
        return _group(*checks)


@tf_export("debugging.check_numerics", "check_numerics")
def check_numerics(tensor, message, name=None):
    """`tensor`, after checking at run time that it has no NaN or Inf (InvalidArgumentError
    "<message> : Tensor had NaN values" otherwise)."""
    tensor = _ops.convert_to_tensor(tensor)
    return _ops.apply_op("CheckNumerics", [tensor], {"message": message},
                         name=name or "CheckNumerics").outputs[0]


@tf_export("debugging.assert_all_finite", "verify_tensor_all_finite")
def verify_tensor_all_finite(t, msg, name=None, x=None, message=None):
    """check_numerics under TensorFlow 1's older name."""
    t = x if t is None else t
    msg = message if msg is None else msg
    with _ops.name_scope(name, "VerifyFinite", [t]):
        return check_numerics(t, message=msg)


@tf_export("add_check_numerics_ops")
def add_check_numerics_ops():
    """A group of CheckNumerics over every floating-point output in the default graph, chained
    so that they run one after another; run it with each step to find the first NaN or Inf."""
    checks = []
    graph = _ops.get_default_graph()
    for op in graph.get_operations():
        for output in op.outputs:
            if output.dtype in (_dtypes.float16, _dtypes.float32, _dtypes.float64):
                with _ops.control_dependencies(checks):
                    checks = [check_numerics(output, message=f"{op.name}:{output.value_index}")]
    return _group(*checks)
