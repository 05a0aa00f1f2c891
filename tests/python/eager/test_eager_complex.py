"""Complex EagerTensors print as TensorFlow's do, and complex ops run eagerly."""

import numpy as np

import flowstone as tf


def test_complex_tensors_print_as_tensorflows():
    assert str(tf.constant(1 + 2j, tf.complex64)) == "tf.Tensor((1+2j), shape=(), dtype=complex64)"
    assert repr(tf.constant([1 + 2j, 3j], tf.complex64)) == (
        "<tf.Tensor: shape=(2,), dtype=complex64, numpy=array([1.+2.j, 0.+3.j], "
        "dtype=complex64)>")
    assert repr(tf.constant(-0.5j)) == "<tf.Tensor: shape=(), dtype=complex128, numpy=(-0-0.5j)>"


def test_complex_ops_and_gradients_run_eagerly():
    np.testing.assert_allclose(tf.signal.fft(tf.constant([1j, 1.0])).numpy(), [1 + 1j, -1 + 1j])
    x = tf.constant([0.5, -1.0], tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        loss = tf.reduce_sum(tf.abs(tf.complex(x, x * 2.0)) ** 2)
    np.testing.assert_allclose(tape.gradient(loss, x).numpy(), 10 * x.numpy())
