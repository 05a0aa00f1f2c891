"""The float32 softmax cross entropy kernels (vectorized exp, double sums) against float64 numpy,
at the language model's 10,000 classes and at class counts that leave a remainder after the
kernel's 8-wide lanes (test_determinism.py checks the thread counts)."""

import numpy as np
import pytest

import flowstone as tf
from flowstone.ops import nn_impl as nn


def _log_softmax(x):
    shifted = x.astype(np.float64) - x.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def _run(fetches):
    with tf.Session() as sess:
        return sess.run(fetches)


@pytest.mark.parametrize("batch,classes", [(700, 10000), (5, 7), (3, 13), (2, 10001)])
def test_sparse_float32_matches_float64(batch, classes):
    rng = np.random.default_rng(classes)
    logits = (rng.standard_normal((batch, classes)) * 3).astype(np.float32)
    labels = rng.integers(0, classes, size=batch)
    loss = nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    got, backprop = _run([loss, loss.op.outputs[1]])
    log_p = _log_softmax(logits)
    np.testing.assert_allclose(got, -log_p[np.arange(batch), labels], rtol=2e-6, atol=1e-6)
    expected = np.exp(log_p)
    expected[np.arange(batch), labels] -= 1
    np.testing.assert_allclose(backprop, expected, rtol=2e-5, atol=1e-7)


@pytest.mark.parametrize("classes", [10000, 9])
def test_dense_float32_matches_float64(classes):
    rng = np.random.default_rng(classes)
    logits = (rng.standard_normal((6, classes)) * 3).astype(np.float32)
    p = rng.uniform(size=(6, classes))
    labels = (p / p.sum(axis=1, keepdims=True)).astype(np.float32)
    loss = nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
    got, backprop = _run([loss, loss.op.outputs[1]])
    log_p = _log_softmax(logits)
    expected = -(labels.astype(np.float64) * log_p).sum(axis=1)
    np.testing.assert_allclose(got, expected, rtol=2e-6)
    np.testing.assert_allclose(backprop, np.exp(log_p) - labels, rtol=2e-5, atol=1e-7)


def test_extreme_logits():
    # Far below the row's max, exp underflows to exactly 0; -inf logits are just never picked;
    # a NaN logit makes its row's loss NaN and leaves the other rows alone; a loss beyond float's
    # range is inf, as TensorFlow's.
    logits = np.array([[50.0, -200.0, 0.0, -np.inf, 1.0, 2.0, 3.0, 4.0, 5.0],
                       [np.nan, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
                       [3e38, -3e38, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]], np.float32)
    loss = nn.sparse_softmax_cross_entropy_with_logits(labels=[0, 1, 1], logits=logits)
    got, backprop = _run([loss, loss.op.outputs[1]])
    assert got[0] == pytest.approx(-_log_softmax(logits[:1])[0, 0], abs=1e-6)
    assert backprop[0, 1] == 0 and backprop[0, 3] == 0
    assert np.isnan(got[1]) and np.isnan(backprop[1]).all()
    assert got[2] == np.inf and np.isfinite(backprop[2]).all()


def test_gradient_matches_finite_differences():
    # Through the op's gradient (grad_loss times backprop), in float32 against central
    # differences of the float64 loss.
    rng = np.random.default_rng(7)
    logits = (rng.standard_normal((3, 11)) * 2).astype(np.float32)
    labels = np.array([2, 10, 0])
    weights = np.array([0.5, -1.0, 2.0], np.float32)
    x = tf.constant(logits)
    loss = tf.reduce_sum(weights * nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                               logits=x))
    (grad,) = _run(tf.gradients(loss, [x]))

    def f(z):
        return float((weights * -_log_softmax(z)[np.arange(3), labels]).sum())

    numeric = np.zeros_like(logits, np.float64)
    eps = 1e-4
    for idx in np.ndindex(*logits.shape):
        up, down = logits.astype(np.float64), logits.astype(np.float64)
        up[idx] += eps
        down[idx] -= eps
        numeric[idx] = (f(up) - f(down)) / (2 * eps)
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-6)
