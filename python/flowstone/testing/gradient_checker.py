"""tf.test.compute_gradient / compute_gradient_error (TensorFlow 1's gradient checker): the
Jacobian of y with respect to x from tf.gradients against central finite differences, both run
in the default session."""

import numpy as np

from flowstone import dtypes as _dtypes
from flowstone.client import session as _session
from flowstone.ops import basic_ops as _basic_ops
from flowstone.ops import gradients as _gradients


def _default_session():
    sess = _session.get_default_session()
    if sess is None:
        raise ValueError("compute_gradient runs in the default session: call it inside "
                         "`with tf.Session() as sess:` (or a TestCase's `with self.session():`)")
    return sess


def _float_dtype(dtype):
    if not dtype.is_floating:
        raise TypeError(f"compute_gradient needs floating-point tensors, got {dtype.name}")
    return np.float64 if dtype == _dtypes.float64 else np.float32


def _theoretical_jacobian(sess, x, x_shape, x_data, dy, y_size, dx, feed):
    """jacobian[:, c] = d(x) of the one-hot output gradient c, as tf.gradients computes it."""
    x_size = int(np.prod(x_shape))
    jacobian = np.zeros([x_size, y_size], dtype=np.float64)
    if x_size == 0 or y_size == 0:
        return jacobian
    one_hot = np.zeros([y_size], dtype=dy.dtype.as_numpy_dtype)
    for col in range(y_size):
        one_hot[:] = 0
        one_hot[col] = 1
        grad = sess.run(dx, {**feed, x: x_data, dy: one_hot.reshape(dy.shape.as_list())})
        if grad is None:
            continue  # y does not depend on x: a zero column
        jacobian[:, col] = np.reshape(grad, [x_size])
    return jacobian


def _numerical_jacobian(sess, x, x_shape, x_data, y, y_size, delta, feed):
    """jacobian[r, :] = (y(x + delta e_r) - y(x - delta e_r)) / (2 delta)."""
    x_size = int(np.prod(x_shape))
    jacobian = np.zeros([x_size, y_size], dtype=np.float64)
    flat = x_data.reshape([x_size])
    for row in range(x_size):
        original = flat[row]
        flat[row] = original + delta
        plus = np.asarray(sess.run(y, {**feed, x: x_data}), dtype=np.float64)
        flat[row] = original - delta
        minus = np.asarray(sess.run(y, {**feed, x: x_data}), dtype=np.float64)
        flat[row] = original
        jacobian[row, :] = ((plus - minus) / (2 * delta)).reshape([y_size])
    return jacobian


def _gradient_of_one(sess, x, x_shape, y, y_shape, dy, dx, x_init_value, delta, feed):
    dtype = _float_dtype(x.dtype)
    if x_init_value is not None:
        x_data = np.array(x_init_value, dtype=dtype)
        if list(x_data.shape) != list(x_shape):
            raise ValueError(f"x_init_value has shape {list(x_data.shape)}, x_shape is "
                             f"{list(x_shape)}")
    else:
        x_data = np.random.random_sample(x_shape).astype(dtype)
    y_size = int(np.prod(y_shape))
    theoretical = _theoretical_jacobian(sess, x, x_shape, x_data, dy, y_size, dx, feed)
    numerical = _numerical_jacobian(sess, x, x_shape, x_data.copy(), y, y_size, delta, feed)
    return theoretical, numerical


def compute_gradient(x, x_shape, y, y_shape, x_init_value=None, delta=1e-3, init_targets=None,
                     extra_feed_dict=None):
    """(theoretical, numerical) Jacobians of y with respect to x, each of shape
    [x_size, y_size]; for a list of x (with a list of shapes and of initial values), a list of
    such pairs. x is fed with x_init_value (default: uniform random values in [0, 1))."""
    sess = _default_session()
    feed = dict(extra_feed_dict or {})
    for init in init_targets or []:
        sess.run(init)
    xs = x if isinstance(x, (list, tuple)) else [x]
    shapes = x_shape if isinstance(x, (list, tuple)) else [x_shape]
    inits = (x_init_value if isinstance(x, (list, tuple)) and x_init_value is not None
             else [x_init_value] * len(xs))
    if not (len(xs) == len(shapes) == len(inits)):
        raise ValueError("x, x_shape and x_init_value must be lists of the same length")
    _float_dtype(y.dtype)
    with y.graph.as_default():
        dy = _basic_ops.placeholder(y.dtype, list(y_shape), name="compute_gradient_dy")
        dxs = _gradients.gradients(y, list(xs), _basic_ops.identity(dy))
    pairs = []
    for i, (xi, shape, init) in enumerate(zip(xs, shapes, inits)):
        others = {xj: np.array(ij if ij is not None else np.random.random_sample(sj),
                               dtype=_float_dtype(xj.dtype))
                  for j, (xj, sj, ij) in enumerate(zip(xs, shapes, inits)) if j != i}
        pairs.append(_gradient_of_one(sess, xi, shape, y, y_shape, dy, dxs[i], init, delta,
                                      {**feed, **others}))
    return pairs if isinstance(x, (list, tuple)) else pairs[0]


def compute_gradient_error(x, x_shape, y, y_shape, x_init_value=None, delta=1e-3,
                           init_targets=None, extra_feed_dict=None):
    """The largest absolute difference between the theoretical and numerical Jacobians."""
    grads = compute_gradient(x, x_shape, y, y_shape, x_init_value, delta, init_targets,
                             extra_feed_dict)
    if isinstance(grads, tuple):
        grads = [grads]
    error = 0.0
    for theoretical, numerical in grads:
        if theoretical.size or numerical.size:
            error = max(error, float(np.fabs(theoretical - numerical).max()))
    return error
