"""tf.map_fn, tf.scan, tf.foldl, tf.foldr (and TensorArrays as tf.while_loop variables): values
against numpy, nested structures, TF's argument checks, and gradients against float64 finite
differences."""

import numpy as np
import pytest

import flowstone as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def _numeric_grad(sess, loss, x, x0, eps=1e-6):
    numeric = np.zeros_like(x0)
    for idx in np.ndindex(x0.shape):
        up, down = x0.copy(), x0.copy()
        up[idx] += eps
        down[idx] -= eps
        numeric[idx] = (sess.run(loss, {x: up}) - sess.run(loss, {x: down})) / (2 * eps)
    return numeric


def _check_gradient(build, x0):
    x = tf.placeholder(tf.float64, x0.shape)
    out = build(x)
    weights = np.random.default_rng(5).uniform(0.5, 1.5, size=out.shape.as_list())
    loss = tf.reduce_sum(out * weights)
    grad = tf.gradients(loss, x)[0]
    with tf.Session() as sess:
        symbolic = sess.run(grad, {x: x0})
        numeric = _numeric_grad(sess, loss, x, x0)
    np.testing.assert_allclose(symbolic, numeric, rtol=1e-5, atol=1e-7)


def test_tensor_array_as_a_while_loop_variable():
    ta = tf.TensorArray(tf.float32, size=5)

    def body(i, ta):
        value = tf.cast(i, tf.float32)
        return i + 1, ta.write(i, value * value)

    _, final = tf.while_loop(lambda i, ta: i < 5, body, [tf.constant(0), ta])
    assert isinstance(final, tf.TensorArray)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(final.stack()), np.arange(5) ** 2)


def test_map_fn_values_names_and_static_shape():
    elems = np.arange(6, dtype=np.float32).reshape(3, 2)
    squares = tf.map_fn(lambda v: v * v, tf.constant(elems))
    assert squares.shape.as_list() == [3, 2]
    assert squares.op.name.startswith("map/")
    sums = tf.map_fn(lambda v: tf.reduce_sum(v), tf.constant(elems))
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(squares), elems * elems)
        np.testing.assert_array_equal(sess.run(sums), elems.sum(1))


def test_map_fn_nested_elems_and_dtype():
    a = np.array([1, 2, 3], np.int32)
    b = np.array([0.5, 1.5, 2.5], np.float32)
    out = tf.map_fn(lambda ab: (tf.cast(ab[0], tf.float32) * ab[1], ab[0] + 1),
                    (tf.constant(a), tf.constant(b)), dtype=(tf.float32, tf.int32))
    with tf.Session() as sess:
        product, plus_one = sess.run(out)
    np.testing.assert_array_equal(product, a * b)
    np.testing.assert_array_equal(plus_one, a + 1)


def test_map_fn_over_a_fed_length():
    x = tf.placeholder(tf.float32, [None])
    doubled = tf.map_fn(lambda v: 2.0 * v, x)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(doubled, {x: [1, 2, 3, 4]}), [2, 4, 6, 8])
        assert sess.run(doubled, {x: np.zeros(0, np.float32)}).shape == (0,)


def test_scan_foldl_foldr_values():
    elems = np.array([1.0, 2.0, 3.0, 4.0])
    x = tf.constant(elems)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(tf.scan(lambda a, v: a + v, x)),
                                      np.cumsum(elems))
        np.testing.assert_array_equal(
            sess.run(tf.scan(lambda a, v: a * v, x, initializer=tf.constant(2.0, tf.float64))),
            2 * np.cumprod(elems))
        np.testing.assert_array_equal(sess.run(tf.scan(lambda a, v: a + v, x, reverse=True)),
                                      np.cumsum(elems[::-1])[::-1])
        assert sess.run(tf.foldl(lambda a, v: a - v, x)) == ((1 - 2) - 3) - 4
        assert sess.run(tf.foldr(lambda a, v: a - v, x)) == ((4 - 3) - 2) - 1
        assert sess.run(tf.foldl(lambda a, v: a + v, x,
                                 initializer=tf.constant(10.0, tf.float64))) == 20


def test_scan_with_nested_state():
    elems = tf.constant([1, 2, 3, 4])
    # The state is a pair: (a, b) -> (b, a + b + x).
    out = tf.scan(lambda state, v: (state[1], state[0] + state[1] + v), elems,
                  initializer=(tf.constant(0), tf.constant(1)))
    with tf.Session() as sess:
        first, second = sess.run(out)
    np.testing.assert_array_equal(first, [1, 2, 5, 10])
    np.testing.assert_array_equal(second, [2, 5, 10, 19])


def test_argument_errors():
    with pytest.raises(TypeError, match="fn must be callable"):
        tf.map_fn(3, tf.constant([1.0]))
    with pytest.raises(ValueError, match="1\\+ dimensional"):
        tf.map_fn(lambda v: v, tf.constant(1.0))
    with pytest.raises(TypeError, match="fn must be callable"):
        tf.scan(None, tf.constant([1.0]))


def test_map_fn_gradient():
    x0 = np.random.default_rng(1).uniform(-1, 1, size=(4, 3))
    _check_gradient(lambda x: tf.map_fn(lambda v: tf.tanh(v) * tf.reduce_sum(v * v), x), x0)


def test_scan_gradient():
    x0 = np.random.default_rng(2).uniform(0.5, 1.5, size=(5, 2))
    _check_gradient(lambda x: tf.scan(lambda a, v: a * v + tf.tanh(a), x), x0)


def test_fold_gradients():
    x0 = np.random.default_rng(3).uniform(0.5, 1.5, size=(4, 2))
    _check_gradient(lambda x: tf.foldl(lambda a, v: a * v + 1.0, x), x0)
    tf.reset_default_graph()
    _check_gradient(lambda x: tf.foldr(lambda a, v: tf.tanh(a) + v, x), x0)


def test_back_prop_false_stops_gradients():
    x = tf.constant([1.0, 2.0, 3.0])
    y = tf.map_fn(lambda v: v * v, x, back_prop=False)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y), [1.0, 4.0, 9.0])
    assert tf.gradients(tf.reduce_sum(y), x) == [None]
