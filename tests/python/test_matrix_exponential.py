"""tf.linalg.expm against a numpy reference (a Taylor series on a scaled matrix, squared back)
and exact cases, with finite-difference gradients. (Values were also compared with
TensorFlow's when written.)"""

import numpy as np
import pytest

import flowstone as tf
from gradient_check import check_gradients

RNG = np.random.default_rng(11)


def expm_reference(a):
    """exp(a) in float64: 40 Taylor terms of a / 2^s (norm below 1/2), squared s times."""
    s = max(0, int(np.ceil(np.log2(max(np.abs(a).sum(axis=0).max(), 1e-300) * 2))))
    x = a / 2.0 ** s
    result, term = np.eye(len(a)), np.eye(len(a))
    for k in range(1, 40):
        term = term @ x / k
        result = result + term
    for _ in range(s):
        result = result @ result
    return result


def test_expm_matches_the_series_for_small_and_large_norms():
    batch = np.stack([RNG.normal(size=(4, 4)) * 0.01, RNG.normal(size=(4, 4)),
                      RNG.normal(size=(4, 4)) * 8])
    with tf.Session() as sess:
        got = sess.run(tf.linalg.expm(batch))
    for g, a in zip(got, batch):
        np.testing.assert_allclose(g, expm_reference(a), rtol=1e-10, atol=1e-12)


def test_expm_exact_cases():
    theta = 0.7
    rotation_generator = np.array([[0.0, -theta], [theta, 0.0]])
    nilpotent = np.array([[0.0, 1.0, 2.0], [0.0, 0.0, 3.0], [0.0, 0.0, 0.0]])
    with tf.Session() as sess:
        rotation, unipotent, zero = sess.run([
            tf.linalg.expm(rotation_generator), tf.linalg.expm(nilpotent),
            tf.linalg.expm(np.zeros((2, 3, 3)))])
    np.testing.assert_allclose(rotation, [[np.cos(theta), -np.sin(theta)],
                                          [np.sin(theta), np.cos(theta)]], atol=1e-14)
    np.testing.assert_allclose(unipotent, np.eye(3) + nilpotent + nilpotent @ nilpotent / 2,
                               atol=1e-14)
    np.testing.assert_allclose(zero, np.tile(np.eye(3), (2, 1, 1)), atol=1e-15)
    with pytest.raises(ValueError, match="needs a matrix"):
        tf.linalg.expm(np.ones(3))


def test_expm_gradient():
    check_gradients(lambda a: tf.linalg.expm(a), [RNG.normal(size=(3, 3))], wrt=[0],
                    rtol=1e-5, atol=1e-7)
