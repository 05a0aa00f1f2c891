"""The structured LinearOperators (Householder, Kronecker, BlockDiag, LowRankUpdate,
Permutation, Toeplitz, Tridiag, Circulant): dense matrices against numpy/scipy in float64, and
matmul, solve and determinants against the dense matrix's."""

import numpy as np
import pytest
from scipy import linalg

import flowstone as tf

RNG = np.random.default_rng(11)


def _run(fetches):
    with tf.Session() as sess:
        return sess.run(fetches)


def _check_against_dense(op, expected, solve=True):
    n = expected.shape[-1]
    x = RNG.uniform(-1, 1, expected.shape[:-2] + (n, 2))
    fetches = {"dense": op.to_dense(), "matmul": op.matmul(x), "adj": op.matmul(x, adjoint=True),
               "logdet": op.log_abs_determinant(), "trace": op.trace()}
    if solve:
        fetches["solve"] = op.solve(x)
        fetches["det"] = op.determinant()
    got = _run(fetches)
    np.testing.assert_allclose(got["dense"], expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got["matmul"], expected @ x, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got["adj"], np.swapaxes(expected, -1, -2) @ x, rtol=1e-10,
                               atol=1e-12)
    np.testing.assert_allclose(got["logdet"], np.linalg.slogdet(expected)[1], rtol=1e-9,
                               atol=1e-12)
    np.testing.assert_allclose(got["trace"], np.trace(expected, axis1=-2, axis2=-1), rtol=1e-10,
                               atol=1e-12)
    if solve:
        np.testing.assert_allclose(got["solve"], np.linalg.solve(expected, x), rtol=1e-9,
                                   atol=1e-10)
        np.testing.assert_allclose(got["det"], np.linalg.det(expected), rtol=1e-9)
    assert op.shape.as_list() == list(expected.shape)


def test_householder():
    v = np.array([1.0, -2.0, 0.5])
    expected = np.eye(3) - 2 * np.outer(v, v) / v.dot(v)
    with tf.Graph().as_default():
        op = tf.linalg.LinearOperatorHouseholder(v)
        assert op.is_self_adjoint and op.is_non_singular
        _check_against_dense(op, expected)
        with pytest.raises(ValueError, match="always self adjoint"):
            tf.linalg.LinearOperatorHouseholder(v, is_self_adjoint=False)


def test_kronecker_and_block_diag():
    a = RNG.uniform(-1, 1, (2, 2)) + 2 * np.eye(2)
    b = RNG.uniform(-1, 1, (3, 3)) + 2 * np.eye(3)
    with tf.Graph().as_default():
        full_a = tf.linalg.LinearOperatorFullMatrix(a)
        full_b = tf.linalg.LinearOperatorFullMatrix(b)
        _check_against_dense(tf.linalg.LinearOperatorKronecker([full_a, full_b]), np.kron(a, b))
        _check_against_dense(tf.linalg.LinearOperatorBlockDiag([full_a, full_b]),
                             linalg.block_diag(a, b))


def test_low_rank_update_permutation_toeplitz_tridiag():
    base = np.diag([2.0, 3.0, 4.0])
    u = RNG.uniform(-1, 1, (3, 2))
    d = np.array([0.5, 2.0])
    col = np.array([4.0, 1.0, 0.5])
    row = np.array([9.0, -1.0, 0.25])
    diagonals = np.array([[1.0, 2.0, 0.0], [4.0, 5.0, 6.0], [0.0, -1.0, 3.0]])
    with tf.Graph().as_default():
        update = tf.linalg.LinearOperatorLowRankUpdate(
            tf.linalg.LinearOperatorDiag(np.array([2.0, 3.0, 4.0])), tf.constant(u), diag_update=d)
        _check_against_dense(update, base + u @ np.diag(d) @ u.T)
        perm = tf.linalg.LinearOperatorPermutation([2, 0, 1], dtype=tf.float64)
        _check_against_dense(perm, np.eye(3)[[2, 0, 1]])
        _check_against_dense(tf.linalg.LinearOperatorToeplitz(col, row), linalg.toeplitz(col, row))
        _check_against_dense(tf.linalg.LinearOperatorTridiag(diagonals),
                             np.diag([4.0, 5.0, 6.0]) + np.diag([1.0, 2.0], 1) +
                             np.diag([-1.0, 3.0], -1))


def test_circulant():
    kernel = np.array([1.0, 2.0, 0.5, -1.0])
    spectrum = np.fft.fft(kernel)
    with tf.Graph().as_default():
        op = tf.linalg.LinearOperatorCirculant(spectrum.astype(np.complex128),
                                               input_output_dtype=tf.complex128)
        dense = _run(op.to_dense())
        real = _run(tf.linalg.LinearOperatorCirculant(
            spectrum.astype(np.complex128), input_output_dtype=tf.float64).to_dense())
    np.testing.assert_allclose(dense, linalg.circulant(kernel), atol=1e-12)
    np.testing.assert_allclose(real, linalg.circulant(kernel), atol=1e-12)


def test_eigh_tridiagonal_matches_scipy():
    alpha = np.array([2.0, -1.0, 3.0, 0.5, 1.5])
    beta = np.array([0.7, -0.2, 1.1, 0.4])
    values, vectors = linalg.eigh_tridiagonal(alpha, beta)
    with tf.Graph().as_default():
        got = _run({"all": tf.linalg.eigh_tridiagonal(alpha, beta),
                    "vec": tf.linalg.eigh_tridiagonal(alpha, beta, eigvals_only=False),
                    "idx": tf.linalg.eigh_tridiagonal(alpha, beta, select="i",
                                                      select_range=[1, 3]),
                    "val": tf.linalg.eigh_tridiagonal(alpha, beta, select="v",
                                                      select_range=[0.0, 2.5])})
    np.testing.assert_allclose(got["all"], values, rtol=1e-12)
    np.testing.assert_allclose(np.abs(got["vec"][1]), np.abs(vectors), atol=1e-10)
    np.testing.assert_allclose(got["idx"], values[1:4], rtol=1e-12)
    np.testing.assert_allclose(got["val"], values[(values > 0) & (values <= 2.5)], rtol=1e-12)
