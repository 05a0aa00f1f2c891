"""tf.distributions: every family's formulas against TensorFlow's (one program run under both),
samples' shapes and moments, KL divergences and the registry, and the errors."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import flowstone as tf
from peers import requires_tensorflow, run_tensorflow

PROGRAM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data",
                       "distributions_program.py")


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def _run_ours():
    done = subprocess.run([sys.executable, PROGRAM, "flowstone"], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@requires_tensorflow
def test_formulas_equal_tensorflows():
    ours = _run_ours()
    theirs = json.loads(run_tensorflow(
        f"import sys; sys.argv = ['p', 'tf']\nexec(open({PROGRAM!r}).read())").splitlines()[-1])
    assert set(ours) == set(theirs)
    for key, expected in theirs.items():
        np.testing.assert_allclose(ours[key], expected, rtol=2e-5, atol=1e-6, err_msg=key)


def test_formulas_against_closed_forms():
    values = _run_ours()
    np.testing.assert_allclose(values["normal.log_prob"][0],
                               -0.5 * (0.3 - 0.5) ** 2 - 0.5 * np.log(2 * np.pi), rtol=1e-6)
    np.testing.assert_allclose(values["uniform.entropy"], np.log([1.0, 2.0, 2.0]), rtol=1e-6)
    np.testing.assert_allclose(values["bern.mean"], 1 / (1 + np.exp(-np.array([0.3, -1.2]))),
                               rtol=1e-6)
    np.testing.assert_allclose(values["kl.normal"][0], 0.5 * 0.5 ** 2, rtol=1e-5)


def _moments(samples):
    return samples.mean(axis=0), samples.std(axis=0)


def test_samples_have_the_shape_and_moments_of_their_distribution():
    d = tf.distributions
    normal = d.Normal(loc=[0.0, 5.0], scale=[1.0, 0.5])
    uniform = d.Uniform(low=-1.0, high=3.0)
    laplace = d.Laplace(1.0, 2.0)
    exponential = d.Exponential([2.0])
    bern = d.Bernoulli(probs=[0.2, 0.9])
    cat = d.Categorical(probs=[0.1, 0.6, 0.3])
    multi = d.Multinomial(total_count=4.0, probs=[0.5, 0.25, 0.25])
    draws = {"normal": normal.sample(20000, seed=1), "uniform": uniform.sample([100, 200], seed=2),
             "laplace": laplace.sample(20000, seed=3), "exp": exponential.sample(20000, seed=4),
             "bern": bern.sample(20000, seed=5), "cat": cat.sample(20000, seed=6),
             "multi": multi.sample(5000, seed=7)}
    assert draws["normal"].shape.as_list() == [20000, 2]
    assert draws["uniform"].shape.as_list() == [100, 200]
    assert draws["multi"].shape.as_list() == [5000, 3]
    with tf.Session() as sess:
        s = sess.run(draws)
    mean, std = _moments(s["normal"])
    np.testing.assert_allclose(mean, [0.0, 5.0], atol=0.05)
    np.testing.assert_allclose(std, [1.0, 0.5], rtol=0.05)
    assert s["uniform"].min() >= -1.0 and s["uniform"].max() < 3.0
    np.testing.assert_allclose(s["uniform"].mean(), 1.0, atol=0.05)
    np.testing.assert_allclose(_moments(s["laplace"]), (1.0, 2.0 * np.sqrt(2.0)), rtol=0.06)
    np.testing.assert_allclose(_moments(s["exp"]), ([0.5], [0.5]), rtol=0.05)
    assert s["bern"].dtype == np.int32 and set(np.unique(s["bern"])) <= {0, 1}
    np.testing.assert_allclose(s["bern"].mean(axis=0), [0.2, 0.9], atol=0.02)
    np.testing.assert_allclose(np.bincount(s["cat"], minlength=3) / 20000, [0.1, 0.6, 0.3],
                               atol=0.02)
    assert (s["multi"].sum(axis=1) == 4).all()
    np.testing.assert_allclose(s["multi"].mean(axis=0), [2.0, 1.0, 1.0], atol=0.1)


def test_gamma_family_samples_have_their_moments():
    d = tf.distributions
    draws = {"gamma": d.Gamma([2.0, 0.5], [1.0, 2.0]).sample(20000, seed=1),
             "beta": d.Beta(2.0, 3.0).sample(20000, seed=2),
             "dirichlet": d.Dirichlet([1.0, 2.0, 3.0]).sample(20000, seed=3),
             "student": d.StudentT(5.0, 1.0, 2.0).sample(20000, seed=4)}
    with tf.Session() as sess:
        s = sess.run(draws)
    np.testing.assert_allclose(s["gamma"].mean(0), [2.0, 0.25], rtol=0.05)
    np.testing.assert_allclose(s["gamma"].var(0), [2.0, 0.125], rtol=0.1)
    np.testing.assert_allclose(s["beta"].mean(), 0.4, atol=0.01)
    assert s["beta"].min() > 0 and s["beta"].max() < 1
    np.testing.assert_allclose(s["dirichlet"].sum(-1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(s["dirichlet"].mean(0), [1 / 6, 2 / 6, 3 / 6], atol=0.01)
    np.testing.assert_allclose(np.median(s["student"]), 1.0, atol=0.05)
    np.testing.assert_allclose(s["student"].var(), 4.0 * 5.0 / 3.0, rtol=0.1)


def test_reparameterized_samples_carry_gradients():
    loc = tf.Variable(0.5)
    samples = tf.distributions.Normal(loc, 2.0).sample(1000, seed=3)
    (grad,) = tf.gradients(tf.reduce_mean(samples), [loc])
    with tf.Session() as sess:
        sess.run(loc.initializer)
        np.testing.assert_allclose(sess.run(grad), 1.0, rtol=1e-6)
    assert tf.distributions.Normal(0.0, 1.0).reparameterization_type is (
        tf.distributions.FULLY_REPARAMETERIZED)
    assert tf.distributions.Bernoulli(probs=0.5).reparameterization_type is (
        tf.distributions.NOT_REPARAMETERIZED)


def test_shapes_copies_and_param_shapes():
    normal = tf.distributions.Normal(loc=tf.zeros([4, 1]), scale=tf.ones([3]))
    assert normal.batch_shape.as_list() == [4, 3] and normal.event_shape.as_list() == []
    dirichlet = tf.distributions.Dirichlet(tf.ones([2, 5]))
    assert dirichlet.batch_shape.as_list() == [2] and dirichlet.event_shape.as_list() == [5]
    wider = normal.copy(scale=tf.ones([4, 3]) * 2.0)
    assert isinstance(wider, tf.distributions.Normal) and wider.batch_shape.as_list() == [4, 3]
    assert set(tf.distributions.Normal.param_static_shapes([3])) == {"loc", "scale"}
    assert "batch_shape=(4, 3)" in str(normal)
    with tf.Session() as sess:
        assert sess.run(normal.batch_shape_tensor()).tolist() == [4, 3]


def test_errors_and_the_kl_registry():
    with pytest.raises(ValueError, match="Must pass probs or logits, but not both"):
        tf.distributions.Bernoulli(logits=0.1, probs=0.5)
    with pytest.raises(NotImplementedError, match="No KL.*Normal.*Laplace"):
        tf.distributions.kl_divergence(tf.distributions.Normal(0.0, 1.0),
                                       tf.distributions.Laplace(0.0, 1.0))

    class Wrapped(tf.distributions.Normal):
        pass

    # The registry searches both MROs, so a subclass uses its parent's KL ...
    kl = tf.distributions.kl_divergence(Wrapped(1.0, 1.0), tf.distributions.Normal(0.0, 1.0))

    # ... until it registers its own.
    @tf.distributions.RegisterKL(Wrapped, tf.distributions.Normal)
    def _kl(a, b, name=None):
        return tf.constant(42.0)

    with pytest.raises(ValueError, match="already been registered"):
        tf.distributions.RegisterKL(Wrapped, tf.distributions.Normal)(_kl)
    own = tf.distributions.kl_divergence(Wrapped(1.0, 1.0), tf.distributions.Normal(0.0, 1.0))
    with tf.Session() as sess:
        assert sess.run(kl) == 0.5 and sess.run(own) == 42.0
    with pytest.raises(NotImplementedError, match="quantile is not implemented: Bernoulli"):
        tf.distributions.Bernoulli(probs=0.5).quantile(0.5)


def test_contrib_distributions_and_multivariate_normal_diag():
    tfd = tf.contrib.distributions
    assert tfd.Normal is tf.distributions.Normal
    loc = np.array([[0.5, -1.0], [2.0, 0.0]], np.float32)
    scale = np.array([[1.0, 2.0], [0.5, 1.5]], np.float32)
    mvn = tfd.MultivariateNormalDiag(loc=loc, scale_diag=scale)
    x = np.array([[0.0, 1.0], [1.0, -1.0]], np.float32)
    assert mvn.batch_shape.as_list() == [2] and mvn.event_shape.as_list() == [2]
    other = tfd.MultivariateNormalDiag(loc=np.zeros(2, np.float32))
    samples = mvn.sample(20000, seed=4)
    with tf.Session() as sess:
        log_prob, entropy, kl, draws = sess.run([mvn.log_prob(x), mvn.entropy(),
                                                 tfd.kl_divergence(mvn, other), samples])
    z = (x - loc) / scale
    np.testing.assert_allclose(log_prob, np.sum(-0.5 * z ** 2 - np.log(scale)
                                                 - 0.5 * np.log(2 * np.pi), -1), rtol=1e-5)
    np.testing.assert_allclose(entropy, np.sum(0.5 * np.log(2 * np.pi * np.e) + np.log(scale),
                                                -1), rtol=1e-5)
    np.testing.assert_allclose(kl, np.sum(0.5 * (scale ** 2 + loc ** 2 - 1) - np.log(scale), -1),
                               rtol=1e-5)
    assert draws.shape == (20000, 2, 2)
    np.testing.assert_allclose(draws.mean(0), loc, atol=0.05)
    np.testing.assert_allclose(draws.std(0), scale, rtol=0.05)
    with pytest.raises(AttributeError, match="tensorflow_probability"):
        tfd.Bijector
