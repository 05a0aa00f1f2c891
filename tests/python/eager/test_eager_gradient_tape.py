"""tf.GradientTape: recording in C++, backward passes with the graph gradient functions."""

import numpy as np
import pytest

import flowstone as tf


def _numeric_gradient(f, x, eps=1e-6):
    """Central differences of a float64 numpy function."""
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[i] = eps
        grad[i] = (f(x + step) - f(x - step)) / (2 * eps)
    return grad


def test_unwatched_constants_give_none():
    with tf.GradientTape() as tape:
        a = tf.constant([1.0, 2.0])
        b = tf.constant([3.0, 4.0])
        c = a * b
    assert tape.gradient(c, [a, b]) == [None, None]


def test_watched_constants_and_finite_differences():
    x0 = np.array([[0.3, -1.2], [0.7, 2.0]])
    w0 = np.array([[1.5, -0.5], [0.25, 1.0]])

    def f(x):
        return np.sum(np.tanh(x @ w0) * np.exp(-x) + np.sqrt(x * x + 1.0))

    x = tf.constant(x0)  # float64
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.tanh(tf.matmul(x, tf.constant(w0))) * tf.exp(-x) +
                          tf.sqrt(x * x + 1.0))
    np.testing.assert_allclose(y.numpy(), f(x0), rtol=1e-12)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), _numeric_gradient(f, x0), rtol=1e-6)


def test_non_persistent_tape_is_used_once():
    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    assert float(tape.gradient(y, x)) == 4.0
    with pytest.raises(RuntimeError, match="A non-persistent GradientTape can only be used to "
                                           "compute one set of gradients"):
        tape.gradient(y, x)


def test_persistent_tape_and_chain():
    x = tf.constant(3.0)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = y * y
    assert float(tape.gradient(z, x)) == 108.0  # 4 x^3
    assert float(tape.gradient(y, x)) == 6.0
    assert float(tape.gradient(z, y)) == 18.0


def test_nested_tapes_give_second_derivatives():
    x = tf.constant(3.0)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = x * x * x
        dy = inner.gradient(y, x)
    assert float(dy) == 27.0
    assert float(outer.gradient(dy, x)) == 18.0


def test_output_gradients_and_unconnected():
    x = tf.constant([1.0, 2.0])
    z = tf.constant([5.0, 5.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([x, z])
        y = x * x
    np.testing.assert_array_equal(
        tape.gradient(y, x, output_gradients=tf.constant([10.0, 1.0])).numpy(), [20.0, 4.0])
    assert tape.gradient(y, z) is None
    np.testing.assert_array_equal(
        tape.gradient(y, z, unconnected_gradients=tf.UnconnectedGradients.ZERO).numpy(), [0, 0])
    np.testing.assert_array_equal(tape.gradient(y, z, unconnected_gradients="zero").numpy(),
                                  [0, 0])


def test_stop_recording_and_reset():
    x = tf.constant([1.0, 2.0, 3.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        with tape.stop_recording():
            q = x * 2.0  # not recorded: a constant to the tape
        r = q * x
    np.testing.assert_array_equal(tape.gradient(r, x).numpy(), [2.0, 4.0, 6.0])
    with tape:
        tape.reset()
        tape.watch(x)
        s = x * x * x
    np.testing.assert_array_equal(tape.gradient(s, x).numpy(), [3.0, 12.0, 27.0])
    with pytest.raises(ValueError, match="Tape must be recording when stop_recording is called"):
        with tape.stop_recording():
            pass


def test_variables_are_watched_when_trainable():
    v = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
    frozen = tf.Variable(2.0, trainable=False)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.matmul(v, v)) * frozen
    grads = tape.gradient(loss, [v, frozen])
    vv = np.array([[1.0, 2.0], [3.0, 4.0]])
    ones = np.ones((2, 2))
    np.testing.assert_allclose(grads[0].numpy(), 2.0 * (ones @ vv.T + vv.T @ ones))
    assert grads[1] is None
    assert tape.watched_variables() == (v,)


def test_watch_accessed_variables_false():
    v = tf.Variable(3.0)
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        y = v * v
    assert tape.gradient(y, v) is None
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(v)
        y = v * v
    assert float(tape.gradient(y, v)) == 6.0


def test_jacobian_and_batch_jacobian():
    x = tf.constant([1.0, 2.0, 3.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
    np.testing.assert_array_equal(tape.jacobian(y, x).numpy(), np.diag([2.0, 4.0, 6.0]))
    xb = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    w = tf.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    with tf.GradientTape() as tape:
        tape.watch(xb)
        yb = tf.matmul(xb, w) ** 2
    jac = tape.batch_jacobian(yb, xb).numpy()
    assert jac.shape == (2, 3, 2)
    xb0, w0 = xb.numpy(), w.numpy()
    for b in range(2):
        expected = 2 * (xb0[b] @ w0)[:, None] * w0.T
        np.testing.assert_allclose(jac[b], expected)


def test_watching_a_non_tensor_is_an_error():
    with tf.GradientTape() as tape:
        with pytest.raises(ValueError, match="not tf.Tensor or tf.Variable"):
            tape.watch("x")


def test_no_gradient_through_a_non_differentiable_op():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.cast(tf.argmax(x), tf.float32)
    assert tape.gradient(y, x) is None


def test_an_unwatched_source_has_no_gradient_even_on_the_path():
    x = tf.constant([1.0, 2.0])
    k = tf.constant([3.0, 4.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        h = x * k
        y = h * h
    gx, gk = tape.gradient(h, [x, k])
    np.testing.assert_array_equal(gx.numpy(), [3.0, 4.0])
    assert gk is None
    np.testing.assert_array_equal(tape.gradient(y, h).numpy(), [6.0, 16.0])  # recorded output
