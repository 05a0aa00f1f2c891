"""tf.ensure_shape: x, checked against a (partial) shape. What the static shapes decide is
checked while building (ValueError); what only the run can tell is checked by an assertion
before x is passed on, and the result carries the merged static shape."""

from flowstone import dtypes as _dtypes
from flowstone import errors as _errors
from flowstone.framework import ops as _ops
from flowstone.framework.tensor_shape import as_shape
from flowstone.util.tf_export import tf_export


def _tf():
    import flowstone
    return flowstone


def _shape_text(shape):
    """A shape as TensorFlow's C++ prints it: [?,3], or <unknown>."""
    if shape.rank is None:
        return "<unknown>"
    return "[" + ",".join("?" if d is None else str(d) for d in shape.as_list()) + "]"


@tf_export("ensure_shape")
def ensure_shape(x, shape, name=None):
    tf = _tf()
    with _ops.name_scope(name, "EnsureShape", [x]):
        x = _ops.convert_to_tensor(x, name="input")
        expected = as_shape(shape)
        eager = _ops.executing_eagerly()
        # Executing eagerly the tensor has no name and its shape is its value's: the op fails,
        # as TensorFlow's EnsureShape does, naming its input.
        message = (f"Shape of tensor {'input' if eager else x.op.name} {_shape_text(x.shape)} "
                   f"is not compatible with expected shape {_shape_text(expected)}.")
        if not x.shape.is_compatible_with(expected):
            if eager:
                raise _errors.InvalidArgumentError(None, None, message)
            raise ValueError(message)
        if eager:
            return x
        checks = []
        if expected.rank is not None:
            known = [(i, d) for i, d in enumerate(expected.as_list()) if d is not None]
            static = x.shape.as_list() if x.shape.rank is not None else None
            if static is None:
                checks.append(tf.assert_equal(tf.rank(x), expected.rank, message=message))
            unchecked = [(i, d) for i, d in known if static is None or static[i] is None]
            if unchecked:
                with tf.control_dependencies(checks):
                    actual = tf.gather(tf.shape(x, out_type=_dtypes.int64),
                                       [i for i, _ in unchecked])
                checks.append(tf.assert_equal(actual, tf.constant([d for _, d in unchecked],
                                                                  _dtypes.int64),
                                              message=message))
        with tf.control_dependencies(checks):
            result = tf.identity(x)
        result.set_shape(x.shape.merge_with(expected))
        return result
