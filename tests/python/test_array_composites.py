"""The TF1 top-level helpers that compose other ops (array_composites.py, gradient_options.py,
check_ops_static.py), against numpy and TensorFlow's messages. (Values were also compared with
TensorFlow's when written.)"""

import numpy as np
import pytest

import flowstone as tf
from gradient_check import check_gradients

X = np.arange(6.0).reshape(2, 3)


def _run(*tensors, feed=None):
    with tf.Session() as sess:
        return sess.run(list(tensors), feed)


def test_linspace_repeat_and_small_helpers():
    x = tf.constant(X)
    got = _run(tf.linspace(1.0, 5.0, 5), tf.lin_space(0.0, 1.0, 1),
               tf.linspace(tf.constant([0.0, 1.0]), tf.constant([1.0, 3.0]), 3, axis=1),
               tf.repeat(x, 2), tf.repeat(x, [1, 3], axis=0), tf.repeat(x, [0, 2, 1], axis=1),
               tf.identity_n([x, x * 2])[1], tf.shape_n([x, x[0]])[1],
               tf.parallel_stack([x[0], x[1]]))
    want = [np.linspace(1, 5, 5), [0.0], np.linspace([0.0, 1.0], [1.0, 3.0], 3, axis=1),
            np.repeat(X, 2), np.repeat(X, [1, 3], axis=0), np.repeat(X, [0, 2, 1], axis=1),
            X * 2, [3], X]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_repeat_gradient():
    check_gradients(lambda x: tf.repeat(x, [2, 0, 1], axis=1), [X], wrt=[0])


def test_broadcast_shapes():
    assert tf.broadcast_static_shape(tf.TensorShape([2, 1, 3]),
                                     tf.TensorShape([4, 1])).as_list() == [2, 4, 3]
    assert tf.broadcast_static_shape(tf.TensorShape([None, 1]),
                                     tf.TensorShape([5])).as_list() == [None, 5]
    with pytest.raises(ValueError, match=r"Incompatible shapes for broadcasting.*\(2,\) and "
                                         r"\(3,\)"):
        tf.broadcast_static_shape(tf.TensorShape([2]), tf.TensorShape([3]))
    a = tf.placeholder(tf.int32, [None])
    dynamic = tf.broadcast_dynamic_shape(a, tf.constant([4, 1]))
    assert _run(dynamic, feed={a: [2, 1, 3]})[0].tolist() == [2, 4, 3]
    with pytest.raises(tf.errors.InvalidArgumentError, match="Incompatible shapes"):
        _run(dynamic, feed={a: [3, 2]})


def test_get_static_value():
    x = tf.constant(X)
    assert tf.get_static_value(tf.shape(x)).tolist() == [2, 3]
    assert tf.get_static_value(tf.size(x)) == 6 and tf.get_static_value(tf.rank(x)) == 2
    np.testing.assert_array_equal(tf.get_static_value(tf.cast(x, tf.int32)), X.astype(np.int32))
    assert tf.get_static_value(tf.placeholder(tf.float32)) is None
    assert tf.get_static_value(tf.shape(tf.placeholder(tf.float32, [None, 2]))) is None


def test_hessians_and_gradient_options():
    v = tf.constant([1.0, 2.0], tf.float64)
    (hessian,) = tf.hessians(tf.reduce_sum(v * v * v) + v[0] * v[1], v)
    np.testing.assert_allclose(_run(hessian)[0], [[6.0, 1.0], [1.0, 12.0]])
    other = tf.constant(1.0)
    assert tf.gradients(v * 2, other, unconnected_gradients=tf.UnconnectedGradients.NONE) == [
        None]
    assert _run(tf.gradients(v * 2, other,
                             unconnected_gradients=tf.UnconnectedGradients.ZERO)[0]) == [0.0]
    assert tf.AggregationMethod.DEFAULT == tf.AggregationMethod.ADD_N
    assert tf.OpError is tf.errors.OpError and tf.NoGradient is tf.no_gradient


def test_static_assertions():
    x = tf.placeholder(tf.float32, [2])
    with pytest.raises(TypeError, match='Expected "x" to be integer type.  Found: Placeholder'):
        tf.assert_integer(x)
    with pytest.raises(ValueError, match=r"Expected scalar shape for Placeholder.*saw shape: "
                                         r"\(2,\)"):
        tf.assert_scalar(x)
    with pytest.raises(ValueError, match="must have rank at least 2.  Received rank 1"):
        tf.assert_rank_at_least(x, 2)
    with pytest.raises(ValueError, match=r"must have rank in \(0, 2\).  Received rank 1"):
        tf.assert_rank_in(x, [0, 2])
    with pytest.raises(ValueError, match="must be of the same type"):
        tf.assert_same_float_dtype([x, tf.constant(1.0, tf.float64)])
    assert tf.assert_same_float_dtype([x]) == tf.float32
    with pytest.raises(TypeError, match='Expected argument "values" to be a "proper" iterable'):
        tf.assert_proper_iterable("abc")
    tf.assert_proper_iterable([1, 2])
    scalar = tf.constant(1.0)
    assert tf.assert_scalar(scalar) is scalar


def test_run_time_rank_assertions_and_initialized_variables():
    y = tf.placeholder(tf.float32)
    at_least, rank_in = tf.assert_rank_at_least(y, 2), tf.assert_rank_in(y, [0, 2])
    v = tf.Variable(1.0)
    initialized = tf.assert_variables_initialized([v])
    with tf.Session() as sess:
        sess.run([at_least, rank_in], {y: [[1.0]]})
        with pytest.raises(tf.errors.InvalidArgumentError, match="must have rank at least 2"):
            sess.run(at_least, {y: [1.0]})
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"must have rank in \(0, 2\)"):
            sess.run(rank_in, {y: [1.0]})
        with pytest.raises(tf.errors.InvalidArgumentError, match="Variables not initialized"):
            sess.run(initialized)
        sess.run(v.initializer)
        sess.run(initialized)
