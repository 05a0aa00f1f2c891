"""tf.metrics: streaming values against numpy references computed here over all batches seen,
the state's variables and collections, resets, errors, and the same program run by TensorFlow."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import flowstone as tf
from peers import HAVE_PEER, PEER_PYTHON, SKIP_REASON

RNG = np.random.RandomState(7)
BATCHES = [
    dict(labels=RNG.randint(0, 3, 12), preds=RNG.randint(0, 3, 12), scores=RNG.rand(12),
         weights=RNG.rand(12) * 2, probs=RNG.rand(12, 4))
    for _ in range(3)
]


def stream(build, feeds_for):
    """Builds a metric on placeholders, runs its update op on every batch and returns the
    update results and the final value."""
    with tf.Graph().as_default():
        holders = {
            "labels": tf.placeholder(tf.int64, [None]),
            "preds": tf.placeholder(tf.int64, [None]),
            "scores": tf.placeholder(tf.float32, [None]),
            "weights": tf.placeholder(tf.float32, [None]),
            "probs": tf.placeholder(tf.float32, [None, 4]),
        }
        value, update = build(holders)
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            updates = [sess.run(update, {holders[k]: v for k, v in feeds_for(b).items()})
                       for b in BATCHES]
            return updates, sess.run(value)


def all_batches(key):
    return np.concatenate([b[key] for b in BATCHES])


def everything(batch):
    return batch


def test_mean_accuracy_and_errors_stream_over_batches():
    labels, preds, w = all_batches("labels"), all_batches("preds"), all_batches("weights")
    scores = all_batches("scores")
    updates, value = stream(lambda h: tf.metrics.accuracy(h["labels"], h["preds"],
                                                          weights=h["weights"]), everything)
    expected = np.sum((labels == preds) * w) / np.sum(w)
    np.testing.assert_allclose(value, expected, rtol=1e-6)
    np.testing.assert_allclose(updates[-1], expected, rtol=1e-6)
    first = BATCHES[0]
    np.testing.assert_allclose(
        updates[0], np.sum((first["labels"] == first["preds"]) * first["weights"]) /
        np.sum(first["weights"]), rtol=1e-6)

    _, value = stream(lambda h: tf.metrics.mean(h["scores"]), everything)
    np.testing.assert_allclose(value, scores.mean(), rtol=1e-6)

    float_pair = lambda h: (tf.cast(h["labels"], tf.float32), tf.cast(h["preds"], tf.float32))
    _, mae = stream(lambda h: tf.metrics.mean_absolute_error(*float_pair(h)), everything)
    _, rmse = stream(lambda h: tf.metrics.root_mean_squared_error(
        *float_pair(h), weights=h["weights"]), everything)
    np.testing.assert_allclose(mae, np.abs(labels - preds).mean(), rtol=1e-6)
    np.testing.assert_allclose(rmse, np.sqrt(np.sum((labels - preds) ** 2 * w) / np.sum(w)),
                               rtol=1e-6)
    _, below = stream(lambda h: tf.metrics.percentage_below(h["scores"], 0.25), everything)
    np.testing.assert_allclose(below, np.mean(scores < 0.25), rtol=1e-6)


def test_binary_counts_precision_and_recall():
    truth, guess, w = all_batches("labels") == 1, all_batches("preds") == 1, all_batches("weights")
    binary = lambda h: (tf.equal(h["labels"], 1), tf.equal(h["preds"], 1))
    tp = np.sum((truth & guess) * w)
    fp = np.sum((~truth & guess) * w)
    fn = np.sum((truth & ~guess) * w)
    tn = np.sum((~truth & ~guess) * w)
    for metric, expected in [(tf.metrics.true_positives, tp), (tf.metrics.false_positives, fp),
                             (tf.metrics.false_negatives, fn), (tf.metrics.true_negatives, tn)]:
        _, value = stream(lambda h: metric(*binary(h), weights=h["weights"]), everything)
        np.testing.assert_allclose(value, expected, rtol=1e-5)
    _, p = stream(lambda h: tf.metrics.precision(*binary(h), weights=h["weights"]), everything)
    _, r = stream(lambda h: tf.metrics.recall(*binary(h), weights=h["weights"]), everything)
    np.testing.assert_allclose(p, tp / (tp + fp), rtol=1e-5)
    np.testing.assert_allclose(r, tp / (tp + fn), rtol=1e-5)


def roc_auc_reference(truth, scores, weights, num_thresholds):
    eps = 1e-7
    thresholds = ([0.0 - eps] + [(i + 1) / (num_thresholds - 1)
                                 for i in range(num_thresholds - 2)] + [1.0 + eps])
    above = scores[None, :] > np.array(thresholds, np.float32)[:, None]
    tp = np.sum((above & truth) * weights, axis=1)
    fn = np.sum((~above & truth) * weights, axis=1)
    fp = np.sum((above & ~truth) * weights, axis=1)
    tn = np.sum((~above & ~truth) * weights, axis=1)
    epsilon = 1e-6
    tpr = (tp + epsilon) / (tp + fn + epsilon)
    fpr = fp / (fp + tn + epsilon)
    return np.sum((fpr[:-1] - fpr[1:]) * (tpr[:-1] + tpr[1:]) / 2)


def test_auc_matches_the_threshold_reference_and_rejects_bad_arguments():
    truth, scores = all_batches("labels") == 1, all_batches("scores").astype(np.float32)
    w = all_batches("weights").astype(np.float32)
    _, value = stream(lambda h: tf.metrics.auc(tf.equal(h["labels"], 1), h["scores"],
                                               weights=h["weights"], num_thresholds=50),
                      everything)
    np.testing.assert_allclose(value, roc_auc_reference(truth, scores, w, 50), rtol=1e-4)
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="ROC or PR"):
            tf.metrics.auc([True], [0.5], curve="XY")
        with pytest.raises(ValueError, match="`specificity` must be in the range"):
            tf.metrics.sensitivity_at_specificity([True], [0.5], 1.5)


def test_auc_rejects_predictions_outside_the_unit_interval_at_run_time():
    with tf.Graph().as_default():
        scores = tf.placeholder(tf.float32, [None])
        value, update = tf.metrics.auc(tf.constant([True, False]), scores)
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match=r"predictions must be in \[0, 1\]"):
                sess.run(update, {scores: [0.2, 1.5]})
            # The session survives and the state was not touched by the failed update.
            assert sess.run(value) == 0.0
            assert sess.run(update, {scores: [0.9, 0.1]}) > 0.99


def test_confusion_matrix_mean_iou_and_per_class_accuracy():
    labels, preds, w = all_batches("labels"), all_batches("preds"), all_batches("weights")
    cm = np.zeros((3, 3))
    np.add.at(cm, (labels, preds), w)
    with tf.Graph().as_default(), tf.Session() as sess:
        got = sess.run(tf.confusion_matrix(labels, preds, num_classes=3, weights=w,
                                           dtype=tf.float64))
        np.testing.assert_allclose(got, cm, rtol=1e-6)
        counts = sess.run(tf.math.confusion_matrix(labels, preds))
        assert counts.dtype == np.int32 and counts.sum() == len(labels)
        with pytest.raises(tf.errors.InvalidArgumentError, match="`labels` out of bound"):
            sess.run(tf.confusion_matrix([0, 5], [0, 1], num_classes=3))
    _, miou = stream(lambda h: tf.metrics.mean_iou(h["labels"], h["preds"], 3,
                                                   weights=h["weights"]), everything)
    iou = np.diag(cm) / (cm.sum(0) + cm.sum(1) - np.diag(cm))
    np.testing.assert_allclose(miou, iou.mean(), rtol=1e-5)
    _, mpca = stream(lambda h: tf.metrics.mean_per_class_accuracy(h["labels"], h["preds"], 3),
                     everything)
    per_class = [np.mean(preds[labels == c] == c) for c in range(3)]
    np.testing.assert_allclose(mpca, np.mean(per_class), rtol=1e-5)


def test_precision_and_recall_at_k():
    labels, probs, w = all_batches("labels"), all_batches("probs"), all_batches("weights")
    top2 = np.argsort(-probs, axis=1)[:, :2]
    hit = np.array([labels[i] in top2[i] for i in range(len(labels))], np.float64)
    _, p = stream(lambda h: tf.metrics.precision_at_k(h["labels"], h["probs"], 2), everything)
    _, r = stream(lambda h: tf.metrics.recall_at_k(h["labels"], h["probs"], 2,
                                                   weights=h["weights"]), everything)
    np.testing.assert_allclose(p, hit.sum() / (2 * len(labels)), rtol=1e-6)
    np.testing.assert_allclose(r, np.sum(hit * w) / np.sum(w), rtol=1e-5)
    # Restricted to class 1: of the rows whose top-1 is class 1, how many have label 1.
    top1 = np.argmax(probs, axis=1)
    _, p1 = stream(lambda h: tf.metrics.precision_at_k(h["labels"], h["probs"], 1, class_id=1),
                   everything)
    np.testing.assert_allclose(p1, np.mean(labels[top1 == 1] == 1), rtol=1e-6)


def test_state_lives_in_local_metric_variables_and_resets():
    with tf.Graph().as_default():
        value, update = tf.metrics.accuracy(tf.constant([1, 0, 1]), tf.constant([1, 1, 1]),
                                            metrics_collections=["my_metrics"],
                                            updates_collections=[tf.GraphKeys.UPDATE_OPS])
        names = sorted(v.name for v in tf.local_variables())
        assert names == ["accuracy/count:0", "accuracy/total:0"]
        assert sorted(v.name for v in tf.get_collection(tf.GraphKeys.METRIC_VARIABLES)) == names
        assert tf.trainable_variables() == [] and tf.global_variables() == []
        assert tf.get_collection("my_metrics") == [value]
        assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == [update]
        assert (value.name, update.name) == ("accuracy/value:0", "accuracy/update_op:0")
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            for _ in range(3):
                sess.run(update)
            np.testing.assert_allclose(sess.run(value), 2 / 3, rtol=1e-6)
            sess.run(tf.local_variables_initializer())
            assert sess.run(value) == 0.0


_ORACLE_PROGRAM = textwrap.dedent("""
    import json, sys
    import numpy as np
    if sys.argv[1] == "tensorflow":
        import tensorflow.compat.v1 as tf
        tf.disable_eager_execution()
    else:
        import flowstone as tf
    rng = np.random.RandomState(3)
    labels = tf.constant(rng.randint(0, 3, 40))
    preds = tf.constant(rng.randint(0, 3, 40))
    scores = tf.constant(rng.rand(40).astype(np.float32))
    w = tf.constant((rng.rand(40) * 2).astype(np.float32))
    probs = tf.constant(rng.rand(40, 3).astype(np.float32))
    positive, guessed = tf.equal(labels, 1), tf.equal(preds, 1)
    metrics = {
        "auc_pr_careful": tf.metrics.auc(positive, scores, curve="PR",
                                         summation_method="careful_interpolation"),
        "auc_roc_minoring": tf.metrics.auc(positive, scores, weights=w, num_thresholds=20,
                                           summation_method="minoring"),
        "auc_thresholds": tf.metrics.auc(positive, scores, thresholds=[0.3, 0.6, 0.1]),
        "sens_at_spec": tf.metrics.sensitivity_at_specificity(positive, scores, 0.6),
        "spec_at_sens": tf.metrics.specificity_at_sensitivity(positive, scores, 0.6, weights=w),
        "prec_at_thr": tf.metrics.precision_at_thresholds(positive, scores, [0.2, 0.5, 0.8]),
        "rec_at_thr": tf.metrics.recall_at_thresholds(positive, scores, [0.2, 0.5, 0.8]),
        "fp_at_thr": tf.metrics.false_positives_at_thresholds(positive, scores, [0.5]),
        "mean_iou": tf.metrics.mean_iou(labels, preds, 3, weights=w),
        "mean_per_class": tf.metrics.mean_per_class_accuracy(labels, preds, 3),
        "p_at_2": tf.metrics.precision_at_k(labels, probs, 2),
        "r_at_1_class_2": tf.metrics.recall_at_k(labels, probs, 1, class_id=2),
        "mean_tensor": tf.metrics.mean_tensor(probs),
        "rel_error": tf.metrics.mean_relative_error(tf.cast(labels, tf.float32),
                                                    tf.cast(preds, tf.float32),
                                                    tf.cast(labels, tf.float32) + 1.0),
        "cosine": tf.metrics.mean_cosine_distance(tf.nn.l2_normalize(probs, 1),
                                                  tf.nn.l2_normalize(probs[::-1], 1), 1),
        "precision": tf.metrics.precision(positive, guessed, weights=w),
    }
    out = {}
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        for key, (value, update) in sorted(metrics.items()):
            sess.run(update)
            sess.run(update)
            out[key] = np.asarray(sess.run(value), np.float64).tolist()
    out["variables"] = sorted(v.name for v in tf.local_variables())
    print(json.dumps(out))
""")


@pytest.mark.skipif(not HAVE_PEER, reason=SKIP_REASON)
def test_values_and_variable_names_match_tensorflow(tmp_path):
    script = tmp_path / "metrics_program.py"
    script.write_text(_ORACLE_PROGRAM)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")

    def run(python, which):
        done = subprocess.run([python, str(script), which], capture_output=True, text=True,
                              env=env, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.splitlines()[-1])

    ours = run(sys.executable, "flowstone")
    theirs = run(PEER_PYTHON, "tensorflow")
    assert ours.pop("variables") == theirs.pop("variables")
    assert sorted(ours) == sorted(theirs)
    for key in theirs:
        np.testing.assert_allclose(ours[key], theirs[key], rtol=2e-5, atol=1e-6, err_msg=key)
