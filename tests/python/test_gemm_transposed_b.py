"""float32 MatMul tiling cases of Gemm: a transposed B that spans several row tiles of C (Gemm
transposes it once, in blocks of 64 x 64, before the tiles run), a product of a few rows cut
into column tiles (an RNN step), and a few rows by a transposed B (computed as C^T = B op(A)^T). Exact on integer values at edges that are not multiples of the
block or tile sizes; close to float64 on the softmax projection's gradient shape."""

import numpy as np
import pytest

import flowstone as tf


def _run(fetch):
    with tf.Session() as sess:
        return sess.run(fetch)


@pytest.mark.parametrize("m,k,n", [(129, 65, 63), (300, 1000, 130), (257, 64, 1)])
def test_transposed_b_is_exact_on_integers(m, k, n):
    rng = np.random.default_rng(m + k + n)
    a = rng.integers(-4, 5, size=(m, k)).astype(np.float32)
    b = rng.integers(-4, 5, size=(n, k)).astype(np.float32)
    np.testing.assert_array_equal(_run(tf.matmul(a, b, transpose_b=True)), a @ b.T)
    np.testing.assert_array_equal(
        _run(tf.matmul(a.T.copy(), b, transpose_a=True, transpose_b=True)), a @ b.T)


def test_softmax_projection_gradient_shape_matches_float64():
    # d logits [700, 10000] times the projection's kernel [256, 10000], transposed.
    rng = np.random.default_rng(0)
    g = rng.standard_normal((700, 10000)).astype(np.float32)
    w = rng.standard_normal((256, 10000)).astype(np.float32)
    got = _run(tf.matmul(g, w, transpose_b=True))
    expected = g.astype(np.float64) @ w.astype(np.float64).T
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("m,k,n", [(20, 1024, 256), (3, 4000, 300), (20, 2000, 255)])
def test_few_rows_split_into_column_tiles_are_exact(m, k, n):
    rng = np.random.default_rng(m * n)
    a = rng.integers(-4, 5, size=(m, k)).astype(np.float32)
    b = rng.integers(-4, 5, size=(k, n)).astype(np.float32)
    np.testing.assert_array_equal(_run(tf.matmul(a, b)), a @ b)
    np.testing.assert_array_equal(_run(tf.matmul(a, b.T.copy(), transpose_b=True)), a @ b)
    np.testing.assert_array_equal(
        _run(tf.matmul(a.T.copy(), b.T.copy(), transpose_a=True, transpose_b=True)), a @ b)


def test_few_rows_by_transposed_b_match_float64():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((20, 1024)).astype(np.float32)
    b = rng.standard_normal((512, 1024)).astype(np.float32)
    got = _run(tf.matmul(a, b, transpose_b=True))
    np.testing.assert_allclose(got, a.astype(np.float64) @ b.astype(np.float64).T, rtol=1e-4,
                               atol=1e-4)
