"""tf.math's functions, reductions, clipping and norms, einsum and tensordot through the Python
API: values against numpy, gradients against float64 finite differences, TensorFlow's names and
argument errors."""

import numpy as np
import pytest
from scipy import special

import flowstone as tf

RNG = np.random.default_rng(11)


def _run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


def _check_gradient(build, *x0s, rtol=1e-5, atol=1e-6):
    """The gradients of the scalar loss build(*xs) against central differences in float64."""
    graph = tf.Graph()
    with graph.as_default():
        xs = [tf.placeholder(tf.float64, np.shape(x0)) for x0 in x0s]
        loss = build(*xs)
        grads = tf.gradients(loss, xs)
    values = [np.array(x0, np.float64) for x0 in x0s]
    feed = dict(zip(xs, values))
    with tf.Session(graph=graph) as sess:
        symbolic = sess.run(grads, feed)
        for x0, got in zip(values, symbolic):
            numeric = np.zeros_like(x0)
            for idx in np.ndindex(x0.shape):
                orig = x0[idx]
                x0[idx] = orig + 1e-6
                up = sess.run(loss, feed)
                x0[idx] = orig - 1e-6
                down = sess.run(loss, feed)
                x0[idx] = orig
                numeric[idx] = (up - down) / 2e-6
            np.testing.assert_allclose(got, numeric, rtol=rtol, atol=atol)


@pytest.fixture(autouse=True)
def _fresh_graph():
    with tf.Graph().as_default():
        yield


# --- elementwise functions -----------------------------------------------------------------------

@pytest.mark.parametrize("fn,ref,low,high", [
    (tf.sin, np.sin, -3, 3), (tf.math.cos, np.cos, -3, 3), (tf.tan, np.tan, -1, 1),
    (tf.asin, np.arcsin, -0.9, 0.9), (tf.math.acos, np.arccos, -0.9, 0.9),
    (tf.atan, np.arctan, -3, 3), (tf.sinh, np.sinh, -2, 2), (tf.cosh, np.cosh, -2, 2),
    (tf.asinh, np.arcsinh, -2, 2), (tf.acosh, np.arccosh, 1.1, 3), (tf.atanh, np.arctanh, -.9, .9),
    (tf.erf, special.erf, -2, 2), (tf.erfc, special.erfc, -2, 2),
    (tf.lgamma, special.gammaln, 0.1, 5), (tf.digamma, special.digamma, 0.1, 5),
    (tf.reciprocal, np.reciprocal, 0.5, 2), (tf.expm1, np.expm1, -1, 1),
    (tf.nn.softplus, lambda x: np.logaddexp(0, x), -5, 5),
    (tf.math.softsign, lambda x: x / (1 + np.abs(x)), -5, 5),
    (tf.log_sigmoid, lambda x: -np.logaddexp(0, -x), -5, 5),
])
def test_unary_functions_match_numpy(fn, ref, low, high):
    x = RNG.uniform(low, high, size=(3, 4)).astype(np.float32)
    got = _run(fn(tf.constant(x)))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, ref(x.astype(np.float64)), rtol=2e-5, atol=1e-6)


def test_names_follow_tensorflow():
    x = tf.placeholder(tf.float32, [3])
    assert tf.sin(x).name == "Sin:0"
    assert tf.math.log_sigmoid(x).name == "LogSigmoid:0"
    assert tf.clip_by_value(x, 0.0, 1.0).name == "clip_by_value:0"
    assert tf.clip_by_norm(x, 1.0).name == "clip_by_norm:0"
    assert tf.reduce_logsumexp(x).name == "ReduceLogSumExp:0"
    assert tf.einsum("i,i->", x, x).name.startswith("einsum/")
    assert tf.norm(x).name.startswith("norm/")
    assert tf.global_norm([x]).name == "global_norm/global_norm:0"
    assert tf.math.reduce_euclidean_norm(x).name == "EuclideanNorm:0"


def test_log_sigmoid_does_not_overflow():
    got = _run(tf.math.log_sigmoid(tf.constant([-1000.0, 0.0, 1000.0])))
    np.testing.assert_allclose(got, [-1000.0, -np.log(2.0), 0.0], rtol=1e-6)


def test_floating_point_tests_and_rint():
    x = tf.constant([np.nan, np.inf, -np.inf, 1.5, 2.5])
    nan, inf, finite, rint = _run([tf.is_nan(x), tf.math.is_inf(x), tf.is_finite(x), tf.rint(x)])
    np.testing.assert_array_equal(nan, [True, False, False, False, False])
    np.testing.assert_array_equal(inf, [False, True, True, False, False])
    np.testing.assert_array_equal(finite, [False, False, False, True, True])
    np.testing.assert_array_equal(rint[3:], [2.0, 2.0])


def test_truncating_division_and_bitwise_ops():
    a = tf.constant([7, -7, 7, -7])
    b = tf.constant([2, 2, -2, -2])
    div, mod, band, shifted = _run([tf.truncatediv(a, b), tf.truncatemod(a, b),
                                    tf.bitwise.bitwise_and(a, b), tf.bitwise.left_shift(b, 3)])
    np.testing.assert_array_equal(div, [3, -3, -3, 3])
    np.testing.assert_array_equal(mod, [1, -1, 1, -1])
    np.testing.assert_array_equal(band, np.bitwise_and([7, -7, 7, -7], [2, 2, -2, -2]))
    np.testing.assert_array_equal(shifted, [16, 16, -16, -16])
    with pytest.raises(tf.errors.InvalidArgumentError, match="Integer division by zero"):
        _run(tf.truncatediv(a, tf.constant([1, 0, 1, 1])))


def test_xlogy_family_and_atan2():
    x = tf.constant([0.0, 2.0])
    y = tf.constant([0.0, 3.0])
    xlogy, xdivy, xlog1py, angle = _run([tf.math.xlogy(x, y), tf.math.xdivy(x, y),
                                         tf.math.xlog1py(x, y), tf.atan2(y, x)])
    np.testing.assert_allclose(xlogy, [0.0, 2 * np.log(3.0)], rtol=1e-6)
    np.testing.assert_allclose(xdivy, [0.0, 2 / 3], rtol=1e-6)
    np.testing.assert_allclose(xlog1py, [0.0, 2 * np.log(4.0)], rtol=1e-6)
    np.testing.assert_allclose(angle, np.arctan2([0.0, 3.0], [0.0, 2.0]), rtol=1e-6)


def test_polyval_uses_horners_rule():
    x = RNG.uniform(-2, 2, size=5)
    got = _run(tf.math.polyval([1.0, -2.0, tf.constant(0.5, tf.float64), 3.0], tf.constant(x)))
    np.testing.assert_allclose(got, np.polyval([1.0, -2.0, 0.5, 3.0], x))
    assert _run(tf.math.polyval([], tf.constant([1.0, 2.0]))).tolist() == [0.0, 0.0]


# --- reductions ----------------------------------------------------------------------------------

def test_reduce_logsumexp_is_stable_and_differentiable():
    x = np.array([[1000.0, 1000.0, 1.0], [-np.inf, -np.inf, -np.inf], [0.5, -1.0, 2.0]])
    got = _run([tf.reduce_logsumexp(tf.constant(x), axis=1),
                tf.reduce_logsumexp(tf.constant(x[2:]), keepdims=True)])
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(got[0], special.logsumexp(x, axis=1))
    np.testing.assert_allclose(got[1], special.logsumexp(x[2:], keepdims=True))
    _check_gradient(lambda t: tf.reduce_sum(tf.reduce_logsumexp(t, axis=0) * [1.0, 2.0, 3.0]),
                    RNG.uniform(-2, 2, size=(4, 3)))


def test_any_all_and_count_nonzero():
    b = RNG.uniform(size=(3, 4)) > 0.5
    x = np.array([[0, 1, 2], [0, 0, 3]], np.int32)
    anys, alls, all_of_all, count, count_axis, count_bools = _run([
        tf.reduce_any(b, axis=0), tf.math.reduce_all(b, axis=1, keepdims=True), tf.reduce_all(b),
        tf.count_nonzero(x), tf.math.count_nonzero(x, axis=1, dtype=tf.int32),
        tf.count_nonzero(b, axis=0)])
    np.testing.assert_array_equal(count_bools, b.sum(axis=0))
    np.testing.assert_array_equal(anys, b.any(axis=0))
    np.testing.assert_array_equal(alls, b.all(axis=1, keepdims=True))
    assert all_of_all == b.all()
    assert count == 3 and count.dtype == np.int64
    np.testing.assert_array_equal(count_axis, [2, 1])
    assert count_axis.dtype == np.int32


def test_variance_std_and_euclidean_norm():
    x = RNG.uniform(-1, 1, size=(3, 4))
    t = tf.constant(x)
    var, std, norm = _run([tf.math.reduce_variance(t, axis=0), tf.math.reduce_std(t, keepdims=True),
                           tf.math.reduce_euclidean_norm(t, axis=1)])
    np.testing.assert_allclose(var, x.var(axis=0))
    np.testing.assert_allclose(std, x.std(keepdims=True))
    np.testing.assert_allclose(norm, np.linalg.norm(x, axis=1))
    with pytest.raises(TypeError, match="reduce_variance got int32"):
        tf.math.reduce_variance(tf.constant([1, 2]))


# --- clipping and norms --------------------------------------------------------------------------

def test_clip_by_value_and_its_gradient():
    x = np.array([-2.0, -0.5, 0.2, 0.7, 3.0])
    got = _run(tf.clip_by_value(tf.constant(x), -1.0, 1.0))
    np.testing.assert_array_equal(got, np.clip(x, -1, 1))
    _check_gradient(lambda t: tf.reduce_sum(tf.clip_by_value(t, -1.0, 1.0) * [1., 2., 3., 4., 5.]),
                    x)
    with pytest.raises(ValueError, match="incompatible"):
        tf.clip_by_value(tf.zeros([3]), tf.zeros([2, 3]), 1.0)


def test_clip_by_norm():
    x = RNG.uniform(-1, 1, size=(2, 3))
    clipped, per_row, zero = _run([tf.clip_by_norm(tf.constant(x), 0.5),
                                   tf.clip_by_norm(tf.constant(x), 0.5, axes=[1]),
                                   tf.clip_by_norm(tf.zeros([3], tf.float64), 1.0)])
    np.testing.assert_allclose(clipped, x * 0.5 / max(np.linalg.norm(x), 0.5))
    row_norms = np.linalg.norm(x, axis=1, keepdims=True)
    np.testing.assert_allclose(per_row, x * 0.5 / np.maximum(row_norms, 0.5))
    np.testing.assert_array_equal(zero, np.zeros(3))
    _check_gradient(lambda t: tf.reduce_sum(tf.clip_by_norm(t, 0.5) * [[1., 2., 3.], [4., 5., 6.]]),
                    x)
    # At zero the gradient is finite (the two-select trick), as in TensorFlow.
    z = tf.placeholder(tf.float64, [3])
    (g,) = tf.gradients(tf.reduce_sum(tf.clip_by_norm(z, 1.0)), [z])
    np.testing.assert_array_equal(_run(g, {z: np.zeros(3)}), np.ones(3))


def test_global_norm_and_clip_by_global_norm():
    a = RNG.uniform(-1, 1, size=(2, 3))
    b = RNG.uniform(-1, 1, size=(4,))
    norm = np.sqrt((a ** 2).sum() + (b ** 2).sum())
    ta, tb = tf.constant(a), tf.constant(b)
    (ca, none, cb), used = tf.clip_by_global_norm([ta, None, tb], 0.5)
    assert none is None
    got = _run([tf.global_norm([ta, tb]), ca, cb, used])
    np.testing.assert_allclose(got[0], norm)
    np.testing.assert_allclose(got[1], a * 0.5 / norm)
    np.testing.assert_allclose(got[2], b * 0.5 / norm)
    np.testing.assert_allclose(got[3], norm)
    # use_norm replaces the computed norm; a norm below clip_norm leaves values unchanged.
    (kept,), _ = tf.clip_by_global_norm([ta], 10.0, use_norm=tf.constant(2.0, tf.float64))
    np.testing.assert_allclose(_run(kept), a)
    # An inf or NaN global norm makes every clipped value NaN.
    (bad,), bad_norm = tf.clip_by_global_norm([tf.constant([1.0, np.inf])], 1.0)
    values, norm_value = _run([bad, bad_norm])
    assert np.isnan(values).all() and np.isinf(norm_value)
    with pytest.raises(TypeError, match="should be a sequence"):
        tf.clip_by_global_norm(ta, 1.0)


def test_clip_by_average_norm():
    x = RNG.uniform(-1, 1, size=(2, 3)).astype(np.float32)
    got = _run(tf.clip_by_average_norm(tf.constant(x), 0.1))
    np.testing.assert_allclose(got, x * 0.1 / max(np.linalg.norm(x) / 6, 0.1), rtol=1e-6)


@pytest.mark.parametrize("ord,axis,np_ord", [
    ("euclidean", None, None), (1, None, 1), (np.inf, 0, np.inf), (3, 1, 3), (2, -1, 2),
    ("fro", (0, 1), "fro"), (1, (0, 1), 1), (np.inf, (0, 1), np.inf), (2, (0, 1), 2),
    ("euclidean", (-2, -1), "fro")])
def test_norm_matches_numpy(ord, axis, np_ord):
    x = RNG.uniform(-1, 1, size=(3, 4))
    if axis is None:
        expected = np.linalg.norm(x.ravel(), ord=np_ord)
    else:
        expected = np.linalg.norm(x, ord=np_ord, axis=axis)
    got = _run(tf.norm(tf.constant(x), ord=ord, axis=axis))
    np.testing.assert_allclose(got, expected, rtol=1e-10)


def test_matrix_norms_over_batches_and_keepdims():
    x = RNG.uniform(-1, 1, size=(2, 3, 4))
    got = _run([tf.linalg.norm(tf.constant(x), ord=2, axis=(1, 2), keepdims=True),
                tf.norm(tf.constant(x), ord=1, axis=[2, 0])])
    np.testing.assert_allclose(got[0], np.linalg.norm(x, ord=2, axis=(1, 2))[:, None, None])
    np.testing.assert_allclose(got[1], np.linalg.norm(x, ord=1, axis=(2, 0)))
    with pytest.raises(ValueError, match="'ord' must be a supported matrix norm"):
        tf.norm(tf.constant(x), ord=3, axis=(0, 1))
    with pytest.raises(ValueError, match="'axis' must be None, an integer, or a tuple of 2"):
        tf.norm(tf.constant(x), axis=(0, 0))
    with pytest.raises(ValueError, match="'ord' must be a supported vector norm"):
        tf.norm(tf.constant(x), ord=-1)


def test_norm_gradient():
    _check_gradient(lambda t: tf.norm(t) + tf.norm(t, ord=1, axis=0)[0], RNG.uniform(-1, 1, (2, 3)))


# --- einsum and tensordot ------------------------------------------------------------------------

@pytest.mark.parametrize("equation,shapes", [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("i,i->", [(3,), (3,)]), ("i,j->ij", [(3,), (2,)]),
    ("ij->ji", [(2, 3)]), ("ii->i", [(3, 3)]), ("ii", [(3, 3)]), ("ij->", [(2, 3)]),
    ("iij->j", [(2, 2, 3)]), ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]), ("abc,cd,bd->a", [(2, 3, 4), (4, 5), (3, 5)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]), ("...i,...i->...", [(2, 3), (2, 3)]),
])
def test_einsum_matches_numpy(equation, shapes):
    operands = [RNG.uniform(-1, 1, size=s) for s in shapes]
    got = _run(tf.einsum(equation, *[tf.constant(x) for x in operands]))
    np.testing.assert_allclose(got, np.einsum(equation, *operands), rtol=1e-10, atol=1e-12)


def test_einsum_with_an_unknown_batch_dimension():
    a = tf.placeholder(tf.float32, [None, 3, 4])
    b = tf.placeholder(tf.float32, [None, 4, 2])
    out = tf.einsum("bij,bjk->bik", a, b)
    x, y = RNG.uniform(size=(5, 3, 4)), RNG.uniform(size=(5, 4, 2))
    np.testing.assert_allclose(_run(out, {a: x, b: y}), np.einsum("bij,bjk->bik", x, y),
                               rtol=1e-5)


def test_einsum_gradient():
    _check_gradient(lambda a, b: tf.reduce_sum(tf.einsum("ij,jk->ik", a, b) * [[1., 2.], [3., 4.]]),
                    RNG.uniform(-1, 1, (2, 3)), RNG.uniform(-1, 1, (3, 2)))
    _check_gradient(lambda a: tf.reduce_sum(tf.einsum("iij->j", a) * [1., 2.]),
                    RNG.uniform(-1, 1, (2, 2, 2)))


def test_einsum_errors():
    a = tf.zeros([2, 3])
    with pytest.raises(ValueError, match="names 2 operands but 1 were given"):
        tf.einsum("ij,jk->ik", a)
    with pytest.raises(ValueError, match="has rank 2 but 'ijk' names 3"):
        tf.einsum("ijk->i", a)
    with pytest.raises(ValueError, match="appears in no input"):
        tf.einsum("ij->k", a)


@pytest.mark.parametrize("axes,b_shape", [(1, (4, 5)), (2, (3, 4, 5)), (0, (2,)),
                                          ([[1, 2], [0, 1]], (3, 4, 5)), (([2], [1]), (3, 4, 5))])
def test_tensordot_matches_numpy(axes, b_shape):
    a = RNG.uniform(-1, 1, size=(2, 3, 4))
    b = RNG.uniform(-1, 1, size=b_shape)
    got = _run(tf.tensordot(tf.constant(a), tf.constant(b), axes))
    np.testing.assert_allclose(got, np.tensordot(a, b, axes), rtol=1e-10)


# --- composites ----------------------------------------------------------------------------------

def test_no_nan_divisions_and_products():
    x = tf.constant([1.0, 2.0, np.inf, 3.0])
    y = tf.constant([0.0, 4.0, 0.0, -2.0])
    div, rec, mul, top_level = _run([tf.math.divide_no_nan(x, y), tf.math.reciprocal_no_nan(y),
                                     tf.math.multiply_no_nan(x, y), tf.div_no_nan(x, y)])
    np.testing.assert_array_equal(div, [0.0, 0.5, 0.0, -1.5])
    np.testing.assert_array_equal(rec, [0.0, 0.25, 0.0, -0.5])
    np.testing.assert_array_equal(mul, [0.0, 8.0, 0.0, -6.0])
    np.testing.assert_array_equal(top_level, div)
    _check_gradient(lambda a, b: tf.reduce_sum(tf.math.divide_no_nan(a, b) * [1.0, 2.0, 3.0]),
                    np.array([1.0, -2.0, 0.5]), np.array([0.4, 0.7, -1.3]))
    # Where y is 0 both gradients are 0, not NaN, as TensorFlow's.
    a = tf.placeholder(tf.float64, [2])
    b = tf.placeholder(tf.float64, [2])
    grads = tf.gradients(tf.reduce_sum(tf.math.divide_no_nan(a, b)), [a, b])
    ga, gb = _run(grads, {a: [1.0, 2.0], b: [0.0, 4.0]})
    np.testing.assert_array_equal(ga, [0.0, 0.25])
    np.testing.assert_array_equal(gb, [0.0, -0.125])


def test_small_composites():
    x = np.array([[0.5, 1.5, 2.0], [3.0, 0.2, 1.0]])
    t = tf.constant(x)
    lbeta, scaled, zeros, xor, up, strict, acc = _run([
        tf.lbeta(t), tf.scalar_mul(2.0, t), tf.math.zero_fraction(tf.constant([0, 1, 0, 3])),
        tf.logical_xor(tf.constant([True, True, False]), tf.constant([True, False, False])),
        tf.is_non_decreasing(tf.constant([1, 1, 2])), tf.is_strictly_increasing([1, 1, 2]),
        tf.accumulate_n([t, t, t])])
    expected_lbeta = special.gammaln(x).sum(-1) - special.gammaln(x.sum(-1))
    np.testing.assert_allclose(lbeta, expected_lbeta, rtol=1e-10)
    np.testing.assert_array_equal(scaled, 2 * x)
    assert zeros == np.float32(0.5)
    np.testing.assert_array_equal(xor, [False, True, False])
    assert up and not strict
    np.testing.assert_allclose(acc, 3 * x)
    assert _run(tf.is_strictly_increasing(tf.constant([5.0])))
    with pytest.raises(ValueError, match="Only scalar multiply works"):
        tf.scalar_mul(tf.constant([1.0, 2.0], tf.float64), t)


def test_complex_part_functions_on_real_tensors():
    x = tf.constant([-2.0, 0.0, 3.0])
    conj, real, imag, angle = _run([tf.conj(x), tf.math.real(x), tf.imag(x), tf.angle(x)])
    np.testing.assert_array_equal(conj, [-2.0, 0.0, 3.0])
    np.testing.assert_array_equal(real, conj)
    np.testing.assert_array_equal(imag, [0.0, 0.0, 0.0])
    np.testing.assert_allclose(angle, np.angle([-2.0, 0.0, 3.0]).astype(np.float32))


def test_zeta_and_polygamma():
    x = RNG.uniform(0.5, 4, size=5)
    zeta, trigamma = _run([tf.math.zeta(tf.constant(3.0, tf.float64), tf.constant(x)),
                           tf.polygamma(tf.constant(1.0, tf.float64), tf.constant(x))])
    np.testing.assert_allclose(zeta, special.zeta(3.0, x), rtol=1e-12)
    np.testing.assert_allclose(trigamma, special.polygamma(1, x), rtol=1e-12)
    # Digamma's gradient is the trigamma function.
    _check_gradient(lambda t: tf.reduce_sum(tf.digamma(t) * [1.0, 2.0, 3.0, 4.0, 5.0]), x)


def test_inverse_error_functions():
    q = RNG.uniform(0.01, 1.99, size=6)
    erfcinv, ndtri = _run([tf.math.erfcinv(tf.constant(q)), tf.math.ndtri(tf.constant(q / 2))])
    np.testing.assert_allclose(erfcinv, special.erfcinv(q), rtol=1e-12)
    np.testing.assert_allclose(ndtri, special.ndtri(q / 2), rtol=1e-12)
