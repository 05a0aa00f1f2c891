"""tf.losses.mean_pairwise_squared_error and tf.metrics.average_precision_at_k (with its alias
sparse_average_precision_at_k) against numpy formulas and real TensorFlow's graph mode."""

import pickle

import numpy as np
import pytest

import flowstone as tf
from peers import requires_tensorflow, run_tensorflow

RNG = np.random.default_rng(4)
LABELS = RNG.normal(size=(3, 4)).astype(np.float32)
PREDICTIONS = RNG.normal(size=(3, 4)).astype(np.float32)
ROW_WEIGHTS = np.array([[1.0], [0.0], [2.0]], np.float32)

SCORES = RNG.uniform(size=(4, 6)).astype(np.float32)
CLASS_LABELS = np.array([[1, 3, -1], [0, 0, 5], [2, -1, -1], [4, 1, 2]], np.int64)


def _pairwise(labels, predictions, weights):
    """The mean over pairs (i, j), i != j, of ((p_i - p_j) - (l_i - l_j)) ** 2 per row, weighted
    and summed."""
    total = 0.0
    for row in range(labels.shape[0]):
        d = (predictions[row] - labels[row]).astype(np.float64)
        n = d.size
        pairs = [(d[i] - d[j]) ** 2 for i in range(n) for j in range(n) if i != j]
        total += weights[row] * np.mean(pairs)
    return total


def _average_precision(scores, labels, k):
    values = []
    for row_scores, row_labels in zip(scores, labels):
        relevant = {c for c in row_labels if c >= 0}
        count = sum(1 for c in row_labels if c >= 0)  # TensorFlow counts repeated labels here
        top = np.argsort(-row_scores, kind="stable")[:k]
        hits, precision_sum = 0, 0.0
        for rank, c in enumerate(top, 1):
            if c in relevant:
                hits += 1
                precision_sum += hits / rank
        values.append(precision_sum / min(count, k))
    return np.mean(values)


def test_mean_pairwise_squared_error_is_the_mean_over_pairs():
    loss = tf.losses.mean_pairwise_squared_error(LABELS, PREDICTIONS, weights=ROW_WEIGHTS)
    unweighted = tf.losses.mean_pairwise_squared_error(LABELS, PREDICTIONS)
    with tf.Session() as sess:
        got, got_unweighted = sess.run((loss, unweighted))
    np.testing.assert_allclose(got, _pairwise(LABELS, PREDICTIONS, ROW_WEIGHTS[:, 0]),
                               rtol=1e-5)
    np.testing.assert_allclose(got_unweighted, _pairwise(LABELS, PREDICTIONS, np.ones(3)),
                               rtol=1e-5)
    assert tf.get_collection(tf.GraphKeys.LOSSES) == [loss, unweighted]
    with pytest.raises(ValueError, match="`labels` must not be None"):
        tf.losses.mean_pairwise_squared_error(None, PREDICTIONS)


@pytest.mark.parametrize("k", [1, 3, 6])
def test_average_precision_at_k_streams_the_mean(k):
    labels = tf.placeholder(tf.int64, [None, 3])
    scores = tf.placeholder(tf.float32, [None, 6])
    value, update = tf.metrics.average_precision_at_k(labels, scores, k)
    assert tf.metrics.sparse_average_precision_at_k is tf.metrics.average_precision_at_k
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        first = sess.run(update, {labels: CLASS_LABELS[:2], scores: SCORES[:2]})
        sess.run(update, {labels: CLASS_LABELS[2:], scores: SCORES[2:]})
        total = sess.run(value)
    np.testing.assert_allclose(first, _average_precision(SCORES[:2], CLASS_LABELS[:2], k))
    np.testing.assert_allclose(total, _average_precision(SCORES, CLASS_LABELS, k))
    with pytest.raises(ValueError, match="`k` should be >= 1"):
        tf.metrics.average_precision_at_k(labels, scores, 0)


@requires_tensorflow
def test_match_tensorflow_graph_mode(tmp_path):
    weights = np.array([1.0, 0.5, 0.0, 2.0], np.float32)
    (tmp_path / "inputs.pkl").write_bytes(pickle.dumps(
        (LABELS, PREDICTIONS, ROW_WEIGHTS, SCORES, CLASS_LABELS, weights)))
    run_tensorflow("""
        import pickle
        import tensorflow as tf
        tf.compat.v1.disable_eager_execution()
        labels, predictions, row_weights, scores, class_labels, weights = pickle.load(
            open("inputs.pkl", "rb"))
        v1 = tf.compat.v1
        fetches = [v1.losses.mean_pairwise_squared_error(labels, predictions, row_weights),
                   v1.losses.mean_pairwise_squared_error(labels, predictions)]
        metrics = [v1.metrics.average_precision_at_k(class_labels, scores, k) for k in (2, 4)]
        weighted = v1.metrics.average_precision_at_k(class_labels, scores, 3, weights=weights)
        with v1.Session() as sess:
            sess.run(v1.local_variables_initializer())
            results = sess.run(fetches + [m[1] for m in metrics] + [weighted[1]])
            names = sorted(v.op.name for v in v1.local_variables())
        pickle.dump((results, names), open("results.pkl", "wb"))
    """, workdir=str(tmp_path))
    theirs, their_names = pickle.loads((tmp_path / "results.pkl").read_bytes())
    fetches = [tf.losses.mean_pairwise_squared_error(LABELS, PREDICTIONS, ROW_WEIGHTS),
               tf.losses.mean_pairwise_squared_error(LABELS, PREDICTIONS)]
    metrics = [tf.metrics.average_precision_at_k(CLASS_LABELS, SCORES, k) for k in (2, 4)]
    weighted = tf.metrics.average_precision_at_k(CLASS_LABELS, SCORES, 3, weights=weights)
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        mine = sess.run(fetches + [m[1] for m in metrics] + [weighted[1]])
    np.testing.assert_allclose(mine, theirs, rtol=1e-5)
    # TensorFlow's "max" becomes "max_1": its names are unique ignoring case, and its graph
    # has a "Max" op in that scope.
    assert sorted(v.op.name for v in tf.local_variables()) == [
        name.replace("max_1", "max") for name in their_names]
