"""Gradients of reductions, matrix products and softmax through tf.gradients: axes known while
building and only at run time, shapes and ranks known only at run time, ties, zeros, empty
inputs, batch broadcasting and float32. (Every op's gradient is also checked against finite
differences in float64 by test_op_conformance.py.) Upstream gradients are passed as grad_ys, so
these tests need no other op's gradient."""

import numpy as np
import pytest

import flowstone as tf
from flowstone.ops.nn_ops import log_softmax, softmax

RNG = np.random.default_rng(11)

REDUCTIONS = {"sum": tf.reduce_sum, "mean": tf.reduce_mean, "max": tf.reduce_max,
              "min": tf.reduce_min, "prod": tf.reduce_prod}


def _grad(f, x_value, feed_shape=None, upstream=None, **kwargs):
    """d(sum(f(x) * upstream)) / dx, with x fed through a placeholder of `feed_shape`."""
    x = tf.placeholder(tf.as_dtype(x_value.dtype), feed_shape)
    y = f(x, **kwargs)
    with tf.Session() as sess:
        y_value = sess.run(y, {x: x_value})
    if upstream is None:
        upstream = RNG.uniform(0.5, 1.5, np.shape(y_value)).astype(x_value.dtype)
    (g,) = tf.gradients(y, [x], grad_ys=[tf.constant(upstream)])
    with tf.Session() as sess:
        return sess.run(g, {x: x_value}), upstream


def _expected(kind, x, axis, keepdims, upstream):
    """The gradient numpy gives for each reduction (ties split evenly, zeros in products)."""
    if axis is None:
        axes = tuple(range(x.ndim))
    else:
        axes = tuple(sorted({int(a) % x.ndim for a in np.atleast_1d(axis)}))
    up = upstream if keepdims else np.expand_dims(upstream, axes)
    if kind == "sum":
        return np.broadcast_to(up, x.shape)
    if kind == "mean":
        count = np.prod([x.shape[a] for a in axes])
        return np.broadcast_to(up / count, x.shape)
    if kind in ("max", "min"):
        y = x.max(axis=axes, keepdims=True) if kind == "max" else x.min(axis=axes, keepdims=True)
        hit = (x == y).astype(x.dtype)
        return hit / hit.sum(axis=axes, keepdims=True) * up
    out = np.empty_like(x)
    for idx in np.ndindex(x.shape):  # product of the other elements, by brute force
        others = x.copy()
        others[idx] = 1.0
        group = tuple(slice(None) if a in axes else idx[a] for a in range(x.ndim))
        out[idx] = others[group].prod() * up[tuple(0 if a in axes else idx[a]
                                                   for a in range(x.ndim))]
    return out


@pytest.mark.parametrize("kind", list(REDUCTIONS))
@pytest.mark.parametrize("axis,keepdims", [
    (None, False), (1, False), (-1, True), ((0, 2), False), ((2, 0), True), ([], False),
])
@pytest.mark.parametrize("feed_shape", ["known", "unknown_dims", "unknown_rank"])
def test_reduction_gradients_with_constant_axes(kind, axis, keepdims, feed_shape):
    x = RNG.uniform(0.5, 1.5, (2, 3, 4))
    shape = {"known": x.shape, "unknown_dims": [None, 3, None], "unknown_rank": None}[feed_shape]
    got, up = _grad(REDUCTIONS[kind], x, shape, axis=axis, keepdims=keepdims)
    expected = _expected(kind, x, () if axis == [] else axis, keepdims, up)
    np.testing.assert_allclose(got, expected, rtol=1e-12)


@pytest.mark.parametrize("kind", list(REDUCTIONS))
@pytest.mark.parametrize("axes", [np.array([0, -1], np.int64), np.array(1, np.int32),
                                  np.zeros([0], np.int32), np.array([2, -1, 0], np.int32)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduction_gradients_with_axes_fed_at_run_time(kind, axes, keepdims):
    xv = RNG.uniform(0.5, 1.5, (2, 3, 4))
    x = tf.placeholder(tf.float64, [None, None, None])
    a = tf.placeholder(tf.as_dtype(axes.dtype), None)
    y = REDUCTIONS[kind](x, axis=a, keepdims=keepdims)
    feed = {x: xv, a: axes}
    with tf.Session() as sess:
        up = RNG.uniform(0.5, 1.5, sess.run(y, feed).shape)
    (g,) = tf.gradients(y, [x], grad_ys=[tf.constant(up)])
    with tf.Session() as sess:
        got = sess.run(g, feed)
    np.testing.assert_allclose(got, _expected(kind, xv, axes, keepdims, up), rtol=1e-12)


def test_max_and_min_split_the_gradient_evenly_between_ties():
    x = np.array([[2.0, 5.0, 5.0, 5.0], [-1.0, -1.0, 0.0, 3.0]])
    got, _ = _grad(tf.reduce_max, x, upstream=np.array([3.0, 2.0]), axis=1)
    np.testing.assert_allclose(got, [[0, 1, 1, 1], [0, 0, 0, 2]], rtol=1e-15)
    got, _ = _grad(tf.reduce_min, x, upstream=np.array([3.0, 2.0]), axis=1)
    np.testing.assert_allclose(got, [[3, 0, 0, 0], [1, 1, 0, 0]], rtol=1e-15)
    got, _ = _grad(tf.reduce_max, np.full((2, 2), 7.0), upstream=np.array(1.0))
    np.testing.assert_allclose(got, np.full((2, 2), 0.25))


def test_prod_gradient_with_zeros():
    x = np.array([[2.0, 0.0, 3.0], [0.0, 4.0, 0.0], [0.5, 4.0, 3.0], [0.0, 0.0, 0.0]])
    got, _ = _grad(tf.reduce_prod, x, upstream=np.ones(4), axis=1)
    np.testing.assert_allclose(got, [[0, 6, 0], [0, 0, 0], [12, 1.5, 2], [0, 0, 0]])


@pytest.mark.parametrize("kind", list(REDUCTIONS))
def test_reduction_gradients_of_empty_inputs(kind):
    x = np.zeros((0, 3))
    for shape in [x.shape, [None, None]]:
        got, _ = _grad(REDUCTIONS[kind], x, shape, axis=0)
        assert got.shape == (0, 3)
        got, _ = _grad(REDUCTIONS[kind], x, shape, axis=1)
        assert got.shape == (0, 3)


def test_reduction_gradients_keep_float32():
    x = RNG.uniform(0.5, 1.5, (4, 5)).astype(np.float32)
    for kind, f in REDUCTIONS.items():
        got, up = _grad(f, x, axis=1)
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, _expected(kind, x.astype(np.float64), 1, False, up),
                                   rtol=1e-5)


def test_mean_of_a_scalar_and_of_everything_at_run_time():
    got, _ = _grad(tf.reduce_mean, np.array(3.0), None, upstream=np.array(2.0))
    assert got == 2.0
    got, _ = _grad(tf.reduce_mean, np.ones((4, 5)), None, upstream=np.array(2.0))
    np.testing.assert_allclose(got, np.full((4, 5), 0.1))


@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("transpose_b", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matmul_gradients(transpose_a, transpose_b, dtype):
    av = RNG.uniform(-1, 1, (4, 3) if transpose_a else (3, 4)).astype(dtype)
    bv = RNG.uniform(-1, 1, (5, 4) if transpose_b else (4, 5)).astype(dtype)
    up = RNG.uniform(-1, 1, (3, 5)).astype(dtype)
    a = tf.placeholder(tf.as_dtype(dtype), [None, None])
    b = tf.placeholder(tf.as_dtype(dtype), [None, None])
    y = tf.matmul(a, b, transpose_a=transpose_a, transpose_b=transpose_b)
    ga, gb = tf.gradients(y, [a, b], grad_ys=[tf.constant(up)])
    with tf.Session() as sess:
        got_a, got_b = sess.run([ga, gb], {a: av, b: bv})
    op_a = av.T if transpose_a else av
    op_b = bv.T if transpose_b else bv
    d_op_a, d_op_b = up @ op_b.T, op_a.T @ up
    tol = {"rtol": 1e-5, "atol": 1e-6} if dtype == np.float32 else {"rtol": 1e-12}
    np.testing.assert_allclose(got_a, d_op_a.T if transpose_a else d_op_a, **tol)
    np.testing.assert_allclose(got_b, d_op_b.T if transpose_b else d_op_b, **tol)
    assert got_a.dtype == dtype and got_b.dtype == dtype


def _batch_matmul_grads(x_shape, y_shape, adj_x, adj_y, static):
    xv = RNG.uniform(-1, 1, x_shape)
    yv = RNG.uniform(-1, 1, y_shape)
    x = tf.placeholder(tf.float64, x_shape if static else [None] * len(x_shape))
    y = tf.placeholder(tf.float64, y_shape if static else None)
    z = tf.matmul(x, y, adjoint_a=adj_x, adjoint_b=adj_y)
    with tf.Session() as sess:
        up = RNG.uniform(-1, 1, sess.run(z, {x: xv, y: yv}).shape)
    gx, gy = tf.gradients(z, [x, y], grad_ys=[tf.constant(up)])
    with tf.Session() as sess:
        got_x, got_y = sess.run([gx, gy], {x: xv, y: yv})
    # Reference: broadcast both operands to the full batch, differentiate, sum back.
    t = lambda m: np.swapaxes(m, -1, -2)  # noqa: E731
    op_x = t(xv) if adj_x else xv
    op_y = t(yv) if adj_y else yv
    d_op_x, d_op_y = up @ t(op_y), t(op_x) @ up

    def back(d, value, adj):
        d = t(d) if adj else d
        lead = d.ndim - value.ndim
        d = d.sum(axis=tuple(range(lead)))
        axes = tuple(i for i in range(value.ndim - 2) if value.shape[i] == 1)
        return d.sum(axis=axes, keepdims=True)

    np.testing.assert_allclose(got_x, back(d_op_x, xv, adj_x), rtol=1e-12)
    np.testing.assert_allclose(got_y, back(d_op_y, yv, adj_y), rtol=1e-12)


@pytest.mark.parametrize("x_shape,y_shape", [
    ((2, 3, 4), (2, 4, 5)),
    ((2, 1, 3, 4), (3, 4, 5)),
    ((3, 4), (2, 2, 4, 5)),
    ((1, 3, 4), (2, 4, 5)),
])
@pytest.mark.parametrize("adj", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("static", [True, False])
def test_batch_matmul_gradients_sum_over_broadcast_batches(x_shape, y_shape, adj, static):
    adj_x, adj_y = adj
    if adj_x:
        x_shape = x_shape[:-2] + x_shape[:-3:-1]
    if adj_y:
        y_shape = y_shape[:-2] + y_shape[:-3:-1]
    _batch_matmul_grads(x_shape, y_shape, adj_x, adj_y, static)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_and_log_softmax_gradients(dtype):
    xv = RNG.uniform(-3, 3, (2, 3, 5)).astype(dtype)
    up = RNG.uniform(-1, 1, (2, 3, 5)).astype(dtype)
    x = tf.placeholder(tf.as_dtype(dtype), None)
    (g_soft,) = tf.gradients(softmax(x), [x], grad_ys=[tf.constant(up)])
    (g_log,) = tf.gradients(log_softmax(x), [x], grad_ys=[tf.constant(up)])
    with tf.Session() as sess:
        got_soft, got_log = sess.run([g_soft, g_log], {x: xv})
    x64, up64 = xv.astype(np.float64), up.astype(np.float64)
    s = np.exp(x64 - x64.max(-1, keepdims=True))
    s /= s.sum(-1, keepdims=True)
    tol = {"rtol": 1e-5, "atol": 1e-6} if dtype == np.float32 else {"rtol": 1e-12}
    np.testing.assert_allclose(got_soft, (up64 - (up64 * s).sum(-1, keepdims=True)) * s, **tol)
    np.testing.assert_allclose(got_log, up64 - s * up64.sum(-1, keepdims=True), **tol)
