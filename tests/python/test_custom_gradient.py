"""tf.custom_gradient in graph mode: the decorated function's gradient replaces the body's,
for one and several inputs and outputs, with errors for a wrong number of gradients."""

import numpy as np
import pytest

import flowstone as tf


@tf.custom_gradient
def _clip_gradient(x):
    def grad(dy):
        return tf.clip_by_value(dy, -0.5, 0.5)
    return tf.identity(x), grad


@tf.custom_gradient
def _scale_gradient(x, multiplier):
    def grad(dy):
        return dy * multiplier, None
    return tf.identity(x), grad


def test_the_custom_gradient_replaces_the_bodys():
    x = tf.constant([1.0, 2.0, 3.0])
    y = _clip_gradient(x) * tf.constant([0.1, 2.0, -3.0])
    (dx,) = tf.gradients(tf.reduce_sum(y), [x])
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(dx), [0.1, 0.5, -0.5])
        np.testing.assert_allclose(sess.run(y), [0.1, 4.0, -9.0])


def test_two_inputs_and_a_structure_of_outputs():
    x = tf.constant([2.0, -1.0])
    m = tf.constant(3.0)

    @tf.custom_gradient
    def pair(a):
        def grad(d_sum, d_prod):
            return (d_sum * 10.0 + d_prod * 100.0) * tf.ones_like(a)
        return (tf.reduce_sum(a), tf.reduce_prod(a)), grad

    total, product = pair(x)
    scaled = _scale_gradient(x, m)
    grads = tf.gradients([total, scaled], [x, m])
    (only_product,) = tf.gradients(product, [x])
    with tf.Session() as sess:
        got, product_grad = sess.run([grads[0], only_product])
    np.testing.assert_allclose(got, [13.0, 13.0])  # 10 from the sum, 3 from the scaled identity
    np.testing.assert_allclose(product_grad, [100.0, 100.0])  # the unused d_sum is zero
    assert grads[1] is None


def test_a_wrong_number_of_gradients_is_an_error():
    @tf.custom_gradient
    def bad(a, b):
        return a + b, lambda dy: dy

    x = tf.constant(1.0)
    with pytest.raises(ValueError, match="expected to return 2 gradients but returned 1"):
        tf.gradients(bad(x, x), [x])
