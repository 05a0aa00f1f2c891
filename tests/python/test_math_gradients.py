"""Gradients of the elementwise op family through tf.gradients: compositions, broadcasting with
shapes known only at run time, second derivatives, TensorFlow's conventions at ties and
singular points, and inputs that get no gradient. (Every op's gradient is also checked against
finite differences by test_op_conformance.py.)"""

import numpy as np
import pytest

import flowstone as tf
from flowstone import _C
from flowstone.ops import math_ops

from op_cases import CASES  # noqa: F401 - loads op_cases_math without a circular import
from op_cases_math import NOT_DIFFERENTIABLE


def _run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


def test_composition_of_binary_and_unary_ops():
    x = tf.placeholder(tf.float64, [2, 3])
    y = tf.placeholder(tf.float64, [2, 3])
    z = x * y + x / y - tf.square(x) + tf.exp(-y) - tf.sqrt(y)
    gx, gy = tf.gradients(z, [x, y])
    xv = np.array([[0.5, -1.0, 2.0], [1.5, -0.25, 3.0]])
    yv = np.array([[0.3, 1.2, 2.5], [0.9, 1.7, 0.6]])
    got_x, got_y = _run([gx, gy], {x: xv, y: yv})
    np.testing.assert_allclose(got_x, yv + 1 / yv - 2 * xv, rtol=1e-12)
    np.testing.assert_allclose(got_y, xv - xv / yv**2 - np.exp(-yv) - 0.5 / np.sqrt(yv),
                               rtol=1e-12)


def test_gradient_keeps_float32():
    x = tf.placeholder(tf.float32, [3])
    (g,) = tf.gradients(tf.tanh(x) * tf.sigmoid(x), [x])
    assert g.dtype == tf.float32
    xv = np.array([-1.0, 0.0, 2.0], np.float32)
    s = 1 / (1 + np.exp(-xv))
    expected = (1 - np.tanh(xv) ** 2) * s + np.tanh(xv) * s * (1 - s)
    np.testing.assert_allclose(_run(g, {x: xv}), expected, rtol=1e-6)


@pytest.mark.parametrize("x_shape,y_shape", [
    ((3, 1), (1, 4)),
    ((), (2, 3)),
    ((2, 3), ()),
    ((2, 3, 4), (4,)),
    ((1, 3, 1), (2, 1, 5)),
    ((0, 3), (1, 3)),
])
def test_broadcast_gradients_with_shapes_known_only_at_run_time(x_shape, y_shape):
    x = tf.placeholder(tf.float64, None)  # unknown rank
    y = tf.placeholder(tf.float64, None)
    outputs = {"add": x + y, "sub": x - y, "mul": x * y, "div": x / y,
               "sqdiff": tf.squared_difference(x, y), "max": tf.maximum(x, y)}
    grads = {name: tf.gradients(z, [x, y]) for name, z in outputs.items()}
    rng = np.random.default_rng(3)
    xv = rng.uniform(0.5, 1.5, x_shape)
    yv = rng.uniform(2.0, 3.0, y_shape)  # y > x everywhere, so max selects y
    got = _run(grads, {x: xv, y: yv})
    ones = np.ones(np.broadcast(xv, yv).shape)

    def reduce_to(g, shape):
        g = g * ones
        while g.ndim > len(shape):
            g = g.sum(axis=0)
        for axis, d in enumerate(shape):
            if d == 1:
                g = g.sum(axis=axis, keepdims=True)
        return g

    expected = {
        "add": (ones, ones),
        "sub": (ones, -ones),
        "mul": (yv, xv),
        "div": (1 / yv, -xv / yv**2),
        "sqdiff": (2 * (xv - yv), -2 * (xv - yv)),
        "max": (0 * ones, ones),
    }
    for name, (ex, ey) in expected.items():
        gx, gy = got[name]
        assert gx.shape == x_shape and gy.shape == y_shape, name
        np.testing.assert_allclose(gx, reduce_to(ex, x_shape), rtol=1e-12, err_msg=name)
        np.testing.assert_allclose(gy, reduce_to(ey, y_shape), rtol=1e-12, err_msg=name)


def test_one_graph_serves_several_run_time_shapes():
    x = tf.placeholder(tf.float32, [None, None])
    y = tf.placeholder(tf.float32, [None])
    gx, gy = tf.gradients(x * y, [x, y])
    with tf.Session() as sess:
        for rows, cols in [(2, 3), (1, 1), (4, 1)]:
            xv = np.arange(rows * cols, dtype=np.float32).reshape(rows, cols)
            yv = np.full([cols], 2.0, np.float32)
            got_x, got_y = sess.run([gx, gy], {x: xv, y: yv})
            np.testing.assert_allclose(got_x, np.broadcast_to(yv, xv.shape))
            np.testing.assert_allclose(got_y, xv.sum(axis=0))


def test_second_derivative_of_cube():
    x = tf.placeholder(tf.float64, [4])
    y = x**3.0
    (dy,) = tf.gradients(y, [x])
    (d2y,) = tf.gradients(dy, [x])
    xv = np.array([-2.0, 0.0, 0.5, 3.0])
    got_dy, got_d2y = _run([dy, d2y], {x: xv})
    np.testing.assert_allclose(got_dy, 3 * xv**2, rtol=1e-12)
    np.testing.assert_allclose(got_d2y, 6 * xv, rtol=1e-12)


def test_second_derivatives_through_outputs():
    # Tanh, Sigmoid, Exp and Sqrt write their gradients in terms of their outputs; the second
    # derivative flows back through those outputs.
    x = tf.placeholder(tf.float64, [3])
    xv = np.array([-0.7, 0.2, 1.4])
    t, s = np.tanh(xv), 1 / (1 + np.exp(-xv))
    cases = [
        (tf.tanh(x), -2 * t * (1 - t**2)),
        (tf.sigmoid(x), s * (1 - s) * (1 - 2 * s)),
        (tf.exp(x), np.exp(xv)),
        (tf.sqrt(x + 2.0), -0.25 * (xv + 2) ** -1.5),
        (tf.log(x + 2.0), -1 / (xv + 2) ** 2),
    ]
    second = [tf.gradients(tf.gradients(f, [x])[0], [x])[0] for f, _ in cases]
    for got, (_, expected) in zip(_run(second, {x: xv}), cases):
        np.testing.assert_allclose(got, expected, rtol=1e-10)


def test_integer_inputs_get_no_gradient():
    i = tf.placeholder(tf.int32, [3])
    f = tf.placeholder(tf.float32, [3])
    y = tf.cast(i * i, tf.float32) * f
    gi, gf = tf.gradients(y, [i, f])
    assert gi is None
    np.testing.assert_allclose(_run(gf, {i: [1, 2, 3], f: [1.0, 1.0, 1.0]}), [1, 4, 9])


def test_cast_through_an_integer_type_stops_the_gradient():
    x = tf.placeholder(tf.float32, [3])
    y = tf.cast(tf.cast(x, tf.int32), tf.float32) + tf.cast(x > 0.0, tf.float32)
    assert tf.gradients(y, [x]) == [None]


def test_cast_between_float_types_casts_the_gradient_back():
    x = tf.placeholder(tf.float32, [2])
    y = tf.cast(x, tf.float64) * np.array([3.0, -1.5])
    (g,) = tf.gradients(y, [x])
    assert g.dtype == tf.float32
    np.testing.assert_allclose(_run(g, {x: [1.0, 2.0]}), [3.0, -1.5])


def test_maximum_and_minimum_give_ties_to_x():
    x = tf.placeholder(tf.float64, [3])
    y = tf.placeholder(tf.float64, [3])
    feed = {x: [1.0, 2.0, 3.0], y: [1.0, 5.0, 0.0]}
    max_grads = tf.gradients(tf.maximum(x, y), [x, y])
    min_grads = tf.gradients(tf.minimum(x, y), [x, y])
    (mx, my), (nx, ny) = _run([max_grads, min_grads], feed)
    np.testing.assert_array_equal(mx, [1, 0, 1])
    np.testing.assert_array_equal(my, [0, 1, 0])
    np.testing.assert_array_equal(nx, [1, 1, 0])
    np.testing.assert_array_equal(ny, [0, 0, 1])


def test_pow_exponent_gradient_at_nonpositive_bases_is_zero():
    x = tf.placeholder(tf.float64, [3])
    y = tf.placeholder(tf.float64, [3])
    gx, gy = tf.gradients(tf.pow(x, y), [x, y])
    got_x, got_y = _run([gx, gy], {x: [0.0, -2.0, 4.0], y: [2.0, 3.0, 0.5]})
    np.testing.assert_allclose(got_x, [0.0, 12.0, 0.25])
    # d/dy x**y = x**y log(x): 0 (not NaN) where x <= 0.
    np.testing.assert_allclose(got_y, [0.0, 0.0, 2.0 * np.log(4.0)])


def test_abs_and_relu_at_zero():
    x = tf.placeholder(tf.float64, [3])
    ga, gr = tf.gradients(tf.abs(x), [x])[0], tf.gradients(math_ops.relu(x), [x])[0]
    got_a, got_r = _run([ga, gr], {x: [-2.0, 0.0, 3.0]})
    np.testing.assert_array_equal(got_a, [-1, 0, 1])
    np.testing.assert_array_equal(got_r, [0, 0, 1])


def test_floormod_gradient():
    x = tf.placeholder(tf.float64, [3])
    y = tf.placeholder(tf.float64, [])
    gx, gy = tf.gradients(x % y, [x, y])
    got_x, got_y = _run([gx, gy], {x: [7.5, -7.5, 1.0], y: 2.0})
    np.testing.assert_array_equal(got_x, [1, 1, 1])
    assert got_y == -(3 + -4 + 0)


def test_where_sends_the_gradient_to_the_selected_branch():
    cond = tf.placeholder(tf.bool, [None, 1])
    t = tf.placeholder(tf.float64, [None, None])
    e = tf.placeholder(tf.float64, [])
    gt, ge = tf.gradients(tf.where(cond, t, e) * 2.0, [t, e])
    got_t, got_e = _run([gt, ge], {cond: [[True], [False]], t: np.ones([2, 3]), e: 5.0})
    np.testing.assert_array_equal(got_t, [[2, 2, 2], [0, 0, 0]])
    assert got_e == 6.0


def test_sign_gradient_is_zero():
    x = tf.placeholder(tf.float64, [3])
    (g,) = tf.gradients(tf.sign(x) * x, [x])
    np.testing.assert_array_equal(_run(g, {x: [-2.0, 0.0, 3.0]}), [-1, 0, 1])


@pytest.mark.parametrize("op", sorted(NOT_DIFFERENTIABLE))
def test_ops_without_a_gradient_in_tensorflow_are_marked(op):
    assert _C.op_def(op)["not_differentiable"]


def test_piecewise_constant_ops_pass_no_gradient():
    x = tf.placeholder(tf.float64, [3])
    for y in [tf.floor(x), tf.ceil(x), tf.round(x), x // 2.0]:
        assert tf.gradients(y, [x]) == [None]
