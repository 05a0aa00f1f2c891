"""tf.SparseTensor as a value: its three component tensors, static shape, and fetching it as a
tf.SparseTensorValue (alone or inside a structure)."""

import numpy as np
import pytest

import flowstone as tf


def test_fetch_gives_a_sparse_tensor_value():
    sp = tf.SparseTensor([[0, 1], [2, 0]], [1.5, -2.0], [3, 4])
    assert sp.dtype == tf.float32 and sp.indices.dtype == tf.int64
    assert sp.shape.as_list() == [3, 4]
    with tf.Session() as sess:
        value = sess.run(sp)
        both = sess.run({"sparse": sp, "dense": tf.constant(1)})
        with sess.as_default():
            evaluated = sp.eval()
    assert isinstance(value, tf.SparseTensorValue)
    np.testing.assert_array_equal(value.indices, [[0, 1], [2, 0]])
    np.testing.assert_array_equal(value.values, [1.5, -2.0])
    np.testing.assert_array_equal(value.dense_shape, [3, 4])
    np.testing.assert_array_equal(both["sparse"].values, value.values)
    assert both["dense"] == 1
    np.testing.assert_array_equal(evaluated.indices, value.indices)
    assert tf.SparseTensor.from_value(value).shape.as_list() == [3, 4]
    assert tf.sparse.SparseTensor is tf.SparseTensor


def test_shape_from_a_tensor_and_bad_components():
    shape = tf.placeholder(tf.int64, [2])
    assert tf.SparseTensor(tf.zeros([0, 2], tf.int64), tf.zeros([0]), shape).shape.as_list() == [
        None, None]
    with pytest.raises(ValueError, match=r"indices must be a matrix \[N, rank\]"):
        tf.SparseTensor([0, 1], [1.0, 2.0], [3])
    with pytest.raises(ValueError, match="values must be a vector"):
        tf.SparseTensor([[0]], [[1.0]], [3])
