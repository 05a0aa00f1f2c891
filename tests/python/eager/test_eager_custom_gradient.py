"""tf.custom_gradient while executing eagerly: under a GradientTape the decorated function's
gradient function replaces the gradient of its body (the body's ops are not recorded), for one
and several inputs, persistent tapes and errors; its gradient function is kept only while a tape
may need it. A second derivative through it is an error eagerly (TensorFlow records the gradient
function's ops) and works inside a tf.function. Compared with real TensorFlow where installed."""

import numpy as np
import pytest

import flowstone as tf
from flowstone.ops import script_ops
from peers import requires_tensorflow, run_tensorflow

# TensorFlow's documented example: log(1 + e^x) with a gradient that stays finite at x = 100.
LOG1PEXP = """
@tf.custom_gradient
def log1pexp(x):
    e = tf.exp(x)
    def grad(upstream):
        return upstream * (1 - 1 / (1 + e))
    return tf.math.log(1 + e), grad

x = tf.constant([0.0, 3.0, 100.0])
with tf.GradientTape() as tape:
    tape.watch(x)
    y = tf.reduce_sum(log1pexp(x) * tf.constant([1.0, 2.0, 3.0]))
result = [float(v) for v in tape.gradient(y, x).numpy()]
"""


def _log1pexp():
    scope = {"tf": tf}
    exec(LOG1PEXP, scope)
    return scope["result"]


def test_the_gradient_function_replaces_the_bodys_gradient():
    # The body's own gradient at 100 is inf / inf = nan; the custom one is finite.
    np.testing.assert_allclose(_log1pexp(), [0.5, 2 * (1 - 1 / (1 + np.exp(3.0))), 3.0],
                               rtol=1e-6)


@requires_tensorflow
def test_log1pexp_matches_tensorflow():
    want = run_tensorflow("import tensorflow as tf\n" + LOG1PEXP + "\nprint(*result)")
    np.testing.assert_allclose(_log1pexp(), [float(v) for v in want.split()], rtol=1e-6)


@tf.custom_gradient
def _straight_through_round(x):
    return tf.round(x), lambda dy: dy


def test_a_straight_through_estimator_trains_a_variable():
    v = tf.Variable([0.3, 0.7, 1.6])
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(_straight_through_round(v) * tf.constant([2.0, -1.0, 0.5]))
    (grad,) = tape.gradient(loss, [v])
    np.testing.assert_allclose(grad.numpy(), [2.0, -1.0, 0.5])  # round's own gradient is 0
    assert loss.numpy() == pytest.approx(0.0 * 2 - 1.0 + 2.0 * 0.5)


def test_two_inputs_with_one_gradient_left_out():
    @tf.custom_gradient
    def scaled(x, scale):
        return x * scale, lambda dy: (dy * 10.0, None)

    x = tf.constant([1.0, 2.0])
    scale = tf.constant(3.0)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([x, scale])
        y = tf.reduce_sum(scaled(x, scale))
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [10.0, 10.0])
    # TensorFlow gives None for an input whose gradient function returned None; Flowstone zeros
    # (docs/COMPAT.md).
    assert tape.gradient(y, scale).numpy() == 0.0


def test_a_structure_of_outputs_and_an_unused_output():
    @tf.custom_gradient
    def pair(a):
        def grad(d_sum, d_prod):
            return d_sum * 10.0 + d_prod * 100.0
        return (a + 1.0, a * 2.0), grad

    a = tf.constant([1.0, -1.0])
    with tf.GradientTape() as tape:
        tape.watch(a)
        first, _ = pair(a)
        y = tf.reduce_sum(first)
    # The unused output's gradient arrives as zeros.
    np.testing.assert_allclose(tape.gradient(y, a).numpy(), [10.0, 10.0])


def test_a_persistent_tape_keeps_the_gradient_function_until_it_is_deleted():
    before = len(script_ops._functions)
    x = tf.constant(2.0)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = _straight_through_round(x) * 3.0
    assert len(script_ops._functions) == before + 1
    for _ in range(2):
        assert tape.gradient(y, x).numpy() == 3.0
    del tape
    assert len(script_ops._functions) == before


def test_a_used_tape_and_a_reset_tape_release_the_gradient_function():
    before = len(script_ops._functions)
    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = _straight_through_round(x) * 3.0
    assert tape.gradient(y, x).numpy() == 3.0
    assert len(script_ops._functions) == before
    with tf.GradientTape() as other:
        other.watch(x)
        _straight_through_round(x)
        other.reset()
        assert len(script_ops._functions) == before
    # With no tape recording, nothing is registered at all.
    assert _straight_through_round(tf.constant(2.6)).numpy() == 3.0
    assert len(script_ops._functions) == before


@tf.custom_gradient
def _cube(x):
    return x * x * x, lambda dy: dy * 3.0 * x * x


def _second_derivative(x):
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = _cube(x)
        dy = inner.gradient(y, x)
    return dy, outer.gradient(dy, x)


def test_a_second_derivative_through_it_is_an_error_eagerly_and_works_in_a_function():
    with pytest.raises(tf.errors.UnimplementedError,
                       match="second derivative through a tf.custom_gradient function executed "
                             "eagerly is not supported .* Compute it inside a tf.function"):
        _second_derivative(tf.constant(2.0))
    dy, d2y = tf.function(_second_derivative)(tf.constant(2.0))
    assert dy.numpy() == pytest.approx(12.0)
    assert d2y.numpy() == pytest.approx(12.0)  # d(3x^2)/dx = 6x


def test_a_wrong_number_of_gradients_is_an_error_naming_it():
    @tf.custom_gradient
    def bad(x):
        return tf.identity(x), lambda dy: (dy, dy)

    x = tf.constant(1.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = bad(x)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="custom_gradient function expected to return 1 gradients but "
                             "returned 2 instead"):
        tape.gradient(y, x)
