"""Gradient functions written in Python (tf.custom_gradient, tf.RegisterGradient with
gradient_override_map) for ops inside while_loop, cond and tf.function bodies: the gradient of
the loop or branch calls them, as TensorFlow does, and builds their ops in the body."""

import numpy as np
import pytest

import flowstone as tf
from peers import requires_tensorflow, run_tensorflow

# The clipped-gradient loop of the tests below, written for either framework.
_CLIPPED_LOOP = """
@tf.custom_gradient
def clip_grad(x):
    def grad(dy):
        return tf.clip_by_value(dy, -0.1, 0.1)
    return tf.identity(x), grad

x = tf.compat.v1.placeholder(tf.float32, [3])
def body(i, acc):
    return i + 1, clip_grad(acc * x)
_, out = tf.while_loop(lambda i, a: i < 3, body, [tf.constant(0), tf.ones([3])])
g = tf.gradients(tf.reduce_sum(out), x)[0]
with tf.compat.v1.Session() as sess:
    value, grad = sess.run([out, g], {x: [1.0, 2.0, 3.0]})
"""


def _clipped_loop():
    scope = {"tf": tf}
    exec(_CLIPPED_LOOP, scope)
    return scope["value"], scope["grad"]


def test_a_custom_gradient_in_a_while_loop_body_is_used():
    value, grad = _clipped_loop()
    np.testing.assert_allclose(value, [1.0, 8.0, 27.0])
    # Each iteration's gradient dy is clipped to 0.1 before the product rule multiplies it:
    # d/dx of acc_{k+1} = clip(d acc_{k+1}) * (acc_k + x * d acc_k / dx ...), summed over steps.
    np.testing.assert_allclose(grad, [0.3, 0.7, 1.3], rtol=1e-6)


@requires_tensorflow
def test_the_clipped_loop_matches_tensorflow():
    printed = run_tensorflow("import tensorflow as tf\ntf.compat.v1.disable_eager_execution()\n"
                             + _CLIPPED_LOOP + "\nprint(*value.tolist(), *grad.tolist())")
    theirs = [float(v) for v in printed.split()]
    value, grad = _clipped_loop()
    np.testing.assert_allclose(np.concatenate([value, grad]), theirs, rtol=1e-6)


def test_a_gradient_function_reads_forward_values_of_the_body():
    x = tf.placeholder(tf.float32, [2])

    @tf.custom_gradient
    def square_with_doubled_gradient(a):
        def grad(dy):
            return dy * 4.0 * a  # twice the true gradient 2a, reading the body's `a`
        return a * a, grad

    def body(i, acc):
        return i + 1, square_with_doubled_gradient(acc) + x

    _, out = tf.while_loop(lambda i, _: i < 2, body, [tf.constant(0), x])
    (g,) = tf.gradients(tf.reduce_sum(out), [x])
    xv = np.array([0.5, -1.5], np.float32)
    with tf.Session() as sess:
        value, grad = sess.run([out, g], {x: xv})
    a1 = xv * xv + xv
    np.testing.assert_allclose(value, a1 * a1 + xv, rtol=1e-6)
    # out = s(s(x) + x) + x with s'(a) taken as 4a: d out/dx = 4 a1 (4 x + 1) + 1.
    np.testing.assert_allclose(grad, 4 * a1 * (4 * xv + 1) + 1, rtol=1e-5)


def test_register_gradient_with_an_override_map_in_a_cond_branch():
    @tf.RegisterGradient("FlowstoneTestNegatedIdentity")
    def _negated(op, dy):
        return -dy

    x = tf.placeholder(tf.float32, [])
    pred = tf.placeholder(tf.bool, [])

    def true_branch():
        with tf.get_default_graph().gradient_override_map({"Identity": "FlowstoneTestNegatedIdentity"}):
            return tf.identity(x * 3.0)

    y = tf.cond(pred, true_branch, lambda: x * 5.0)
    (g,) = tf.gradients(y, [x])
    with tf.Session() as sess:
        assert sess.run(g, {x: 2.0, pred: True}) == pytest.approx(-3.0)
        assert sess.run(g, {x: 2.0, pred: False}) == pytest.approx(5.0)


def test_a_custom_gradient_in_a_loop_in_a_tf_function_under_a_tape():
    @tf.custom_gradient
    def clip_grad(v):
        return tf.identity(v), lambda dy: tf.clip_by_value(dy, -1.0, 1.0)

    @tf.function
    def grad_of_loop(v):
        with tf.GradientTape() as tape:
            tape.watch(v)
            _, out = tf.while_loop(lambda i, _: i < 2,
                                   lambda i, a: (i + 1, clip_grad(a) * 3.0), [0, v])
            loss = tf.reduce_sum(out * tf.constant([0.1, 1.0, -1.0]))
        return tape.gradient(loss, v)

    tf.enable_eager_execution()
    try:
        grad = grad_of_loop(tf.constant([1.0, 1.0, 1.0])).numpy()
    finally:
        tf.disable_eager_execution()
    # Backwards, each step multiplies by 3 and then clips to [-1, 1]: clip(3 clip(3 w)) for the
    # weights w: 0.1 -> 0.9, 1 -> 1, -1 -> -1 (3 without the custom gradient).
    np.testing.assert_allclose(grad, [0.9, 1.0, -1.0], rtol=1e-6)


def test_a_gradient_function_that_reads_a_tensor_outside_the_loop_is_a_clear_error():
    outside = tf.constant(2.0)

    @tf.custom_gradient
    def scaled(a):
        return tf.identity(a), lambda dy: dy * outside

    x = tf.placeholder(tf.float32, [])
    _, out = tf.while_loop(lambda i, _: i < 2, lambda i, a: (i + 1, scaled(a) * x),
                           [tf.constant(0), x])
    with pytest.raises(ValueError, match="from outside the body.*Pass the tensor into the loop"):
        tf.gradients(out, [x])
    # The graph stays usable: the forward loop still runs.
    with tf.Session() as sess:
        assert sess.run(out, {x: 2.0}) == pytest.approx(8.0)
