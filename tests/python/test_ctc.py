"""tf.nn.ctc_loss and tf.nn.ctc_greedy_decoder against numpy references (a brute-force sum over
all frame-level paths, ctc_reference.py), gradients against float64 finite differences, and the
input errors. (Losses, gradients and decodings were also compared with TensorFlow's.)"""

import numpy as np
import pytest

import flowstone as tf
from ctc_reference import ctc_loss_brute_force, greedy_decode
from gradient_check import check_gradients

RNG = np.random.default_rng(5)
TIME, BATCH, CLASSES = 5, 3, 4
LOGITS = RNG.normal(size=(TIME, BATCH, CLASSES))
LABELS = [[1, 2, 2], [0], [2, 0]]
LENGTHS = np.array([5, 3, 4], np.int32)


def _sparse(labels):
    indices = [[b, i] for b, row in enumerate(labels) for i in range(len(row))]
    values = [v for row in labels for v in row]
    width = max(len(row) for row in labels)
    return tf.SparseTensor(np.array(indices, np.int64), np.array(values, np.int32),
                           np.array([len(labels), width], np.int64))


@pytest.mark.parametrize("merge_repeated", [True, False])
def test_ctc_loss_matches_the_sum_over_paths(merge_repeated):
    loss = tf.nn.ctc_loss(_sparse(LABELS), tf.constant(LOGITS), LENGTHS,
                          ctc_merge_repeated=merge_repeated)
    assert loss.op.type == "CTCLoss" and loss.shape.as_list() == [BATCH]
    with tf.Session() as sess:
        got = sess.run(loss)
    want = [ctc_loss_brute_force(LOGITS[:LENGTHS[b], b], LABELS[b], merge_repeated)
            for b in range(BATCH)]
    np.testing.assert_allclose(got, want, rtol=1e-10)


def test_ctc_loss_batch_major_and_collapsed_labels():
    batch_major = np.transpose(LOGITS, [1, 0, 2])
    loss = tf.nn.ctc_loss(_sparse(LABELS), batch_major, LENGTHS, time_major=False,
                          preprocess_collapse_repeated=True)
    with tf.Session() as sess:
        got = sess.run(loss)
    want = [ctc_loss_brute_force(LOGITS[:LENGTHS[b], b], sorted(set(LABELS[b]),
                                                                 key=LABELS[b].index))
            for b in range(BATCH)]
    np.testing.assert_allclose(got, want, rtol=1e-10)


def test_ctc_loss_gradient_matches_finite_differences():
    check_gradients(lambda x: tf.nn.ctc_loss(_sparse(LABELS), x, LENGTHS), [LOGITS], wrt=[0],
                    rtol=1e-6, atol=1e-8)


def test_ctc_loss_not_enough_time():
    # [1, 1] needs 3 frames when repeats merge (a blank between them); entry 0 has 2.
    labels = _sparse([[1, 1], [0]])
    lengths = np.array([2, 2], np.int32)
    x = tf.constant(LOGITS[:2, :2])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"Not enough time for target transition sequence \(required: 3, "
                                 r"available: 2\) in batch entry 0"):
            sess.run(tf.nn.ctc_loss(labels, x, lengths))
        ignored = sess.run(tf.nn.ctc_loss(labels, x, lengths,
                                          ignore_longer_outputs_than_inputs=True))
        assert ignored[0] == 0.0 and ignored[1] > 0.0


def test_ctc_loss_bad_inputs():
    x = tf.constant(LOGITS)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"labels_values\[0\] = 3 is not a valid label"):
            sess.run(tf.nn.ctc_loss(_sparse([[3], [0], [0]]), x, LENGTHS))
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"sequence_length\(1\) = 9 is outside \[0, max_time = 5\]"):
            sess.run(tf.nn.ctc_loss(_sparse(LABELS), x, np.array([5, 9, 1], np.int32)))
        bad_batch = tf.SparseTensor(np.array([[7, 0]], np.int64), np.array([1], np.int32),
                                    np.array([3, 1], np.int64))
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"is out of range"):
            sess.run(tf.nn.ctc_loss(bad_batch, x, LENGTHS))
    with pytest.raises(TypeError, match="Expected labels .* to be a SparseTensor"):
        tf.nn.ctc_loss([[1]], x, LENGTHS)


@pytest.mark.parametrize("merge_repeated,blank_index", [(True, None), (False, 0)])
def test_ctc_greedy_decoder(merge_repeated, blank_index):
    logits = LOGITS.copy()
    logits[1, 0] = logits[0, 0]  # a repeated best class in entry 0
    (decoded,), log_prob = tf.nn.ctc_greedy_decoder(logits, LENGTHS, merge_repeated,
                                                    blank_index)
    with tf.Session() as sess:
        value, log_prob = sess.run([decoded, log_prob])
    assert isinstance(value, tf.SparseTensorValue)
    blank = CLASSES - 1 if blank_index is None else blank_index
    expected = [greedy_decode(logits[:, b], LENGTHS[b], merge_repeated, blank)
                for b in range(BATCH)]
    dense = np.zeros(value.dense_shape, np.int64)
    dense[tuple(value.indices.T)] = value.values
    assert value.dense_shape.tolist() == [BATCH, max(len(e[0]) for e in expected)]
    for b, (labels, score) in enumerate(expected):
        assert dense[b, :len(labels)].tolist() == labels
        assert value.indices[value.indices[:, 0] == b].shape[0] == len(labels)
        np.testing.assert_allclose(log_prob[b, 0], score, rtol=1e-12)


def test_edit_distance_of_decoded_labels():
    """The label error rate a CTC program computes: edit distance between the greedy decoding
    and the truth, normalized by the truth's length."""
    truth = tf.SparseTensor([[0, 0], [0, 1], [1, 0]], tf.constant([1, 2, 0], tf.int64), [2, 2])
    hypothesis = tf.SparseTensor([[0, 0], [1, 0], [1, 1]], tf.constant([1, 0, 2], tf.int64),
                                 [2, 2])
    with tf.Session() as sess:
        rate, raw = sess.run([tf.edit_distance(hypothesis, truth),
                              tf.edit_distance(hypothesis, truth, normalize=False)])
    np.testing.assert_allclose(rate, [0.5, 1.0])   # [1] vs [1, 2]; [0, 2] vs [0]
    np.testing.assert_allclose(raw, [1.0, 1.0])
    with pytest.raises(TypeError, match="Hypothesis must be a SparseTensor"):
        tf.edit_distance([[1]], truth)
    bad = tf.SparseTensor([[0, 5]], tf.constant([1], tf.int64), [1, 2])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"hypothesis index 0 has 5 in dimension 1, outside \[0, 2\)"):
            sess.run(tf.edit_distance(bad, truth))
