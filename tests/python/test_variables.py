"""Variables: creation, initialization, assignment, scopes, per-session state."""

import numpy as np
import pytest

import flowstone as tf


def test_variable_from_value_tensor_and_callable():
    a = tf.Variable(np.arange(3, dtype=np.float64), name="a")
    b = tf.Variable(tf.constant([[1.0, 2.0]]), name="b")
    c = tf.Variable(lambda: tf.constant(5), name="c")
    assert a.dtype == tf.float64 and a.shape.as_list() == [3]
    assert b.name == "b:0" and b.op.name == "b"
    assert c.dtype == tf.int32
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(a), [0, 1, 2])
        np.testing.assert_array_equal(sess.run(b), [[1.0, 2.0]])
        assert sess.run(c) == 5


def test_uninitialized_variable_error_names_it_and_the_fix():
    w = tf.Variable(tf.constant(np.ones((10, 1), np.float32)), name="Weights")
    out = tf.identity(w)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError) as info:
            sess.run(out)
        assert "Attempting to use uninitialized value Weights" in info.value.message
        assert "global_variables_initializer" in info.value.message
        sess.run(w.initializer)
        assert sess.run(out).shape == (10, 1)


def test_assign_ops_and_read_values():
    v = tf.Variable([1.0, 2.0], name="v")
    assign = v.assign([5.0, 6.0])
    add = v.assign_add([1.0, 1.0])
    sub = tf.assign_sub(v, [0.5, 0.5])
    with tf.Session() as sess:
        sess.run(v.initializer)
        before = sess.run(v)
        np.testing.assert_array_equal(sess.run(add), [2.0, 3.0])
        np.testing.assert_array_equal(sess.run(sub), [1.5, 2.5])
        np.testing.assert_array_equal(sess.run(assign), [5.0, 6.0])
        np.testing.assert_array_equal(before, [1.0, 2.0])  # fetched values never change
        with pytest.raises(ValueError, match="Cannot assign a value of shape"):
            v.assign([1.0, 2.0, 3.0])
        v.load([9.0, 9.0], sess)
        np.testing.assert_array_equal(sess.run(v), [9.0, 9.0])


def test_two_sessions_hold_separate_values():
    v = tf.Variable(0.0)
    inc = v.assign_add(1.0)
    s1, s2 = tf.Session(), tf.Session()
    s1.run(v.initializer)
    s2.run(v.initializer)
    s1.run(inc)
    s1.run(inc)
    assert s1.run(v) == 2.0
    assert s2.run(v) == 0.0
    s1.close()
    s2.close()


def test_collections_trainable_and_initializers():
    a = tf.Variable(1.0, name="a")
    b = tf.Variable(2.0, name="b", trainable=False)
    assert tf.global_variables() == [a, b]
    assert tf.trainable_variables() == [a]
    with tf.Session() as sess:
        names = sess.run(tf.report_uninitialized_variables())
        assert list(names) == [b"a", b"b"]
        sess.run(tf.variables_initializer([a]))
        assert list(sess.run(tf.report_uninitialized_variables())) == [b"b"]
        sess.run(tf.global_variables_initializer())
        assert sess.run(tf.report_uninitialized_variables()).size == 0


def test_get_variable_scopes_and_reuse():
    with tf.variable_scope("layer"):
        w = tf.get_variable("w", [3, 2], initializer=tf.zeros_initializer())
        k = tf.get_variable("k", [2], dtype=tf.int32)
    assert w.name == "layer/w:0"
    with pytest.raises(ValueError, match="already exists, disallowed"):
        with tf.variable_scope("layer"):
            tf.get_variable("w", [3, 2])
    with tf.variable_scope("layer", reuse=True):
        assert tf.get_variable("w", [3, 2]) is w
        with pytest.raises(ValueError, match="does not exist"):
            tf.get_variable("missing", [1])
    with tf.variable_scope("layer", reuse=tf.AUTO_REUSE):
        assert tf.get_variable("w") is w
    with pytest.raises(ValueError, match="must be fully defined"):
        tf.get_variable("bad", [None, 2])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(w), np.zeros((3, 2)))
        np.testing.assert_array_equal(sess.run(k), [0, 0])


def test_constant_initializer():
    v = tf.get_variable("c", [2, 2], initializer=tf.constant_initializer(3.0))
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(v), np.full((2, 2), 3.0))
