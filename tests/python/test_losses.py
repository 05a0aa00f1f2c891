"""tf.losses: reductions, weights, label smoothing and the LOSSES collection, against numpy
(and, where noted, values computed with TensorFlow 2.21's tf.compat.v1.losses)."""

import numpy as np
import pytest

import flowstone as tf
from flowstone import losses
from flowstone.ops import nn_impl

R = losses.Reduction
L = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
LOGITS = np.array([[1.0, 2.0, 3.0], [1.0, -1.0, 0.0]])
BINARY = np.array([[1.0, 0.0, 1.0], [0.0, 0.0, 1.0]])


def _run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


def _log_softmax(x):
    shifted = x - x.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def _reduce(weighted, weights_b, reduction):
    """numpy version of compute_weighted_loss's reductions (weights_b broadcast to losses)."""
    total = weighted.sum()
    denominator = {R.SUM: 1.0, R.MEAN: weights_b.sum(), R.SUM_OVER_BATCH_SIZE: weighted.size,
                   R.SUM_BY_NONZERO_WEIGHTS: np.count_nonzero(weights_b)}[reduction]
    return 0.0 if denominator == 0 else total / denominator


WEIGHTS = [2.0, np.array([[1.0], [0.0]]), np.array([[0.5, 0.0, 2.0]]), np.zeros((2, 1)),
           np.array(3.0)]
# TensorFlow's results for L with each of WEIGHTS, in the order SUM, MEAN, SUM_OVER_BATCH_SIZE,
# SUM_BY_NONZERO_WEIGHTS.
TF_RESULTS = [[42.0, 3.5, 7.0, 7.0], [6.0, 2.0, 1.0, 2.0], [20.5, 4.1, 3.4166667, 5.125],
              [0.0, 0.0, 0.0, 0.0], [63.0, 3.5, 10.5, 10.5]]
REDUCTIONS = [R.SUM, R.MEAN, R.SUM_OVER_BATCH_SIZE, R.SUM_BY_NONZERO_WEIGHTS]


@pytest.mark.parametrize("w", range(len(WEIGHTS)))
@pytest.mark.parametrize("r", range(len(REDUCTIONS)))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compute_weighted_loss_reductions(w, r, dtype):
    weights, reduction = WEIGHTS[w], REDUCTIONS[r]
    weights_value = weights if isinstance(weights, float) else weights.astype(dtype)
    loss = losses.compute_weighted_loss(L.astype(dtype), weights_value, reduction=reduction)
    assert loss.dtype == tf.as_dtype(dtype) and loss.shape.as_list() == []
    got = _run(loss)
    weights_b = np.broadcast_to(weights, L.shape)
    np.testing.assert_allclose(got, _reduce(L * weights_b, weights_b, reduction), rtol=1e-6)
    np.testing.assert_allclose(got, TF_RESULTS[w][r], rtol=1e-6)


def test_reduction_none_keeps_the_weighted_losses():
    loss = losses.compute_weighted_loss(L, np.array([[1.0], [0.5]]), reduction=R.NONE)
    assert loss.shape.as_list() == [2, 3]
    np.testing.assert_allclose(_run(loss), L * [[1.0], [0.5]])


def test_weights_as_a_placeholder():
    weights = tf.placeholder(tf.float64, [None, 1])
    loss = losses.compute_weighted_loss(L, weights)
    np.testing.assert_allclose(_run(loss, {weights: [[0.0], [2.0]]}), 30.0 / 3)
    np.testing.assert_allclose(_run(loss, {weights: [[0.0], [0.0]]}), 0.0)


def test_compute_weighted_loss_errors():
    with pytest.raises(ValueError, match="Invalid Reduction Key bogus"):
        losses.compute_weighted_loss(L, reduction="bogus")
    with pytest.raises(ValueError, match="values.rank=2. weights.rank=1"):
        losses.compute_weighted_loss(L, np.ones(3))
    with pytest.raises(ValueError, match="weights can not be broadcast to values"):
        losses.compute_weighted_loss(L, np.ones((3, 1)))
    assert set(R.all()) == {R.NONE, R.SUM, R.MEAN, R.SUM_OVER_BATCH_SIZE,
                            R.SUM_BY_NONZERO_WEIGHTS}


# --- the losses ----------------------------------------------------------------------------------

def test_mean_squared_error_and_absolute_difference():
    predictions = L * 0.7 - 1
    got = _run([losses.mean_squared_error(L, predictions),
                losses.absolute_difference(L, predictions, weights=np.array([[1.0], [3.0]]))])
    np.testing.assert_allclose(got[0], ((L - predictions) ** 2).mean(), rtol=1e-12)
    np.testing.assert_allclose(got[1], (np.abs(L - predictions) * [[1.0], [3.0]]).sum() / 6,
                               rtol=1e-12)


def test_losses_cast_labels_to_the_predictions_dtype():
    loss = losses.mean_squared_error(np.array([1, 2], np.int32), np.array([1.5, 2.5], np.float32))
    assert loss.dtype == tf.float32
    np.testing.assert_allclose(_run(loss), 0.25)


@pytest.mark.parametrize("fn", [losses.mean_squared_error, losses.absolute_difference,
                                losses.huber_loss, losses.log_loss])
def test_shape_and_argument_errors(fn):
    with pytest.raises(ValueError, match=r"Shapes \(2, 3\) and \(3,\) are incompatible"):
        fn(np.ones(3), np.ones((2, 3)))
    with pytest.raises(ValueError, match="`labels` must not be None"):
        fn(None, np.ones(3))


def test_softmax_cross_entropy_with_label_smoothing():
    onehot = np.eye(3)[[2, 0]]
    loss = losses.softmax_cross_entropy(onehot, LOGITS, label_smoothing=0.3)
    smoothed = onehot * 0.7 + 0.1
    expected = -(smoothed * _log_softmax(LOGITS)).sum(axis=1).mean()
    np.testing.assert_allclose(_run(loss), expected, rtol=1e-12)
    np.testing.assert_allclose(_run(loss), 0.70760596, rtol=1e-6)  # TensorFlow's value


def test_softmax_cross_entropy_smoothing_with_unknown_classes():
    labels = tf.placeholder(tf.float64, [None, None])
    logits = tf.placeholder(tf.float64, [None, None])
    loss = losses.softmax_cross_entropy(labels, logits, label_smoothing=0.3)
    got = _run(loss, {labels: np.eye(3)[[2, 0]], logits: LOGITS})
    np.testing.assert_allclose(got, 0.70760596, rtol=1e-6)


def test_softmax_cross_entropy_does_not_differentiate_labels():
    labels = tf.constant(np.eye(3)[[2, 0]])
    logits = tf.constant(LOGITS)
    loss = losses.softmax_cross_entropy(labels, logits, reduction=R.NONE)
    assert tf.gradients(loss, [labels]) == [None]
    (grad,) = tf.gradients(loss, [logits], grad_ys=[tf.constant([1.0, 1.0], tf.float64)])
    np.testing.assert_allclose(_run(grad), np.exp(_log_softmax(LOGITS)) - np.eye(3)[[2, 0]],
                               rtol=1e-12)


def test_sparse_softmax_cross_entropy_squeezes_trailing_unit_axes():
    loss = losses.sparse_softmax_cross_entropy(np.array([[2], [0]]), LOGITS,
                                               weights=np.array([[1.0], [3.0]]))
    per_example = -_log_softmax(LOGITS)[[0, 1], [2, 0]]
    np.testing.assert_allclose(_run(loss), (per_example * [1.0, 3.0]).sum() / 2, rtol=1e-12)
    np.testing.assert_allclose(_run(loss), 0.815212, rtol=1e-6)  # TensorFlow's value
    plain = losses.sparse_softmax_cross_entropy([2, 0], LOGITS)
    np.testing.assert_allclose(_run(plain), per_example.mean(), rtol=1e-12)


def test_sigmoid_cross_entropy_with_label_smoothing():
    loss = losses.sigmoid_cross_entropy(BINARY, LOGITS, label_smoothing=0.2)
    z = BINARY * 0.8 + 0.1
    x = LOGITS
    expected = (np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x)))).mean()
    np.testing.assert_allclose(_run(loss), expected, rtol=1e-12)
    np.testing.assert_allclose(_run(loss), 0.8347412, rtol=1e-6)  # TensorFlow's value


def test_huber_hinge_log_and_cosine_losses():
    got = _run([
        losses.huber_loss(L, L * 0.3, delta=1.5),
        losses.hinge_loss(BINARY, LOGITS),
        losses.log_loss(BINARY, np.array([[0.9, 0.2, 0.5], [0.1, 0.0, 1.0]])),
        losses.cosine_distance(L / np.linalg.norm(L, axis=1, keepdims=True),
                               np.ones((2, 3)) / np.sqrt(3), axis=1),
    ])
    error = np.abs(L - L * 0.3)
    huber = np.where(error <= 1.5, 0.5 * error ** 2, 1.5 * (error - 0.75)).mean()
    hinge = np.maximum(0, 1 - (2 * BINARY - 1) * LOGITS).mean()
    p = np.array([[0.9, 0.2, 0.5], [0.1, 0.0, 1.0]])
    log = (-BINARY * np.log(p + 1e-7) - (1 - BINARY) * np.log(1 - p + 1e-7)).mean()
    np.testing.assert_allclose(got, [huber, hinge, log, got[3]], rtol=1e-12)
    # TensorFlow's values (float32).
    np.testing.assert_allclose(got, [2.6041667, 1.0, 0.18783516, 0.04362622], rtol=1e-6)
    with pytest.raises(ValueError, match="axis"):
        losses.cosine_distance(L, L)


# --- collections and totals ----------------------------------------------------------------------

def test_losses_are_collected():
    a = losses.mean_squared_error(L, L + 1)
    b = losses.absolute_difference(L, L, loss_collection=None)
    with tf.name_scope("head"):
        c = losses.sparse_softmax_cross_entropy([0, 1], LOGITS)
    assert tf.get_collection(tf.GraphKeys.LOSSES) == [a, c] == losses.get_losses()
    assert b not in losses.get_losses()
    assert losses.get_losses(scope="head") == [c]
    losses.add_loss(b)
    assert losses.get_losses()[-1] is b


def test_get_total_loss_adds_regularization_losses():
    kernel = tf.get_variable("w", initializer=np.array([1.0, 2.0]),
                             regularizer=lambda w: nn_impl.l2_loss(w) * 0.5)
    assert len(losses.get_regularization_losses()) == 1
    data = losses.mean_squared_error([0.0, 0.0], kernel)
    total = losses.get_total_loss()
    only_data = losses.get_total_loss(add_regularization_losses=False, name="data_loss")
    assert total.op.name == "total_loss" and only_data.op.name == "data_loss"
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got_total, got_data, got_reg, got_only = sess.run(
            [total, data, losses.get_regularization_loss(), only_data])
    np.testing.assert_allclose([got_data, got_reg], [2.5, 1.25])
    np.testing.assert_allclose([got_total, got_only], [3.75, 2.5])


def test_totals_without_losses():
    with pytest.raises(ValueError, match="No losses found"):
        losses.get_total_loss()
    zero = losses.get_regularization_loss()
    assert zero.dtype == tf.float32 and zero.op.name == "total_regularization_loss"
    assert _run(zero) == 0.0
