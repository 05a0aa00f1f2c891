"""tf.linalg.lu, lu_solve, lu_reconstruct and lu_matrix_inverse against scipy and numpy in
float64, batched, with the singular-matrix error and gradients through lu_solve."""

import numpy as np
import pytest
from scipy import linalg

import flowstone as tf
from flowstone import errors


def _run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


RNG = np.random.default_rng(5)
A = RNG.uniform(-1, 1, (3, 5, 5)) + 2 * np.eye(5)
B = RNG.uniform(-1, 1, (3, 5, 2))


def test_lu_factors_and_permutation():
    with tf.Graph().as_default():
        lu, p = tf.linalg.lu(A)
        assert lu.shape.as_list() == [3, 5, 5] and p.shape.as_list() == [3, 5]
        assert p.dtype == tf.int32
        lu64 = tf.linalg.lu(A[0], output_idx_type=tf.int64)
        luv, pv, p64 = _run([lu, p, lu64.p])
    assert p64.dtype == np.int64
    for k in range(3):
        lower = np.tril(luv[k], -1) + np.eye(5)
        upper = np.triu(luv[k])
        np.testing.assert_allclose(A[k][pv[k]], lower @ upper, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(np.abs(lower).max(), 1.0)  # partial pivoting bounds L
        np.testing.assert_array_equal(np.sort(pv[k]), np.arange(5))
    np.testing.assert_allclose(luv[0], linalg.lu_factor(A[0])[0], rtol=1e-12)


def test_lu_solve_reconstruct_and_inverse():
    with tf.Graph().as_default():
        lu, p = tf.linalg.lu(A)
        x = tf.linalg.lu_solve(lu, p, B)
        a = tf.linalg.lu_reconstruct(lu, p)
        inv = tf.linalg.lu_matrix_inverse(lu, p)
        xv, av, invv = _run([x, a, inv])
    np.testing.assert_allclose(xv, np.linalg.solve(A, B), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(av, A, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(invv, np.linalg.inv(A), rtol=1e-10, atol=1e-12)


def test_gradient_through_lu_and_lu_solve_matches_matrix_solve():
    with tf.Graph().as_default():
        a = tf.constant(A)
        lu, p = tf.linalg.lu(a)
        loss = tf.reduce_sum(tf.linalg.lu_solve(lu, p, B) * np.arange(30.0).reshape(3, 5, 2))
        expected = tf.reduce_sum(tf.linalg.solve(a, B) * np.arange(30.0).reshape(3, 5, 2))
        g, ge = _run([tf.gradients(loss, a)[0], tf.gradients(expected, a)[0]])
    np.testing.assert_allclose(g, ge, rtol=1e-9, atol=1e-10)


def test_lu_errors():
    with tf.Graph().as_default():
        with pytest.raises(ValueError):
            tf.linalg.lu(np.ones((2, 3)))
        x = tf.placeholder(tf.float64)
        lu = tf.linalg.lu(x).lu
        with pytest.raises(errors.InvalidArgumentError, match="not invertible"):
            _run(lu, {x: np.ones((3, 3))})


def test_sqrtm_squares_back_and_edges():
    a = RNG.uniform(-1, 1, (2, 4, 4)) + 4 * np.eye(4)
    with tf.Graph().as_default():
        root = tf.linalg.sqrtm(a)
        assert root.shape.as_list() == [2, 4, 4]
        negative = tf.linalg.sqrtm(np.diag([-1.0, 2.0]))
        rv, nv, old = _run([root, negative, tf.matrix_square_root(np.diag([4.0, 9.0]))])
    np.testing.assert_allclose(rv @ rv, a, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(rv, np.stack([linalg.sqrtm(m).real for m in a]), rtol=1e-10)
    assert np.all(np.isnan(nv))  # no real principal square root
    np.testing.assert_allclose(old, np.diag([2.0, 3.0]))


def test_logm_inverts_expm_and_rejects_real_input():
    a = (RNG.uniform(-0.5, 0.5, (2, 3, 3)) + 1j * RNG.uniform(-0.5, 0.5, (2, 3, 3)) +
         2 * np.eye(3))
    with tf.Graph().as_default():
        lv = _run(tf.linalg.logm(a))
        with pytest.raises(TypeError):
            tf.linalg.logm(np.eye(2))
    np.testing.assert_allclose(lv, np.stack([linalg.logm(m) for m in a]), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.stack([linalg.expm(m) for m in lv]), a, rtol=1e-10,
                               atol=1e-12)


def test_extract_volume_patches_shapes_and_gradient():
    x = np.arange(2 * 4 * 4 * 4 * 1, dtype=np.float64).reshape(2, 4, 4, 4, 1)
    with tf.Graph().as_default():
        v = tf.constant(x)
        patches = tf.extract_volume_patches(v, [1, 2, 2, 2, 1], [1, 2, 2, 2, 1], "VALID")
        assert patches.shape.as_list() == [2, 2, 2, 2, 8]
        grad = tf.gradients(tf.reduce_sum(patches), v)[0]
        pv, gv = _run([patches, grad])
    np.testing.assert_array_equal(pv[0, 0, 0, 0], x[0, :2, :2, :2, 0].ravel())
    np.testing.assert_array_equal(gv, np.ones_like(x))  # non-overlapping windows tile the volume
