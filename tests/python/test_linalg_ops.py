"""tf.linalg: the LAPACK-backed ops beyond what the registry-driven conformance test checks
(singular and eigen vectors up to sign, gradients that need symmetric or sign-invariant losses,
errors), and the Python API's names and composites."""

import numpy as np
import pytest

import flowstone as tf

RNG = np.random.default_rng(3)


def _run(fetches, feed=None, graph=None):
    with tf.Session(graph=graph or tf.get_default_graph()) as sess:
        return sess.run(fetches, feed)


def _check_gradient(build, x0, rtol=1e-5, atol=1e-6):
    """d loss / d x from tf.gradients against central differences in float64; `build` maps the
    placeholder x to a scalar loss."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float64, x0.shape)
        loss = build(x)
        (grad,) = tf.gradients(loss, [x])
    x0 = np.array(x0, np.float64)
    with tf.Session(graph=graph) as sess:
        symbolic = sess.run(grad, {x: x0})
        numeric = np.zeros_like(x0)
        eps = 1e-6
        for idx in np.ndindex(x0.shape):
            orig = x0[idx]
            x0[idx] = orig + eps
            up = sess.run(loss, {x: x0})
            x0[idx] = orig - eps
            down = sess.run(loss, {x: x0})
            x0[idx] = orig
            numeric[idx] = (up - down) / (2 * eps)
    np.testing.assert_allclose(symbolic, numeric, rtol=rtol, atol=atol)


def _weights(shape):
    return tf.constant(RNG.uniform(0.5, 1.5, size=shape))


def _spd(n):
    x = RNG.uniform(-1, 1, size=(n, n))
    return x @ x.T + n * np.eye(n)


# --- values --------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape,full", [((4, 3), False), ((3, 5), False), ((2, 3, 3), False),
                                        ((4, 3), True), ((3, 5), True)])
def test_svd_factors_reconstruct_the_input_and_match_numpy_up_to_sign(shape, full):
    a = RNG.uniform(-1, 1, size=shape)
    with tf.Graph().as_default():
        s, u, v = _run(tf.linalg.svd(tf.constant(a), full_matrices=full))
    k = min(shape[-2:])
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), rtol=1e-10)
    rebuilt = (u[..., :, :k] * s[..., None, :]) @ np.swapaxes(v[..., :, :k], -1, -2)
    np.testing.assert_allclose(rebuilt, a, atol=1e-12)
    identity = np.broadcast_to(np.eye(u.shape[-1]), u.shape[:-2] + (u.shape[-1],) * 2)
    np.testing.assert_allclose(np.swapaxes(u, -1, -2) @ u, identity, atol=1e-12)
    _, _, vh = np.linalg.svd(a, full_matrices=full)
    np.testing.assert_allclose(np.abs(v[..., :, :k]), np.abs(np.swapaxes(vh, -1, -2)[..., :, :k]),
                               atol=1e-10)


def test_svd_without_vectors_returns_only_the_values():
    a = RNG.uniform(-1, 1, size=(3, 4)).astype(np.float32)
    with tf.Graph().as_default():
        s = tf.svd(tf.constant(a), compute_uv=False)
        assert s.shape.as_list() == [3]
        np.testing.assert_allclose(_run(s), np.linalg.svd(a, compute_uv=False), rtol=1e-5)


def test_eigh_gives_ascending_values_and_orthonormal_eigenvectors():
    a = RNG.uniform(-1, 1, size=(2, 4, 4))
    a = a + np.swapaxes(a, -1, -2)
    with tf.Graph().as_default():
        e, v = _run(tf.linalg.eigh(tf.constant(a)))
        values = _run(tf.self_adjoint_eigvals(tf.constant(a)))
    np.testing.assert_allclose(e, np.linalg.eigvalsh(a), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(values, e, rtol=1e-12)
    np.testing.assert_allclose(a @ v, v * e[..., None, :], atol=1e-12)
    np.testing.assert_allclose(np.swapaxes(v, -1, -2) @ v, np.broadcast_to(np.eye(4), a.shape),
                               atol=1e-12)


def test_solvers_and_determinants_batched_in_float32():
    a = (RNG.uniform(-1, 1, size=(3, 4, 4)) + 4 * np.eye(4)).astype(np.float32)
    b = RNG.uniform(-1, 1, size=(3, 4, 2)).astype(np.float32)
    spd = np.stack([_spd(4) for _ in range(3)]).astype(np.float32)
    with tf.Graph().as_default():
        a_t, b_t, spd_t = tf.constant(a), tf.constant(b), tf.constant(spd)
        got = _run([tf.matrix_inverse(a_t), tf.matrix_determinant(a_t), tf.matrix_solve(a_t, b_t),
                    tf.cholesky_solve(tf.cholesky(spd_t), b_t), tf.linalg.logdet(spd_t),
                    tf.linalg.slogdet(a_t)])
    inv, det, x, chol_x, logdet, (sign, logabs) = got
    np.testing.assert_allclose(inv, np.linalg.inv(a), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(det, np.linalg.det(a), rtol=1e-4)
    np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(chol_x, np.linalg.solve(spd, b), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(logdet, np.linalg.slogdet(spd)[1], rtol=1e-5)
    np.testing.assert_allclose(sign, np.linalg.slogdet(a)[0])
    np.testing.assert_allclose(logabs, np.linalg.slogdet(a)[1], rtol=1e-5)
    assert inv.dtype == np.float32 and det.shape == (3,)


def test_band_diag_eye_trace_and_adjoint():
    x = RNG.uniform(-1, 1, size=(2, 3, 4))
    with tf.Graph().as_default():
        xt = tf.constant(x)
        band, eye, eye_wide, trace, adjoint, diag, tdiag, tdiag_part = _run([
            tf.matrix_band_part(xt, 0, 1), tf.eye(3, batch_shape=[2], dtype=tf.float64),
            tf.eye(2, 3), tf.trace(xt), tf.linalg.adjoint(xt), tf.linalg.diag(xt[:, 0]),
            tf.diag(tf.constant([1, 2])), tf.diag_part(tf.constant(np.arange(16.).reshape(4, 4)))])
    np.testing.assert_array_equal(band, np.triu(x) - np.triu(x, 2))
    np.testing.assert_array_equal(eye, np.broadcast_to(np.eye(3), (2, 3, 3)))
    np.testing.assert_array_equal(eye_wide, np.eye(2, 3, dtype=np.float32))
    np.testing.assert_allclose(trace, np.trace(x, axis1=-2, axis2=-1))
    np.testing.assert_array_equal(adjoint, np.swapaxes(x, -1, -2))
    np.testing.assert_array_equal(diag, np.stack([np.diag(r) for r in x[:, 0]]))
    np.testing.assert_array_equal(tdiag, [[1, 0], [0, 2]])
    np.testing.assert_array_equal(tdiag_part, [0., 5., 10., 15.])


def test_lapack_comes_from_the_pinned_package_at_run_time():
    # The installed core library resolves LAPACK from scipy-openblas32's shared library.
    with tf.Graph().as_default():
        _run(tf.linalg.inv(tf.constant(np.eye(2))))
    with open("/proc/self/maps") as maps:
        loaded = maps.read()
    assert "scipy_openblas32/lib/libscipy_openblas.so" in loaded


# --- gradients that need a symmetric or sign-invariant loss ---------------------------------------

def test_cholesky_gradient_through_a_symmetric_input():
    def build(x):
        a = tf.matmul(x, x, transpose_b=True) + 3 * tf.eye(3, dtype=tf.float64)
        return tf.reduce_sum(_weights([3, 3]) * tf.cholesky(a))

    _check_gradient(build, RNG.uniform(-1, 1, size=(3, 3)))


def test_logdet_and_slogdet_gradients():
    def logdet(x):
        return tf.linalg.logdet(tf.matmul(x, x, transpose_b=True) + 3 * tf.eye(3, dtype=tf.float64))

    def slogdet(x):
        return tf.reduce_sum(_weights([2]) * tf.linalg.slogdet(x)[1])

    _check_gradient(logdet, RNG.uniform(-1, 1, size=(3, 3)))
    _check_gradient(slogdet, RNG.uniform(-1, 1, size=(2, 3, 3)))


@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (3, 4), (2, 3, 2)])
def test_svd_gradient_through_values_and_vectors(shape):
    def build(x):
        s, u, v = tf.linalg.svd(x)
        # Squares make the loss independent of the vectors' signs.
        return (tf.reduce_sum(_weights(s.shape.as_list()) * s)
                + tf.reduce_sum(_weights(u.shape.as_list()) * u * u)
                + tf.reduce_sum(_weights(v.shape.as_list()) * v * v))

    _check_gradient(build, RNG.uniform(-1, 1, size=shape), rtol=1e-4)


def test_eigh_gradient_through_vectors():
    def build(x):
        e, v = tf.linalg.eigh(x + tf.linalg.adjoint(x))
        return tf.reduce_sum(_weights([3]) * e) + tf.reduce_sum(_weights([3, 3]) * v * v)

    _check_gradient(build, RNG.uniform(-1, 1, size=(3, 3)), rtol=1e-4)


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (2, 3), (2, 2, 4)])
def test_qr_gradient_through_q_and_r(shape):
    def build(x):
        q, r = tf.linalg.qr(x)
        return (tf.reduce_sum(_weights(q.shape.as_list()) * q)
                + tf.reduce_sum(_weights(r.shape.as_list()) * r))

    _check_gradient(build, RNG.uniform(-1, 1, size=shape))


def test_qr_gradient_limits_are_clear_errors():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [4, 3])
        q, r = tf.linalg.qr(x, full_matrices=True)
        with pytest.raises(NotImplementedError, match="nrows > ncols and full_matrices"):
            tf.gradients(tf.reduce_sum(r), [x])
        unknown = tf.placeholder(tf.float64, [None, None])
        with pytest.raises(NotImplementedError, match="dynamic shapes"):
            tf.gradients(tf.reduce_sum(tf.linalg.qr(unknown)[1]), [unknown])


# --- errors --------------------------------------------------------------------------------------

def test_singular_and_non_positive_definite_inputs_fail_with_tensorflows_messages():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [2, 2])
        inv = tf.linalg.inv(x)
        solve = tf.linalg.solve(x, tf.ones([2, 1], tf.float64))
        chol = tf.cholesky(x)
        det = tf.linalg.det(x)
        singular = np.array([[1.0, 2.0], [2.0, 4.0]])
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match="Input is not invertible."):
                sess.run(inv, {x: singular})
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match="Input matrix is not invertible."):
                sess.run(solve, {x: singular})
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match="Cholesky decomposition was not successful. The input might "
                                     "not be valid."):
                sess.run(chol, {x: np.array([[1.0, 2.0], [2.0, 1.0]])})
            # The session stays usable.
            assert sess.run(det, {x: singular}) == 0.0
            np.testing.assert_allclose(sess.run(inv, {x: 2 * np.eye(2)}), 0.5 * np.eye(2))


def test_shape_errors():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Dimensions must be equal, but are 2 and 3"):
            tf.linalg.inv(tf.zeros([2, 3]))
        with pytest.raises(ValueError, match="at least rank 2"):
            tf.cholesky(tf.zeros([3]))
        with pytest.raises(ValueError, match="Dimensions must be equal"):
            tf.linalg.solve(tf.zeros([3, 3]), tf.zeros([2, 1]))
        x = tf.placeholder(tf.float64, None)
        band = tf.matrix_band_part(x, 5, -1)
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match=r"num_lower must be negative or less or equal to number of "
                                     r"rows \(3\) got: 5"):
                sess.run(band, {x: np.ones((3, 3))})
            with pytest.raises(tf.errors.InvalidArgumentError, match="rank >= 2"):
                sess.run(band, {x: np.ones(3)})


def test_unsupported_diagonal_offsets_say_so():
    with tf.Graph().as_default():
        with pytest.raises(NotImplementedError, match="main diagonal"):
            tf.linalg.diag([1.0, 2.0], k=1)


# --- composites ----------------------------------------------------------------------------------

@pytest.mark.parametrize("shape,l2", [((5, 3), 0.0), ((3, 5), 0.0), ((2, 4, 3), 0.5)])
def test_lstsq_matches_numpy(shape, l2):
    a = RNG.uniform(-1, 1, size=shape)
    b = RNG.uniform(-1, 1, size=shape[:-1] + (2,))
    with tf.Graph().as_default():
        got = _run(tf.linalg.lstsq(tf.constant(a), tf.constant(b), l2_regularizer=l2))
    if l2 == 0:
        expected = np.stack([np.linalg.lstsq(m, r, rcond=None)[0]
                             for m, r in zip(a.reshape((-1,) + shape[-2:]),
                                             b.reshape((-1,) + b.shape[-2:]))]).reshape(got.shape)
    else:
        at = np.swapaxes(a, -1, -2)
        expected = np.linalg.solve(at @ a + l2 * np.eye(shape[-1]), at @ b)
    np.testing.assert_allclose(got, expected, rtol=1e-8, atol=1e-10)


def test_lstsq_gradient():
    b = RNG.uniform(-1, 1, size=(4, 1))
    _check_gradient(lambda x: tf.reduce_sum(_weights([3, 1]) * tf.matrix_solve_ls(x, b)),
                    RNG.uniform(-1, 1, size=(4, 3)))


def test_pinv_rank_normalize_matvec():
    a = RNG.uniform(-1, 1, size=(4, 3))
    low_rank = a[:, :1] @ a[:1, :]  # rank 1
    v = RNG.uniform(-1, 1, size=3)
    with tf.Graph().as_default():
        pinv, rank, full_rank, (normalized, norm), product, mm = _run([
            tf.linalg.pinv(tf.constant(a)), tf.linalg.matrix_rank(tf.constant(low_rank)),
            tf.linalg.matrix_rank(tf.constant(a)), tf.linalg.normalize(tf.constant(v)),
            tf.linalg.matvec(tf.constant(a), tf.constant(v)),
            tf.linalg.matmul(tf.constant(a), tf.constant(a), transpose_a=True)])
    np.testing.assert_allclose(pinv, np.linalg.pinv(a), rtol=1e-10, atol=1e-12)
    assert rank == 1 and full_rank == 3
    np.testing.assert_allclose(normalized, v / np.linalg.norm(v))
    np.testing.assert_allclose(norm, [np.linalg.norm(v)])
    np.testing.assert_allclose(product, a @ v)
    np.testing.assert_allclose(mm, a.T @ a)
