"""tf.sparse_mask, tf.sparse_reset_shape and tf.sparse_to_indicator (sparse_composites.py)
against numpy, with the names and messages TensorFlow gives (checked with TensorFlow when
written), and tf.tables_initializer / tf.is_symbolic_tensor (lookup_initializers.py)."""

import numpy as np
import pytest

import flowstone as tf
from gradient_check import check_gradients

INDICES = [[0, 0, 1], [0, 1, 0], [1, 0, 3], [1, 1, 0]]


def _sp():
    return tf.SparseTensor(INDICES, [1, 2, 3, 4], [2, 3, 6])


def test_sparse_mask_drops_the_masked_rows():
    values = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32)
    slices = tf.IndexedSlices(tf.constant(values), tf.constant([12, 4, 7]), tf.constant([20, 2]))
    masked = tf.sparse_mask(slices, [12])
    assert masked.values.name == "sparse_mask:0"
    assert isinstance(masked, tf.IndexedSlices)
    with tf.Session() as sess:
        got = sess.run(masked)
    np.testing.assert_array_equal(got.values, values[1:])
    np.testing.assert_array_equal(got.indices, [4, 7])
    np.testing.assert_array_equal(got.dense_shape, [20, 2])


def test_sparse_reset_shape_to_a_larger_and_to_the_tight_shape():
    sp = _sp()
    larger = tf.sparse_reset_shape(sp, [5, 6, 7])
    tight = tf.sparse.reset_shape(sp)
    with tf.Session() as sess:
        larger_value, tight_value = sess.run([larger, tight])
    np.testing.assert_array_equal(larger_value.dense_shape, [5, 6, 7])
    np.testing.assert_array_equal(larger_value.indices, INDICES)
    np.testing.assert_array_equal(larger_value.values, [1, 2, 3, 4])
    np.testing.assert_array_equal(tight_value.dense_shape, np.max(INDICES, axis=0) + 1)


def test_sparse_reset_shape_refuses_a_smaller_shape_while_building():
    with pytest.raises(ValueError, match=r"new_shape should have dimension sizes >= sp_input"):
        tf.sparse_reset_shape(_sp(), [1, 6, 7])
    with pytest.raises(ValueError, match="new_shape has 2 dimensions but sp_input has rank 3"):
        tf.sparse_reset_shape(_sp(), [5, 6])


def test_sparse_reset_shape_checks_a_fed_shape_when_run():
    sp = tf.sparse_placeholder(tf.int32, shape=[None, None, None])
    reset = tf.sparse_reset_shape(sp, [1, 6, 7])
    fed = tf.SparseTensorValue([[0, 0, 1]], [1], [2, 3, 6])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="x <= y did not hold"):
            sess.run(reset, {sp: fed})
        # The session stays usable, and a fitting shape passes.
        ok = sess.run(reset, {sp: tf.SparseTensorValue([[0, 0, 1]], [1], [1, 3, 6])})
    np.testing.assert_array_equal(ok.dense_shape, [1, 6, 7])


def test_sparse_to_indicator_is_a_multi_hot_of_each_row():
    ids = tf.SparseTensor([[0, 0], [0, 1], [2, 0], [2, 1], [2, 2]], [0, 10, 13, 14, 32], [3, 4])
    indicator = tf.sparse_to_indicator(ids, 50)
    assert indicator.name == "SparseToIndicator:0"
    assert indicator.dtype == tf.bool
    with tf.Session() as sess:
        got = sess.run(indicator)
    expected = np.zeros((3, 50), bool)
    expected[[0, 0, 2, 2, 2], [0, 10, 13, 14, 32]] = True
    np.testing.assert_array_equal(got, expected)


def test_sparse_to_indicator_needs_integer_ids():
    floats = tf.SparseTensor([[0, 0]], [1.0], [1, 2])
    with pytest.raises(TypeError, match="integer ids"):
        tf.sparse_to_indicator(floats, 3)


def test_tables_initializer_is_a_no_op_without_tables_and_groups_them_otherwise():
    with tf.Graph().as_default():
        init = tf.tables_initializer()
        assert (init.name, init.type) == ("init_all_tables", "NoOp")
    with tf.Graph().as_default():
        counter = tf.Variable(0, name="counter")
        tf.add_to_collection(tf.GraphKeys.TABLE_INITIALIZERS, counter.assign_add(5).op)
        init = tf.initialize_all_tables()
        assert init.name == "init_all_tables"
        with tf.Session() as sess:
            sess.run(counter.initializer)
            sess.run(init)
            assert sess.run(counter) == 5


def test_is_symbolic_tensor():
    assert tf.is_symbolic_tensor(tf.constant(1.0))
    assert not tf.is_symbolic_tensor(np.ones(2))
    assert not tf.is_symbolic_tensor(1.0)
    tf.reset_default_graph()
    tf.enable_eager_execution()
    try:
        assert not tf.is_symbolic_tensor(tf.constant(1.0))
    finally:
        tf.disable_eager_execution()
        tf.reset_default_graph()


def _softmax_rows_reference(indices, values, shape):
    """numpy: a softmax over the listed entries of each row (all dimensions but the last)."""
    rows = [tuple(i[:-1]) for i in indices]
    out = np.empty_like(values)
    for row in set(rows):
        members = [k for k, r in enumerate(rows) if r == row]
        e = np.exp(values[members] - values[members].max())
        out[members] = e / e.sum()
    return out


SOFTMAX_INDICES = np.array([[0, 0, 1], [0, 0, 4], [0, 2, 0], [1, 1, 2], [1, 1, 3], [1, 1, 5]])
SOFTMAX_VALUES = np.array([1.0, 3.0, -2.0, 500.0, 499.0, 0.5])


def test_sparse_softmax_against_numpy_with_large_values():
    sp = tf.SparseTensor(SOFTMAX_INDICES, SOFTMAX_VALUES, [2, 3, 6])
    out = tf.sparse_softmax(sp)
    with tf.Session() as sess:
        got = sess.run(out)
    np.testing.assert_array_equal(got.indices, SOFTMAX_INDICES)
    np.testing.assert_allclose(got.values,
                               _softmax_rows_reference(SOFTMAX_INDICES, SOFTMAX_VALUES, [2, 3, 6]),
                               rtol=1e-12)


def test_sparse_softmax_gradient_against_finite_differences():
    values = np.array([0.3, -1.2, 2.0, 0.7, 0.1, -0.4])
    check_gradients(
        lambda v: tf.sparse.softmax(tf.SparseTensor(SOFTMAX_INDICES, v, [2, 3, 6])).values,
        [values], wrt=[0])


def test_sparse_softmax_needs_rank_two():
    with pytest.raises(ValueError, match="rank 2 or more, got rank 1"):
        tf.sparse_softmax(tf.SparseTensor([[0], [2]], [1.0, 2.0], [3]))


def _sparse_pair():
    a = tf.SparseTensor([[0, 1], [1, 0], [1, 2]], [1.0, -2.0, 3.0], [2, 3])
    b = tf.SparseTensor([[0, 1], [0, 2], [1, 2]], [-1.0, 5.0, 4.0], [2, 3])
    return a, b


def test_sparse_maximum_and_minimum_at_the_union_of_indices():
    a, b = _sparse_pair()
    dense_a, dense_b = np.zeros((2, 3)), np.zeros((2, 3))
    dense_a[[0, 1, 1], [1, 0, 2]] = [1.0, -2.0, 3.0]
    dense_b[[0, 0, 1], [1, 2, 2]] = [-1.0, 5.0, 4.0]
    union = [[0, 1], [0, 2], [1, 0], [1, 2]]
    rows, cols = np.array(union).T
    with tf.Session() as sess:
        most, least = sess.run([tf.sparse_maximum(a, b), tf.sparse.minimum(a, b)])
    for got, combine in ((most, np.maximum), (least, np.minimum)):
        np.testing.assert_array_equal(got.indices, union)
        np.testing.assert_array_equal(got.values, combine(dense_a, dense_b)[rows, cols])
        np.testing.assert_array_equal(got.dense_shape, [2, 3])


def test_sparse_maximum_of_different_shapes_fails_when_run():
    a, _ = _sparse_pair()
    c = tf.SparseTensor([[0, 1]], [1.0], [2, 4])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="operands' shapes do not match"):
            sess.run(tf.sparse_maximum(a, c))


def test_sparse_add_of_two_sparse_tensors_with_and_without_a_threshold():
    a, _ = _sparse_pair()
    b = tf.SparseTensor([[0, 1], [0, 2], [1, 2]], [-1.0, 5.0, -2.9], [2, 3])
    with tf.Session() as sess:
        everything, above = sess.run([tf.sparse_add(a, b), tf.sparse.add(a, b, threshold=0.5)])
    # The exact zero at [0, 1] stays: only magnitudes below the threshold go.
    np.testing.assert_array_equal(everything.indices, [[0, 1], [0, 2], [1, 0], [1, 2]])
    np.testing.assert_allclose(everything.values, [0.0, 5.0, -2.0, 0.1], rtol=1e-6)
    np.testing.assert_array_equal(above.indices, [[0, 2], [1, 0]])
    np.testing.assert_array_equal(above.values, [5.0, -2.0])


def test_sparse_add_with_a_dense_tensor_is_dense():
    a, _ = _sparse_pair()
    with tf.Session() as sess:
        got = sess.run(tf.sparse_add(tf.ones([2, 3]), a))
    np.testing.assert_array_equal(got, [[1.0, 2.0, 1.0], [-1.0, 1.0, 4.0]])


def test_sparse_add_gradient_against_finite_differences():
    check_gradients(
        # The union has 3 entries; the threshold's mask leaves their count unknown while building.
        lambda va, vb: tf.reshape(
            tf.sparse_add(tf.SparseTensor([[0, 1], [1, 2]], va, [2, 3]),
                          tf.SparseTensor([[0, 1], [0, 2]], vb, [2, 3])).values, [3]),
        [np.array([0.5, -1.5]), np.array([2.0, 0.25])], wrt=[0, 1])


def test_sparse_add_argument_errors():
    a, b = _sparse_pair()
    with pytest.raises(TypeError, match="At least one input should be SparseTensor"):
        tf.sparse_add(tf.ones([2]), tf.ones([2]))
    with pytest.raises(ValueError, match="Cannot specify both 'threshold' and 'thresh'"):
        tf.sparse_add(a, b, threshold=0.1, thresh=0.1)


def test_sparse_fill_empty_rows_matches_tensorflow_and_routes_gradients():
    # Expected values from TensorFlow 2.21 (tf.compat.v1.sparse_fill_empty_rows).
    with tf.Graph().as_default():
        values = tf.constant([1.0, 2.0, 3.0, 4.0])
        sp = tf.SparseTensor([[0, 1], [2, 0], [2, 3], [4, 2]], values, [6, 5])
        filled, empty = tf.sparse_fill_empty_rows(sp, -1.0)
        grad = tf.gradients(tf.reduce_sum(filled.values * tf.range(1.0, 8.0)), [values])[0]
        with tf.Session() as sess:
            got, got_empty, got_grad = sess.run([filled, empty, grad])
    assert got.indices.tolist() == [[0, 1], [1, 0], [2, 0], [2, 3], [3, 0], [4, 2], [5, 0]]
    assert got.values.tolist() == [1.0, -1.0, 2.0, 3.0, -1.0, 4.0, -1.0]
    assert got.dense_shape.tolist() == [6, 5]
    assert got_empty.tolist() == [False, True, False, True, False, True]
    assert got_grad.tolist() == [1.0, 3.0, 4.0, 6.0]  # each value's position after filling


def test_sparse_merge_puts_weights_at_their_ids():
    # Expected values from TensorFlow 2.21 (tf.compat.v1.sparse_merge).
    with tf.Graph().as_default():
        ids = tf.SparseTensor([[0, 0], [0, 1], [1, 0], [3, 0]],
                              tf.constant([3, 1, 0, 2], tf.int64), [4, 2])
        weights = tf.SparseTensor([[0, 0], [0, 1], [1, 0], [3, 0]], [0.5, 1.5, 2.0, 3.0], [4, 2])
        merged = tf.sparse_merge(ids, weights, 5)
        with tf.Session() as sess:
            got = sess.run(merged)
        with pytest.raises(NotImplementedError, match="several id tensors"):
            tf.sparse_merge([ids, ids], weights, [5, 5])
    assert got.indices.tolist() == [[0, 1], [0, 3], [1, 0], [3, 2]]
    assert got.values.tolist() == [1.5, 0.5, 2.0, 3.0]
    assert got.dense_shape.tolist() == [4, 5]
