"""Eager tf.Variable and optimizers."""

import numpy as np
import pytest

import flowstone as tf


def test_variable_reads_writes_and_repr():
    v = tf.Variable([1.0, 2.0])
    assert repr(v) == ("<tf.Variable 'Variable:0' shape=(2,) dtype=float32, "
                       "numpy=array([1., 2.], dtype=float32)>")
    assert str(v + 1) == "tf.Tensor([2. 3.], shape=(2,), dtype=float32)"
    v.assign([3.0, 4.0])
    np.testing.assert_array_equal(v.numpy(), [3.0, 4.0])
    np.testing.assert_array_equal(v.assign_add([1.0, 1.0]).numpy(), [4.0, 5.0])
    np.testing.assert_array_equal(v.assign_sub([2.0, 2.0]).numpy(), [2.0, 3.0])
    np.testing.assert_array_equal(v.read_value().numpy(), [2.0, 3.0])
    np.testing.assert_array_equal(np.asarray(v), [2.0, 3.0])
    np.testing.assert_array_equal((v * v).numpy(), [4.0, 9.0])
    np.testing.assert_array_equal(tf.contrib.eager.Variable(1.0).numpy(), 1.0)


def test_a_read_keeps_its_value_after_an_assign():
    v = tf.Variable([1.0, 2.0])
    before = v.read_value()
    v.assign([7.0, 8.0])
    np.testing.assert_array_equal(before.numpy(), [1.0, 2.0])


def test_assign_of_wrong_shape_is_a_value_error():
    v = tf.Variable([1.0, 2.0])
    with pytest.raises(ValueError, match="Cannot assign a value of shape"):
        v.assign([1.0, 2.0, 3.0])


def test_minimize_lambda_and_apply_gradients():
    a = tf.Variable(1.0)
    opt = tf.train.GradientDescentOptimizer(0.1)
    for _ in range(3):
        opt.minimize(lambda: (a - 3.0) ** 2)
    np.testing.assert_allclose(a.numpy(), 1.976, rtol=1e-6)
    with tf.GradientTape() as tape:
        loss = (a - 5.0) ** 2
    opt.apply_gradients([(tape.gradient(loss, a), a)])
    np.testing.assert_allclose(a.numpy(), 2.5808, rtol=1e-6)
    with pytest.raises(RuntimeError, match="should be a function when eager execution"):
        opt.minimize((a - 1.0) ** 2)


def _adam_losses(x0, steps):
    w = tf.Variable(x0)
    opt = tf.train.AdamOptimizer(0.1)
    target = tf.constant([1.0, -1.0])
    out = []
    for _ in range(steps):
        opt.minimize(lambda: tf.reduce_sum((w - target) ** 2), var_list=[w])
        out.append(w.numpy().copy())
    return np.array(out)


def test_adam_eagerly_matches_graph_mode():
    eager = _adam_losses([0.0, 0.0], 4)
    tf.disable_eager_execution()
    with tf.Graph().as_default():
        w = tf.Variable([0.0, 0.0])
        loss = tf.reduce_sum((w - tf.constant([1.0, -1.0])) ** 2)
        train = tf.train.AdamOptimizer(0.1).minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            graph = []
            for _ in range(4):
                sess.run(train)
                graph.append(sess.run(w))
    tf.enable_eager_execution()
    np.testing.assert_allclose(eager, np.array(graph), rtol=1e-6)


def test_reads_outlive_their_variable_and_tape_with_gc_forced():
    import gc
    for step in range(20):
        v = tf.Variable(np.full(33, float(step), np.float32))
        read = v.read_value()
        view = read.numpy()
        with tf.GradientTape() as tape:
            y = tf.reduce_sum(v * v)
        grad = tape.gradient(y, v)
        v.assign_add(np.ones(33, np.float32))
        del v, tape, y
        gc.collect()
        assert read.numpy()[0] == step and view[-1] == step
        np.testing.assert_array_equal(grad.numpy(), np.full(33, 2.0 * step, np.float32))
