"""Static shapes from shape arguments that are only partly known while the graph is built, as
TensorFlow's constant_value_as_shape gives them: `tf.reshape(p, [tf.shape(p)[0], 2, 2])` has
shape [?, 2, 2] although its first entry is only known at run time."""

import numpy as np
import pytest

import flowstone as tf


def _run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


def test_reshape_with_a_packed_run_time_dim():
    p = tf.placeholder(tf.float32, [None, 4])
    y = tf.reshape(p, [tf.shape(p)[0], 2, 2])
    assert y.shape.as_list() == [None, 2, 2]
    pv = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(_run(y, {p: pv}), pv.reshape(3, 2, 2))


def test_zeros_and_fill_with_run_time_dims():
    n = tf.placeholder(tf.int32, [])
    assert tf.zeros([n, 2]).shape.as_list() == [None, 2]
    p = tf.placeholder(tf.float32, [None, 3, None])
    assert tf.ones([tf.shape(p)[1], tf.shape(p)[-1], 5]).shape.as_list() == [3, None, 5]
    assert tf.fill(tf.shape(p), 1.0).shape.as_list() == [None, 3, None]
    assert tf.random_uniform(tf.stack([n, 3])).shape.as_list() == [None, 3]
    assert _run(tf.zeros([n, 2]), {n: 3}).shape == (3, 2)


def test_concat_of_shape_slices_and_constants():
    x = tf.placeholder(tf.float32, [None, 5, 6])
    shape = tf.shape(x)
    y = tf.reshape(x, tf.concat([shape[:-1], [3, 2]], 0))
    assert y.shape.as_list() == [None, 5, 3, 2]
    assert tf.reshape(x, tf.concat([shape[::-1], [1]], 0)).shape.as_list() == [6, 5, None, 1]
    assert tf.zeros(tf.concat([shape[1:2], shape[5:]], 0)).shape.as_list() == [5]
    assert _run(y, {x: np.zeros((2, 5, 6))}).shape == (2, 5, 3, 2)


def test_slice_and_cast_of_a_shape():
    x = tf.placeholder(tf.float32, [None, 7, 2])
    shape64 = tf.cast(tf.shape(x), tf.int64)
    assert tf.zeros(tf.slice(shape64, [1], [-1])).shape.as_list() == [7, 2]
    assert tf.zeros(tf.stack([shape64[1], 3])).shape.as_list() == [7, 3]


def test_minus_one_and_unknown_entries_stay_unknown():
    p = tf.placeholder(tf.float32, [None, 4])
    n = tf.placeholder(tf.int32, [])
    assert tf.reshape(p, tf.stack([n, -1])).shape.as_list() == [None, None]
    # A fully known input resolves the single unknown entry.
    q = tf.placeholder(tf.float32, [6, 4])
    assert tf.reshape(q, tf.stack([n, 8])).shape.as_list() == [3, 8]
    dims = tf.placeholder(tf.int32, [3])
    assert tf.reshape(p, dims).shape.as_list() == [None, None, None]
    assert tf.reshape(p, tf.concat([dims, [2]], 0)).shape.as_list() == [None, None, None, 2]


def test_invalid_entry_is_a_graph_build_error():
    n = tf.placeholder(tf.int32, [])
    with pytest.raises(ValueError, match="Dimension -2 must be >= -1"):
        tf.zeros([n, -2])


def test_dense_layer_on_a_rank_3_input_keeps_its_static_shape():
    pytest.importorskip("flowstone.ops.conv_ops", reason="tf.layers adds biases with conv_ops")
    x = tf.placeholder(tf.float32, [None, 5, 4])
    y = tf.layers.dense(x, 3)
    assert y.shape.as_list() == [None, 5, 3]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(y, {x: np.ones((2, 5, 4), np.float32)}).shape == (2, 5, 3)


def test_gradient_of_a_slice_has_the_input_static_shape():
    x = tf.placeholder(tf.float64, [None, 4])
    (g,) = tf.gradients(tf.reduce_sum(x[1:, ::2]), [x])
    assert g.shape.as_list() == [None, 4]
