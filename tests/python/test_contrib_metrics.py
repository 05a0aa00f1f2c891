"""tf.contrib.metrics: the streaming metrics (contrib's argument order over tf.metrics), the
aggregation helpers, Pearson correlation and F1 against numpy."""

import numpy as np
import pytest

import flowstone as tf

metrics = tf.contrib.metrics
RNG = np.random.default_rng(11)


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def _stream(pairs, batches):
    """Runs every update over the batches, then returns the values."""
    values, updates = metrics.aggregate_metric_map(pairs)
    with tf.Session() as sess:
        sess.run(tf.compat.v1.local_variables_initializer())
        for feed in batches:
            sess.run(updates, feed)
        return sess.run(values)


def test_streaming_metrics_take_predictions_first():
    predictions = tf.compat.v1.placeholder(tf.float32, [None])
    labels = tf.compat.v1.placeholder(tf.float32, [None])
    p = [RNG.random(8).astype(np.float32) for _ in range(3)]
    y = [(RNG.random(8) > 0.5).astype(np.float32) for _ in range(3)]
    out = _stream({
        "accuracy": metrics.streaming_accuracy(tf.round(predictions), labels),
        "mse": metrics.streaming_mean_squared_error(predictions, labels),
        "precision": metrics.streaming_precision(tf.round(predictions), labels),
        "recall_at_thresholds": metrics.streaming_recall_at_thresholds(predictions, labels,
                                                                       [0.5]),
        "mean": metrics.streaming_mean(predictions),
    }, [{predictions: a, labels: b} for a, b in zip(p, y)])
    pa, ya = np.concatenate(p), np.concatenate(y)
    np.testing.assert_allclose(out["accuracy"], np.mean(np.round(pa) == ya), rtol=1e-6)
    np.testing.assert_allclose(out["mse"], np.mean((pa - ya) ** 2), rtol=1e-5)
    tp = np.sum((np.round(pa) == 1) & (ya == 1))
    np.testing.assert_allclose(out["precision"], tp / np.sum(np.round(pa) == 1), rtol=1e-6)
    np.testing.assert_allclose(out["recall_at_thresholds"],
                               [np.sum((pa > 0.5) & (ya == 1)) / np.sum(ya == 1)], rtol=1e-6)
    np.testing.assert_allclose(out["mean"], pa.mean(), rtol=1e-6)


def test_pearson_correlation_and_f1():
    predictions = tf.compat.v1.placeholder(tf.float32, [None])
    labels = tf.compat.v1.placeholder(tf.float32, [None])
    x = [RNG.normal(size=20).astype(np.float32) for _ in range(2)]
    y = [a * 0.7 + RNG.normal(size=20).astype(np.float32) * 0.5 for a in x]
    out = _stream({"r": metrics.streaming_pearson_correlation(predictions, labels)},
                  [{predictions: a, labels: b} for a, b in zip(x, y)])
    np.testing.assert_allclose(out["r"], np.corrcoef(np.concatenate(x), np.concatenate(y))[0, 1],
                               rtol=1e-4)
    tf.reset_default_graph()
    probs = tf.constant([0.9, 0.8, 0.3, 0.2, 0.6])
    truth = tf.constant([1.0, 1.0, 0.0, 1.0, 0.0])
    out = _stream({"f1": metrics.f1_score(truth, probs, num_thresholds=11)}, [{}])
    # Thresholds 0.1 .. 0.9: the best is 0.7 (0.9 and 0.8 predicted positive): P=1, R=2/3.
    np.testing.assert_allclose(out["f1"], 2 * (2 / 3) / (1 + 2 / 3), rtol=1e-5)
    assert metrics.aggregate_metrics((1, 2), (3, 4)) == ([1, 3], [2, 4])
