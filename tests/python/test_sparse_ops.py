"""TF1's SparseTensor functions (sparse_ops.py) against numpy on the dense equivalents,
gradients against finite differences, and feeding a sparse placeholder. (Values were also
compared with TensorFlow's when written.)"""

import numpy as np
import pytest

import flowstone as tf
from gradient_check import check_gradients

INDICES = np.array([[0, 0], [1, 2], [2, 1]], np.int64)
VALUES = np.array([-1.0, 3.0, 5.0])
SHAPE = np.array([3, 4], np.int64)
DENSE = np.zeros((3, 4))
DENSE[tuple(INDICES.T)] = VALUES
B = np.arange(12.0).reshape(4, 3)


def _sp(values=VALUES, indices=INDICES, shape=SHAPE):
    return tf.SparseTensor(indices, values, shape)


def _dense(sp):
    return tf.sparse.to_dense(sp)


def test_densify_and_matmul():
    sp = _sp()
    with tf.Session() as sess:
        got = sess.run([
            tf.sparse_tensor_to_dense(sp, default_value=-7.0), tf.sparse_to_dense([1, 3], [5],
                                                                                 [2.0, 4.0]),
            tf.sparse_to_dense(2, [4], 9), tf.sparse_tensor_dense_matmul(sp, B),
            tf.sparse_tensor_dense_matmul(sp, np.arange(6.0).reshape(3, 2), adjoint_a=True),
            tf.sparse.sparse_dense_matmul(sp, B.T, adjoint_b=True)])
    with_default = np.where(DENSE != 0, DENSE, -7.0)
    want = [with_default, [0, 2, 0, 4, 0], [0, 0, 9, 0], DENSE @ B,
            DENSE.T @ np.arange(6.0).reshape(3, 2), DENSE @ B]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w)


def test_reductions():
    sp = _sp()
    with tf.Session() as sess:
        got = sess.run([tf.sparse_reduce_sum(sp, 1), tf.sparse_reduce_sum(sp),
                        tf.sparse_reduce_sum(sp, 0, keepdims=True), tf.sparse_reduce_max(sp, 0),
                        tf.sparse_reduce_max(sp, 1)])
    # reduce_max counts only the stored entries; a group without any gives 0.
    want = [DENSE.sum(1), DENSE.sum(), DENSE.sum(0, keepdims=True), [-1.0, 5.0, 3.0, 0.0],
            [-1.0, 3.0, 5.0]]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w)


def test_reorder_transpose_reshape_retain_concat():
    unsorted = _sp(VALUES[[1, 0, 2]], INDICES[[1, 0, 2]])
    sp = _sp()
    with tf.Session() as sess:
        reordered, transposed, reshaped, retained, wide, tall = sess.run([
            tf.sparse_reorder(unsorted), tf.sparse_transpose(sp), tf.sparse_reshape(sp, [2, -1]),
            tf.sparse_retain(sp, [True, False, True]), tf.sparse_concat(1, [sp, sp]),
            tf.sparse_concat(0, [sp, sp])])
    np.testing.assert_array_equal(reordered.indices, INDICES)
    np.testing.assert_array_equal(reordered.values, VALUES)
    np.testing.assert_array_equal(transposed.indices, [[0, 0], [1, 2], [2, 1]])
    np.testing.assert_array_equal(transposed.dense_shape, [4, 3])
    assert transposed.values.tolist() == [-1.0, 5.0, 3.0]

    def densify(value):
        out = np.zeros(value.dense_shape)
        out[tuple(value.indices.T)] = value.values
        return out
    np.testing.assert_array_equal(densify(reshaped), DENSE.reshape(2, 6))
    np.testing.assert_array_equal(densify(retained), np.where(DENSE == 3.0, 0, DENSE))
    np.testing.assert_array_equal(densify(wide), np.concatenate([DENSE, DENSE], 1))
    np.testing.assert_array_equal(densify(tall), np.concatenate([DENSE, DENSE], 0))
    with pytest.raises(ValueError, match="axis 2 is out of range"):
        tf.sparse_concat(2, [sp, sp])


def test_gradients_reach_the_values_and_the_dense_operand():
    check_gradients(lambda v, b: tf.sparse_tensor_dense_matmul(_sp(v), b), [VALUES, B],
                    wrt=[0, 1])
    check_gradients(lambda v: tf.sparse_reduce_sum(_sp(v), 1), [VALUES], wrt=[0])


def test_sparse_placeholder_feeds():
    ph = tf.sparse_placeholder(tf.float64, shape=[3, 4])
    total = tf.sparse_reduce_sum(ph)
    with tf.Session() as sess:
        assert sess.run(total, {ph: tf.SparseTensorValue(INDICES, VALUES, SHAPE)}) == 7.0
        assert sess.run(total, {ph: (INDICES[:1], VALUES[:1], SHAPE)}) == -1.0
        with pytest.raises(TypeError, match="must be a value of its 3 components"):
            sess.run(total, {ph: VALUES})
    with pytest.raises(TypeError, match="Input must be a SparseTensor"):
        tf.sparse_reorder(DENSE)
    assert tf.sparse_matmul(tf.constant(B), tf.constant(B.T), a_is_sparse=True).shape.as_list() \
        == [4, 4]
