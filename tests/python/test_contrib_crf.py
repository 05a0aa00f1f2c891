"""tf.contrib.crf against a brute-force reference: every tag sequence of a small problem is
enumerated, so scores, log Z, likelihoods and the best sequences are exact; gradients against
finite differences; a tagger trains."""

import itertools

import numpy as np
import pytest

import flowstone as tf

crf = tf.contrib.crf
RNG = np.random.default_rng(5)
BATCH, TIME, TAGS = 3, 4, 3
INPUTS = RNG.normal(size=(BATCH, TIME, TAGS))
TRANSITIONS = RNG.normal(size=(TAGS, TAGS))
LENGTHS = np.array([4, 2, 1], np.int32)
TAG_INDICES = np.array([[0, 2, 1, 1], [2, 0, 0, 0], [1, 0, 0, 0]], np.int32)


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def _score(x, tags, transitions):
    return sum(x[t, tags[t]] for t in range(len(tags))) + sum(
        transitions[tags[t - 1], tags[t]] for t in range(1, len(tags)))


def _all_scores(x, length, transitions):
    return {tags: _score(x, tags, transitions)
            for tags in itertools.product(range(TAGS), repeat=length)}


def _reference():
    scores, log_norms, best, best_scores = [], [], [], []
    for b in range(BATCH):
        n = LENGTHS[b]
        table = _all_scores(INPUTS[b], n, TRANSITIONS)
        scores.append(_score(INPUTS[b], tuple(TAG_INDICES[b, :n]), TRANSITIONS))
        values = np.array(list(table.values()))
        log_norms.append(np.log(np.exp(values - values.max()).sum()) + values.max())
        winner = max(table, key=table.get)
        best.append(list(winner) + [0] * (TIME - n))
        best_scores.append(table[winner])
    return (np.array(scores), np.array(log_norms), np.array(best), np.array(best_scores))


def test_scores_log_norm_and_likelihood_are_exact():
    scores, log_norms, _, _ = _reference()
    x = tf.constant(INPUTS)
    seq_score = crf.crf_sequence_score(x, TAG_INDICES, LENGTHS, TRANSITIONS)
    log_norm = crf.crf_log_norm(x, LENGTHS, TRANSITIONS)
    likelihood, transitions = crf.crf_log_likelihood(x, TAG_INDICES, LENGTHS,
                                                     tf.constant(TRANSITIONS))
    with tf.Session() as sess:
        s, z, ll = sess.run([seq_score, log_norm, likelihood])
    np.testing.assert_allclose(s, scores, rtol=1e-10)
    np.testing.assert_allclose(z, log_norms, rtol=1e-10)
    np.testing.assert_allclose(ll, scores - log_norms, rtol=1e-10)


def test_viterbi_decode_and_crf_decode_find_the_best_sequences():
    _, _, best, best_scores = _reference()
    for b in range(BATCH):
        n = LENGTHS[b]
        tags, score = crf.viterbi_decode(INPUTS[b, :n], TRANSITIONS)
        assert tags == list(best[b, :n]) and np.isclose(score, best_scores[b])
    decode, score = crf.crf_decode(tf.constant(INPUTS), tf.constant(TRANSITIONS), LENGTHS)
    with tf.Session() as sess:
        d, s = sess.run([decode, score])
    for b in range(BATCH):
        np.testing.assert_array_equal(d[b, :LENGTHS[b]], best[b, :LENGTHS[b]])
    np.testing.assert_allclose(s, best_scores, rtol=1e-10)


def test_likelihood_gradients_match_finite_differences():
    x = tf.compat.v1.placeholder(tf.float64, [BATCH, TIME, TAGS])
    transitions = tf.compat.v1.placeholder(tf.float64, [TAGS, TAGS])
    likelihood, _ = crf.crf_log_likelihood(x, TAG_INDICES, LENGTHS, transitions)
    total = tf.reduce_sum(likelihood)
    grads = tf.gradients(total, [x, transitions])
    feed = {x: INPUTS, transitions: TRANSITIONS}
    with tf.Session() as sess:
        dx, dt = sess.run(grads, feed)
        eps = 1e-6
        for index in [(0, 1, 2), (1, 0, 1), (1, 3, 0), (2, 0, 0)]:
            bumped = INPUTS.copy()
            bumped[index] += eps
            up = sess.run(total, {x: bumped, transitions: TRANSITIONS})
            bumped[index] -= 2 * eps
            down = sess.run(total, {x: bumped, transitions: TRANSITIONS})
            np.testing.assert_allclose(dx[index], (up - down) / (2 * eps), atol=1e-6)
        for index in [(0, 0), (1, 2), (2, 1)]:
            bumped = TRANSITIONS.copy()
            bumped[index] += eps
            up = sess.run(total, {x: INPUTS, transitions: bumped})
            bumped[index] -= 2 * eps
            down = sess.run(total, {x: INPUTS, transitions: bumped})
            np.testing.assert_allclose(dt[index], (up - down) / (2 * eps), atol=1e-6)
    # Padding past a sequence's length has no gradient.
    assert np.all(dx[1, 2:] == 0) and np.all(dx[2, 1:] == 0)


def test_a_tagger_learns_a_transition_rule():
    """Tags alternate 0, 1, 0, 1 whatever the inputs say: only the transitions can learn it."""
    x = tf.constant(RNG.normal(size=(8, 6, 2)) * 0.1, tf.float32)
    tags = np.tile([[0, 1, 0, 1, 0, 1]], (8, 1)).astype(np.int32)
    lengths = np.full([8], 6, np.int32)
    likelihood, transitions = crf.crf_log_likelihood(x, tags, lengths)
    assert transitions.name == "transitions:0"
    train = tf.train.AdamOptimizer(0.1).minimize(-tf.reduce_mean(likelihood))
    decode, _ = crf.crf_decode(x, transitions, lengths)
    with tf.Session() as sess:
        sess.run(tf.compat.v1.global_variables_initializer())
        for _ in range(100):
            sess.run(train)
        predicted = sess.run(decode)
    assert (predicted[:, 1:] != predicted[:, :-1]).all()
