"""tf.random's parameterized samplers (gamma, Poisson, binomial, truncated normal), seed
splitting and tf.random.Generator: distributions against scipy (Kolmogorov-Smirnov and
moment bounds loose enough to fail only on a real error, with fixed seeds), determinism,
gradients by implicit reparameterization, errors, and TensorFlow's shapes and dtypes."""

import numpy as np
import pytest
from scipy import special, stats

import flowstone as tf
from flowstone import errors
from peers import requires_tensorflow, run_tensorflow


def _run(fetches, feed_dict=None, init=False):
    with tf.Session() as sess:
        if init:
            sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed_dict)


def _ks_pvalue(sample, cdf):
    return stats.kstest(np.asarray(sample, np.float64).ravel(), cdf).pvalue


# ---------------------------------------------------------------------------------------------
# Gamma

@pytest.mark.parametrize("alpha", [0.2, 1.0, 3.5, 50.0])
def test_gamma_matches_scipy(alpha):
    with tf.Graph().as_default():
        x = tf.random.gamma([20000], alpha, beta=2.0, dtype=tf.float64, seed=7)
        sample = _run(x)
    assert sample.shape == (20000,) and sample.dtype == np.float64
    assert _ks_pvalue(sample, stats.gamma(alpha, scale=0.5).cdf) > 1e-3


def test_gamma_shape_is_shape_then_parameter_shape():
    with tf.Graph().as_default():
        x = tf.random.gamma([5, 3], [[1.0], [2.0]], beta=[1.0, 2.0, 3.0], seed=1)
        assert x.shape.as_list() == [5, 3, 2, 3]
        assert x.dtype == tf.float32
        assert _run(x).shape == (5, 3, 2, 3)
        y = tf.random_gamma([4], 2.0)  # TF1's name
        assert _run(y).shape == (4,)


def test_gamma_seeds_replay_and_runs_differ():
    with tf.Graph().as_default():
        tf.set_random_seed(3)
        x = tf.random.gamma([10], 2.0)
        with tf.Session() as sess:
            first, second = sess.run(x), sess.run(x)
        with tf.Session() as sess:
            again = sess.run(x)
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, second)


def test_gamma_gradient_is_implicit_reparameterization():
    # Each sample x = P^-1(alpha, u) for a u independent of alpha, so dx/dalpha is the
    # derivative of scipy's inverse at fixed u.
    with tf.Graph().as_default():
        alpha = tf.constant([0.7, 4.0], tf.float64)
        x = tf.random.gamma([50], alpha, dtype=tf.float64, seed=11)
        grad = tf.gradients(tf.reduce_sum(x), alpha)[0]
        samples, g = _run([x, grad])
    u = special.gammainc([0.7, 4.0], samples)
    h = 1e-6
    expected = ((special.gammaincinv(np.array([0.7, 4.0]) + h, u) -
                 special.gammaincinv(np.array([0.7, 4.0]) - h, u)) / (2 * h)).sum(axis=0)
    np.testing.assert_allclose(g, expected, rtol=1e-5)


def test_gamma_gradient_with_respect_to_beta():
    with tf.Graph().as_default():
        beta = tf.constant(2.0, tf.float64)
        x = tf.random.gamma([100], 3.0, beta=beta, dtype=tf.float64, seed=5)
        grad = tf.gradients(tf.reduce_sum(x), beta)[0]
        samples, g = _run([x, grad])
    np.testing.assert_allclose(g, -samples.sum() / 2.0, rtol=1e-10)


def test_stateless_gamma_is_deterministic_and_differentiable():
    with tf.Graph().as_default():
        alpha = tf.constant([0.5, 2.0, 8.0], tf.float64)
        x = tf.random.stateless_gamma([4000, 3], seed=[1, 2], alpha=alpha, dtype=tf.float64)
        y = tf.random.stateless_gamma([4000, 3], seed=[1, 2], alpha=alpha, dtype=tf.float64)
        z = tf.random.stateless_gamma([4000, 3], seed=[1, 3], alpha=alpha, dtype=tf.float64)
        grad = tf.gradients(tf.reduce_sum(x), alpha)[0]
        a, b, c, g = _run([x, y, z, grad])
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    for k, alpha_k in enumerate([0.5, 2.0, 8.0]):
        assert _ks_pvalue(a[:, k], stats.gamma(alpha_k).cdf) > 1e-3
    # E[x] = alpha, so the summed gradient is about the number of samples per alpha.
    np.testing.assert_allclose(g, [4000, 4000, 4000], rtol=0.1)


def test_stateless_gamma_rejects_alpha_that_does_not_broadcast():
    with tf.Graph().as_default():
        alpha = tf.placeholder(tf.float32)
        x = tf.random.stateless_gamma([4, 3], seed=[1, 2], alpha=alpha)
        with pytest.raises(errors.InvalidArgumentError, match="does not broadcast"):
            _run(x, {alpha: np.ones(5, np.float32)})


# ---------------------------------------------------------------------------------------------
# Poisson and binomial

def _assert_discrete_matches(sample, pmf, support):
    """Chi-square on the bins with expected count >= 20, the rest pooled."""
    sample = np.asarray(sample).ravel()
    expected = pmf(support) * sample.size
    observed = np.array([(sample == k).sum() for k in support], np.float64)
    keep = expected >= 20
    obs = np.append(observed[keep], sample.size - observed[keep].sum())
    exp = np.append(expected[keep], sample.size - expected[keep].sum())
    mask = exp > 0
    assert stats.chisquare(obs[mask], exp[mask] * obs[mask].sum() / exp[mask].sum()).pvalue > 1e-3


@pytest.mark.parametrize("rate", [0.5, 4.0, 30.0, 1000.0])
def test_poisson_matches_scipy(rate):
    with tf.Graph().as_default():
        x = tf.random.poisson(rate, [20000], dtype=tf.int64, seed=2)
        sample = _run(x)
    assert sample.dtype == np.int64
    support = np.arange(0, int(rate + 10 * np.sqrt(rate) + 10))
    _assert_discrete_matches(sample, stats.poisson(rate).pmf, support)


def test_poisson_shapes_dtypes_and_edges():
    with tf.Graph().as_default():
        x = tf.random.poisson([[1.0, 0.0]], [3], seed=1)
        assert x.shape.as_list() == [3, 1, 2] and x.dtype == tf.float32
        y = tf.random_poisson(2.0, [4], dtype=tf.int32)
        value, other = _run([x, y])
    assert np.all(value[..., 1] == 0)
    assert other.dtype == np.int32


@pytest.mark.parametrize("rate", [0.3, 25.0])
def test_stateless_poisson(rate):
    with tf.Graph().as_default():
        x = tf.random.stateless_poisson([20000], seed=[4, 5], lam=rate)
        y = tf.random.stateless_poisson([20000], seed=[4, 5], lam=rate)
        a, b = _run([x, y])
    assert a.dtype == np.int32
    np.testing.assert_array_equal(a, b)
    _assert_discrete_matches(a, stats.poisson(rate).pmf, np.arange(0, int(rate * 3 + 15)))


@pytest.mark.parametrize("n,p", [(10, 0.3), (200, 0.4), (50, 0.9), (5000, 0.01)])
def test_stateless_binomial_matches_scipy(n, p):
    with tf.Graph().as_default():
        x = tf.random.stateless_binomial([20000], seed=[7, 8], counts=float(n), probs=p)
        sample = _run(x)
    assert sample.dtype == np.int32
    assert sample.min() >= 0 and sample.max() <= n
    _assert_discrete_matches(sample, stats.binom(n, p).pmf, np.arange(0, n + 1))


def test_stateless_binomial_broadcasts_parameters_and_edges():
    with tf.Graph().as_default():
        x = tf.random.stateless_binomial([2, 4], seed=[1, 1], counts=[[0.0], [6.0]],
                                         probs=[0.0, 1.0, 0.5, 1.0], output_dtype=tf.float64)
        value = _run(x)
    np.testing.assert_array_equal(value[0], [0, 0, 0, 0])
    assert value[1, 0] == 0 and value[1, 1] == 6 and value[1, 3] == 6


# ---------------------------------------------------------------------------------------------
# Parameterized truncated normal

@pytest.mark.parametrize("lo,hi", [(-2.0, 2.0), (-0.3, 0.2), (1.0, 4.0), (3.0, 3.5),
                                   (-np.inf, -1.5), (5.0, np.inf)])
def test_stateless_parameterized_truncated_normal_matches_scipy(lo, hi):
    mean, std = 1.0, 2.0
    with tf.Graph().as_default():
        x = tf.random.stateless_parameterized_truncated_normal(
            [20000], seed=[3, 9], means=tf.constant(mean, tf.float64), stddevs=std,
            minvals=lo * std + mean, maxvals=hi * std + mean)
        sample = _run(x)
    assert sample.dtype == np.float64
    assert np.all(sample >= lo * std + mean) and np.all(sample <= hi * std + mean)
    assert _ks_pvalue(sample, stats.truncnorm(lo, hi, loc=mean, scale=std).cdf) > 1e-3


def test_stateless_parameterized_truncated_normal_rejects_bad_parameters():
    with tf.Graph().as_default():
        x = tf.random.stateless_parameterized_truncated_normal([3], seed=[1, 2], stddevs=-1.0)
        with pytest.raises(errors.InvalidArgumentError, match="need stddev > 0"):
            _run(x)


# ---------------------------------------------------------------------------------------------
# Seeds: split, fold_in, full-range integers

def test_split_and_fold_in():
    with tf.Graph().as_default():
        seeds = tf.random.split([1, 2], num=3)
        folded = tf.random.fold_in([1, 2], 7)
        folded64 = tf.random.fold_in(tf.constant([1, 2], tf.int64), tf.constant(7, tf.int64))
        full = tf.random.stateless_uniform([1000], seed=[5, 6], minval=None, maxval=None,
                                           dtype=tf.int64)
        s, f, f64, u = _run([seeds, folded, folded64, full])
        again = _run(tf.random.split([1, 2], num=3))
    assert s.shape == (3, 2) and s.dtype == np.int32
    np.testing.assert_array_equal(s, again)
    assert len({tuple(row) for row in s}) == 3
    assert f.shape == (2,) and f[1] == 7 and f64.dtype == np.int64
    # Full-range integers use the high bits too.
    assert u.min() < -2**62 and u.max() > 2**62


# ---------------------------------------------------------------------------------------------
# Generator

def test_create_rng_state():
    np.testing.assert_array_equal(tf.random.create_rng_state(1234, "philox"), [1234, 0, 0])
    np.testing.assert_array_equal(tf.random.create_rng_state(2**64 + 5, tf.random.Algorithm.PHILOX),
                                  [5, 1, 0])
    with pytest.raises(NotImplementedError, match="ThreeFry"):
        tf.random.create_rng_state(1, "threefry")


def test_generator_replays_from_seed_and_advances():
    with tf.Graph().as_default():
        g1 = tf.random.Generator.from_seed(42)
        g2 = tf.random.experimental.Generator.from_seed(42)
        a = g1.normal([3])
        b = g2.normal([3])
        c = g1.uniform([2, 2], minval=1, maxval=10, dtype=tf.int32)
        t = g1.truncated_normal([100])
        seeds = g1.make_seeds(4)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            first_a, first_b = sess.run([a, b])
            second_a = sess.run(a)
            ints, trunc, s = sess.run([c, t, seeds])
            state = sess.run(g2.state)
    np.testing.assert_array_equal(first_a, first_b)
    assert not np.array_equal(first_a, second_a)
    assert ints.dtype == np.int32 and ints.min() >= 1 and ints.max() < 10
    assert np.abs(trunc).max() < 2
    assert s.shape == (2, 4) and s.dtype == np.int64
    # TensorFlow's layout [counter_lo, counter_hi, key], the seed in the counter; one draw from g2
    # advanced it by one.
    np.testing.assert_array_equal(state, [43, 0, 0])


def test_generator_split_and_global_generator():
    with tf.Graph().as_default():
        g = tf.random.Generator.from_seed(1)
        children = g.split(2)
        x = [child.normal([4]) for child in children]
        tf.random.set_global_generator(tf.random.Generator.from_seed(9))
        y = tf.random.get_global_generator().uniform([2])
        a, b, c = _run(x + [y], init=True)
    assert not np.array_equal(a, b)
    assert c.shape == (2,) and np.all((c >= 0) & (c < 1))


def test_generator_state_must_be_initialized():
    with tf.Graph().as_default():
        g = tf.random.Generator.from_seed(1)
        x = g.normal([2])
        with pytest.raises(errors.FailedPreconditionError):
            _run(x)


# ---------------------------------------------------------------------------------------------
# Against TensorFlow: shapes, dtypes and the Generator's initial state

@requires_tensorflow
def test_shapes_and_dtypes_match_tensorflow():
    out = run_tensorflow("""
        import tensorflow as tf
        print(tf.random.gamma([5, 3], [[1.0], [2.0]], beta=[1.0, 2.0, 3.0]).shape)
        print(tf.random.poisson([4], [[1.0, 0.0]]).dtype.name)
        print(tf.random.stateless_poisson([3], seed=[1, 2], lam=2.0).dtype.name)
        print(tf.random.stateless_binomial([3], seed=[1, 2], counts=5.0, probs=0.5).dtype.name)
        print(tf.random.split([1, 2], num=3).shape, tf.random.split([1, 2], num=3).dtype.name)
        print(tf.random.create_rng_state(1234, "philox").numpy().tolist())
        print(tf.random.Generator.from_seed(1).make_seeds(4).shape)
    """).split("\n")
    with tf.Graph().as_default():
        assert str(tuple(tf.random.gamma([5, 3], [[1.0], [2.0]],
                                         beta=[1.0, 2.0, 3.0]).shape.as_list())) == out[0]
        assert tf.random.poisson([1.0, 0.0], [4]).dtype.name == out[1]
        assert tf.random.stateless_poisson([3], seed=[1, 2], lam=2.0).dtype.name == out[2]
        assert tf.random.stateless_binomial([3], seed=[1, 2], counts=5.0,
                                            probs=0.5).dtype.name == out[3]
    assert out[4] == "(3, 2) int32"
    assert out[5] == "[1234, 0, 0]"
    assert out[6] == "(2, 4)"


def test_samplers_terminate_at_extreme_parameters():
    with tf.Graph().as_default():
        far = tf.random.stateless_parameterized_truncated_normal(
            [4], seed=[1, 2], means=tf.constant(0.0, tf.float64), minvals=1e300, maxvals=np.inf)
        narrow = tf.random.stateless_parameterized_truncated_normal(
            [4], seed=[1, 2], means=tf.constant(0.0, tf.float64), minvals=1e200,
            maxvals=1.0000001e200)
        huge = tf.random.stateless_poisson([3], seed=[1, 2], lam=tf.constant(1e300, tf.float64),
                                           dtype=tf.float64)
        tiny = tf.random.stateless_gamma([3], seed=[1, 2], alpha=1e-300, dtype=tf.float64)
        f, n, h, t = _run([far, narrow, huge, tiny])
    assert np.all(f >= 1e300) and np.all(np.isfinite(f))
    assert np.all((n >= 1e200) & (n <= 1.0000001e200))
    np.testing.assert_allclose(h, 1e300, rtol=1e-6)
    assert np.all(t >= 0)
