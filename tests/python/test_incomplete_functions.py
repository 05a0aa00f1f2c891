"""tf.math.igamma, igammac and betainc against scipy in float64 (values across the series and
continued-fraction regimes, edges, gradients against finite differences of scipy), nextafter,
invert_permutation, tf.count_up_to and tf.math.l2_normalize."""

import numpy as np
import pytest
from scipy import special

import flowstone as tf
from flowstone import errors
from peers import requires_tensorflow, run_tensorflow


def _run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


A = np.array([1e-3, 0.1, 0.5, 1.0, 2.5, 10.0, 50.0, 200.0, 1e4, 3.0, 3.0])
X = np.array([0.5, 1e-4, 2.0, 1.0, 2.4, 12.0, 45.0, 210.0, 1.01e4, 1e-8, 80.0])


def test_igamma_and_igammac_match_scipy():
    with tf.Graph().as_default():
        p = tf.math.igamma(A, X)
        q = tf.igammac(A, X)
        pv, qv = _run([p, q])
    np.testing.assert_allclose(pv, special.gammainc(A, X), rtol=1e-11, atol=1e-300)
    np.testing.assert_allclose(qv, special.gammaincc(A, X), rtol=1e-10, atol=1e-300)


def test_igamma_edges_follow_tensorflow():
    a = np.array([1.0, 1.0, 0.0, -1.0, 2.0, np.nan])
    x = np.array([0.0, np.inf, 1.0, 1.0, -1.0, 1.0])
    with tf.Graph().as_default():
        pv, qv = _run([tf.math.igamma(a, x), tf.math.igammac(a, x)])
    np.testing.assert_array_equal(pv[:2], [0.0, 1.0])
    np.testing.assert_array_equal(qv[:2], [1.0, 0.0])
    assert np.all(np.isnan(pv[2:])) and np.all(np.isnan(qv[2:]))


def test_igamma_gradients_match_finite_differences_of_scipy():
    a0 = np.array([0.3, 1.0, 4.0, 20.0, 150.0])
    x0 = np.array([0.2, 2.0, 3.0, 25.0, 140.0])
    with tf.Graph().as_default():
        a = tf.constant(a0)
        x = tf.constant(x0)
        grads = tf.gradients(tf.math.igamma(a, x), [a, x]) + \
            tf.gradients(tf.math.igammac(a, x), [a, x])
        da, dx, dca, dcx = _run(grads)
    h = 1e-6 * a0
    expected_da = (special.gammainc(a0 + h, x0) - special.gammainc(a0 - h, x0)) / (2 * h)
    expected_dx = np.exp((a0 - 1) * np.log(x0) - x0 - special.gammaln(a0))
    np.testing.assert_allclose(da, expected_da, rtol=1e-6)
    np.testing.assert_allclose(dx, expected_dx, rtol=1e-12)
    np.testing.assert_allclose(dca, -expected_da, rtol=1e-6)
    np.testing.assert_allclose(dcx, -expected_dx, rtol=1e-12)


def test_betainc_matches_scipy():
    rng = np.random.default_rng(0)
    a = rng.uniform(0.05, 60, 200)
    b = rng.uniform(0.05, 60, 200)
    x = rng.uniform(0, 1, 200)
    with tf.Graph().as_default():
        z = _run(tf.math.betainc(a, b, x))
        edges = _run(tf.betainc(2.0, 3.0, np.array([0.0, 1.0, -0.1, 1.5])))
        scalar_a = _run(tf.math.betainc(0.5, b[:3], x[:3]))
    np.testing.assert_allclose(z, special.betainc(a, b, x), rtol=1e-10, atol=1e-300)
    np.testing.assert_array_equal(edges[:2], [0.0, 1.0])
    assert np.all(np.isnan(edges[2:]))
    np.testing.assert_allclose(scalar_a, special.betainc(0.5, b[:3], x[:3]), rtol=1e-10)


def test_betainc_gradient_is_with_respect_to_x_only():
    with tf.Graph().as_default():
        a = tf.constant([0.5, 2.0, 7.0], tf.float64)
        b = tf.constant([1.5, 3.0, 2.0], tf.float64)
        x = tf.constant([0.2, 0.5, 0.8], tf.float64)
        ga, gb, gx = tf.gradients(tf.math.betainc(a, b, x), [a, b, x])
        assert ga is None and gb is None
        value = _run(gx)
    av, bv, xv = np.array([0.5, 2.0, 7.0]), np.array([1.5, 3.0, 2.0]), np.array([0.2, 0.5, 0.8])
    expected = xv ** (av - 1) * (1 - xv) ** (bv - 1) / special.beta(av, bv)
    np.testing.assert_allclose(value, expected, rtol=1e-12)


def test_betainc_shapes_must_agree():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="one shape or be scalars"):
            tf.math.betainc(np.ones(2), np.ones(3), 0.5)
        a = tf.placeholder(tf.float64)
        z = tf.math.betainc(a, np.ones(3), 0.5)
        with pytest.raises(errors.InvalidArgumentError, match="Shapes of a and b are inconsistent"):
            _run(z, {a: np.ones(2)})


def test_nextafter():
    x1 = np.array([1.0, 0.0, -1.0, 5.0], np.float32)
    x2 = np.array([2.0, 1.0, -2.0, 5.0], np.float32)
    with tf.Graph().as_default():
        out = _run(tf.math.nextafter(x1, x2))
        out64 = _run(tf.math.nextafter(x1.astype(np.float64), 0.0))
    np.testing.assert_array_equal(out, np.nextafter(x1, x2))
    np.testing.assert_array_equal(out64, np.nextafter(x1.astype(np.float64), 0.0))


def test_invert_permutation_and_its_errors():
    with tf.Graph().as_default():
        y = tf.math.invert_permutation([3, 4, 0, 2, 1])
        assert y.shape.as_list() == [5] and y.dtype == tf.int32
        np.testing.assert_array_equal(_run(y), [2, 4, 3, 0, 1])
        np.testing.assert_array_equal(_run(tf.invert_permutation(np.array([1, 0], np.int64))),
                                      [1, 0])
        x = tf.placeholder(tf.int32)
        z = tf.math.invert_permutation(x)
        with pytest.raises(errors.InvalidArgumentError, match="is duplicated"):
            _run(z, {x: [0, 0, 1]})
        with pytest.raises(errors.InvalidArgumentError, match="not between 0 and 3"):
            _run(z, {x: [0, 3, 1]})
        with pytest.raises(errors.InvalidArgumentError, match="1D vector"):
            _run(z, {x: [[0]]})


def test_count_up_to_and_math_l2_normalize():
    with tf.Graph().as_default():
        v = tf.Variable(0, dtype=tf.int64)
        step = tf.count_up_to(v, 2)
        norm = tf.math.l2_normalize(tf.constant([3.0, 4.0]))
        with tf.Session() as sess:
            sess.run(v.initializer)
            assert [sess.run(step), sess.run(step)] == [0, 1]
            with pytest.raises(errors.OutOfRangeError):
                sess.run(step)
            np.testing.assert_allclose(sess.run(norm), [0.6, 0.8], rtol=1e-6)


@requires_tensorflow
def test_igamma_betainc_edges_match_tensorflow():
    a = [1.0, 1.0, 0.0, -1.0, 2.0, 0.5]
    x = [0.0, float("inf"), 1.0, 1.0, -1.0, 0.3]
    out = run_tensorflow(f"""
        import numpy as np, tensorflow as tf
        a = np.array({a}); x = np.array({str(x).replace("inf", "np.inf")})
        print(repr(tf.math.igamma(a, x).numpy().tolist()))
        print(repr(tf.math.igammac(a, x).numpy().tolist()))
        b = tf.math.betainc(np.float64(2.0), np.float64(3.0), np.array([0.0, 1.0, 0.3]))
        print(repr(b.numpy().tolist()))
    """).split("\n")
    with tf.Graph().as_default():
        p, q, b = _run([tf.math.igamma(np.array(a), np.array(x)),
                        tf.math.igammac(np.array(a), np.array(x)),
                        tf.math.betainc(2.0, 3.0, np.array([0.0, 1.0, 0.3]))])
    names = {"nan": np.nan, "inf": np.inf}  # TensorFlow's lists print NaN as nan
    np.testing.assert_allclose(p, eval(out[0], names), rtol=1e-12)
    np.testing.assert_allclose(q, eval(out[1], names), rtol=1e-12)
    np.testing.assert_allclose(b, eval(out[2], names), rtol=1e-12)
