"""tf.sparse.slice, split, reduce_sum_sparse, reduce_max_sparse, bincount, eye and expand_dims:
results against dense numpy equivalents and against TensorFlow, the values' gradient through
slice, and errors."""

import numpy as np
import pytest

import flowstone as tf
from flowstone import errors
from peers import requires_tensorflow, run_tensorflow

INDICES = [[0, 0], [0, 3], [1, 1], [2, 2], [3, 4]]
VALUES = [1.0, 2.0, 3.0, 4.0, 5.0]
SHAPE = [4, 5]


def _sp():
    return tf.SparseTensor(INDICES, tf.constant(VALUES, tf.float64), SHAPE)


def _dense():
    d = np.zeros(SHAPE)
    for (i, j), v in zip(INDICES, VALUES):
        d[i, j] = v
    return d


def _run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


def _to_dense(value):
    d = np.zeros(value.dense_shape, value.values.dtype)
    for idx, v in zip(value.indices, value.values):
        d[tuple(idx)] = v
    return d


def test_slice_matches_dense_slicing_and_passes_gradients():
    with tf.Graph().as_default():
        values = tf.constant(VALUES, tf.float64)
        sp = tf.SparseTensor(INDICES, values, SHAPE)
        piece = tf.sparse.slice(sp, [1, 1], [3, 10])
        grad = tf.gradients(tf.reduce_sum(piece.values * 2.0), values)[0]
        got, g = _run([piece, grad])
    np.testing.assert_array_equal(_to_dense(got), _dense()[1:4, 1:])
    np.testing.assert_array_equal(g, [0, 0, 2, 2, 2])


def test_split_pieces_and_keyword_arguments():
    with tf.Graph().as_default():
        pieces = tf.sparse.split(sp_input=_sp(), num_split=3, axis=1)
        old = tf.sparse_split(sp_input=_sp(), num_split=2, split_dim=0)
        got, got_old = _run([pieces, old])
        with pytest.raises(ValueError, match="Keyword arguments are required"):
            tf.sparse.split(_sp(), 2, 1)
        with pytest.raises(errors.InvalidArgumentError, match="must not exceed"):
            _run(tf.sparse.split(sp_input=_sp(), num_split=6, axis=1))
    # Width 5 in 3 pieces: 2, 2, 1 columns.
    dense = _dense()
    for piece, cols in zip(got, [slice(0, 2), slice(2, 4), slice(4, 5)]):
        np.testing.assert_array_equal(_to_dense(piece), dense[:, cols])
    np.testing.assert_array_equal(_to_dense(got_old[1]), dense[2:])


def test_reduce_sparse_against_dense_reductions():
    with tf.Graph().as_default():
        s = tf.sparse.reduce_sum_sparse(_sp(), axis=0)
        m = tf.sparse_reduce_max_sparse(_sp(), reduction_axes=[1], keep_dims=True)
        total = tf.sparse.reduce_sum_sparse(_sp())
        sv, mv, tv = _run([s, m, total])
    np.testing.assert_array_equal(_to_dense(sv), _dense().sum(axis=0))
    np.testing.assert_array_equal(_to_dense(mv), _dense().max(axis=1, keepdims=True))
    assert tv.values.tolist() == [15.0] and tv.dense_shape.tolist() == []


def test_bincount_dense_sparse_and_weights():
    with tf.Graph().as_default():
        flat = tf.sparse.bincount([[1, 2, 2], [0, 5, 1]])
        rows = tf.sparse.bincount([[1, 2, 2], [0, 5, 1]], axis=-1, minlength=8)
        weighted = tf.sparse.bincount([3, 1, 3], weights=[0.5, 1.0, 2.0], binary_output=False)
        binary = tf.sparse.bincount(tf.SparseTensor([[0, 1], [1, 0], [1, 2]], [4, 4, 4], [2, 3]),
                                    axis=-1, binary_output=True)
        f, r, w, b = _run([flat, rows, weighted, binary])
    np.testing.assert_array_equal(_to_dense(f), [1, 2, 2, 0, 0, 1])
    np.testing.assert_array_equal(_to_dense(r), [[0, 1, 2, 0, 0, 0, 0, 0],
                                                 [1, 1, 0, 0, 0, 1, 0, 0]])
    np.testing.assert_allclose(_to_dense(w), [0, 1.0, 0, 2.5])
    np.testing.assert_array_equal(_to_dense(b), [[0, 0, 0, 0, 1], [0, 0, 0, 0, 1]])
    with pytest.raises(ValueError, match="Only 0 and -1"):
        tf.sparse.bincount([1], axis=1)
    with tf.Graph().as_default():
        with pytest.raises(errors.InvalidArgumentError, match="must all be non-negative"):
            _run(tf.sparse.bincount([1, -2]))


def test_eye_and_expand_dims():
    with tf.Graph().as_default():
        eye = tf.sparse.eye(3, 4, dtype=tf.int32)
        front = tf.sparse.expand_dims(_sp(), 0)
        back = tf.sparse.expand_dims(_sp(), -1)
        e, f, b = _run([eye, front, back])
    np.testing.assert_array_equal(_to_dense(e), np.eye(3, 4, dtype=np.int32))
    np.testing.assert_array_equal(_to_dense(f), _dense()[None])
    np.testing.assert_array_equal(_to_dense(b), _dense()[..., None])


@requires_tensorflow
def test_results_match_tensorflow():
    out = run_tensorflow(f"""
        import tensorflow as tf
        sp = tf.SparseTensor({INDICES}, tf.constant({VALUES}, tf.float64), {SHAPE})
        def show(s):
            print(s.indices.numpy().tolist(), s.values.numpy().tolist(),
                  s.dense_shape.numpy().tolist())
        show(tf.sparse.slice(sp, [1, 1], [3, 10]))
        for piece in tf.sparse.split(sp_input=sp, num_split=3, axis=1):
            show(piece)
        show(tf.sparse.reduce_sum(sp, axis=0, output_is_sparse=True))
        show(tf.sparse.reduce_max(sp, axis=1, keepdims=True, output_is_sparse=True))
        show(tf.sparse.bincount([[1, 2, 2], [0, 5, 1]], axis=-1, minlength=8))
        show(tf.sparse.eye(3, 4))
        show(tf.sparse.expand_dims(sp, -1))
    """).strip().split("\n")
    with tf.Graph().as_default():
        results = [tf.sparse.slice(_sp(), [1, 1], [3, 10])]
        results += tf.sparse.split(sp_input=_sp(), num_split=3, axis=1)
        results += [tf.sparse.reduce_sum_sparse(_sp(), axis=0),
                    tf.sparse.reduce_max_sparse(_sp(), axis=1, keepdims=True),
                    tf.sparse.bincount([[1, 2, 2], [0, 5, 1]], axis=-1, minlength=8),
                    tf.sparse.eye(3, 4), tf.sparse.expand_dims(_sp(), -1)]
        got = _run(results)
    for value, line in zip(got, out):
        assert (f"{value.indices.tolist()} {value.values.tolist()} "
                f"{value.dense_shape.tolist()}") == line
