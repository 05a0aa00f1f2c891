"""tf.keras.backend: the session, the learning phase, configuration and math helpers."""

import numpy as np
import pytest

import flowstone as tf

K = tf.keras.backend


def test_configuration_defaults_and_setters():
    assert (K.floatx(), K.epsilon(), K.image_data_format()) == ("float32", 1e-7,
                                                                "channels_last")
    K.set_epsilon(1e-5)
    try:
        assert K.epsilon() == 1e-5
    finally:
        K.set_epsilon(1e-7)
    with pytest.raises(ValueError, match="Unknown `floatx` value: float8"):
        K.set_floatx("float8")


def test_session_initializes_keras_variables_and_clear_session_resets():
    v = K.variable(np.arange(3.0), name="v")
    session = K.get_session()
    np.testing.assert_array_equal(session.run(v), [0.0, 1.0, 2.0])
    K.set_value(v, [5.0, 6.0, 7.0])
    np.testing.assert_array_equal(K.get_value(v), [5.0, 6.0, 7.0])
    graph = tf.get_default_graph()
    K.clear_session()
    assert tf.get_default_graph() is not graph
    assert K.get_session() is not session
    with tf.Session() as mine:
        assert K.get_session() is mine  # a default session wins, as in TF1 Keras
    other = tf.Session()
    K.set_session(other)
    assert K.get_session() is other


def test_learning_phase_switches_dropout():
    x = tf.keras.Input((100,))
    y = tf.keras.layers.Dropout(0.5)(x)
    run = K.function([x], [y])
    ones = np.ones((4, 100), np.float32)
    np.testing.assert_array_equal(run([ones])[0], ones)
    feed = {x: ones, K.learning_phase(): True}
    dropped = K.get_session().run(y, feed)
    assert set(np.unique(dropped)) <= {0.0, 2.0} and (dropped == 0).any()
    K.clear_session()
    K.set_learning_phase(1)
    x = tf.keras.Input((100,))
    try:
        y = tf.keras.layers.Dropout(0.5)(x)
        dropped = K.get_session().run(y, {x: ones})  # a fixed phase 1: always training
        assert (dropped == 0).any()
    finally:
        K.clear_session()


def test_math_helpers_match_numpy():
    a = np.array([[1.0, -2.0], [3.0, 4.0]], np.float32)
    t = tf.constant(a)
    np.testing.assert_allclose(K.eval(K.sum(t, axis=1, keepdims=True)), a.sum(1, keepdims=True))
    np.testing.assert_allclose(K.eval(K.mean(t)), a.mean())
    np.testing.assert_allclose(K.eval(K.max(t, axis=0)), a.max(0))
    np.testing.assert_allclose(K.eval(K.dot(t, t)), a @ a)
    np.testing.assert_allclose(K.eval(K.clip(t, 0.0, 2.0)), np.clip(a, 0, 2))
    np.testing.assert_allclose(K.eval(K.concatenate([t, t], axis=0)), np.concatenate([a, a]))
    np.testing.assert_allclose(K.eval(K.square(t)), a ** 2)
    assert K.int_shape(t) == (2, 2) and K.ndim(t) == 2 and K.dtype(t) == "float32"
    assert K.eval(K.all(K.greater(t, -3.0))) and not K.eval(K.any(K.greater(t, 5.0)))
