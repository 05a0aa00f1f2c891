"""Candidate samplers (seeding, ranges, uniqueness, distributions, expected counts),
compute_accidental_hits, and tf.nn.nce_loss / sampled_softmax_loss against a numpy reference of
TensorFlow's _compute_sampled_logits, with gradients against finite differences."""

import numpy as np
import pytest

import flowstone as tf

RNG = np.random.default_rng(2718)
FLT_MAX = np.finfo(np.float32).max


def log_uniform_p(k, range_max):
    return np.log((k + 2.0) / (k + 1.0)) / np.log(range_max + 1.0)


# ------------------------------------------------------------------------------------------------
# Samplers

@pytest.mark.parametrize("sampler", ["log_uniform_candidate_sampler",
                                     "uniform_candidate_sampler"])
def test_samplers_are_seeded_like_tensorflow_random_ops(sampler):
    def draws(graph_seed, op_seed, runs=2):
        graph = tf.Graph()
        with graph.as_default():
            if graph_seed is not None:
                tf.set_random_seed(graph_seed)
            sampled, _, _ = getattr(tf.nn, sampler)([[1, 2]], 2, 20, False, 1000, seed=op_seed)
        with tf.Session(graph=graph) as sess:
            return [sess.run(sampled) for _ in range(runs)]

    first, second = draws(None, 5)
    again = draws(None, 5)
    np.testing.assert_array_equal(first, again[0])  # a fresh session replays the sequence
    assert not np.array_equal(first, second)  # each run draws new candidates
    assert not np.array_equal(draws(None, 6)[0], first)
    np.testing.assert_array_equal(draws(3, None)[0], draws(3, None)[0])
    assert draws(None, None)[0].shape == (20,)


def test_log_uniform_sampler_values_and_expected_counts():
    true_classes = np.array([[0, 3], [999, 7]], np.int64)
    sampled, true_expected, sampled_expected = tf.nn.log_uniform_candidate_sampler(
        true_classes, 2, 50, False, 1000, seed=1)
    assert sampled.shape.as_list() == [50] and true_expected.shape.as_list() == [2, 2]
    with tf.Session() as sess:
        s, te, se = sess.run([sampled, true_expected, sampled_expected])
    assert s.dtype == np.int64 and te.dtype == np.float32
    assert ((s >= 0) & (s < 1000)).all()
    # Independent draws: expected count = P(k) * num_sampled.
    np.testing.assert_allclose(te, log_uniform_p(true_classes, 1000) * 50, rtol=1e-6)
    np.testing.assert_allclose(se, log_uniform_p(s, 1000) * 50, rtol=1e-6)


def test_unique_sampling_has_no_repeats_and_counts_its_tries():
    sampled, true_expected, sampled_expected = tf.nn.log_uniform_candidate_sampler(
        [[0, 1]], 2, 30, True, 40, seed=9)
    with tf.Session() as sess:
        s, te, se = sess.run([sampled, true_expected, sampled_expected])
    assert len(set(s.tolist())) == 30
    # expected count = 1 - (1 - p)^tries for one number of tries shared by every class.
    # The number of tries, read back from the least likely class (where float32 keeps the most
    # digits), must reproduce every count.
    p = log_uniform_p(s, 40)
    rarest = np.argmin(p)
    tries = np.round(np.log1p(-float(se[rarest])) / np.log1p(-p[rarest]))
    assert tries >= 30
    np.testing.assert_allclose(se, -np.expm1(tries * np.log1p(-p)), rtol=1e-5)
    np.testing.assert_allclose(te, -np.expm1(tries * np.log1p(-log_uniform_p(
        np.array([[0, 1]]), 40))), rtol=1e-5)


@pytest.mark.parametrize("sampler,probability", [
    ("log_uniform_candidate_sampler", lambda k: log_uniform_p(k, 10)),
    ("uniform_candidate_sampler", lambda k: np.full(k.shape, 0.1)),
])
def test_sampler_frequencies_follow_the_distribution(sampler, probability):
    sampled, _, _ = getattr(tf.nn, sampler)([[0]], 1, 40000, False, 10, seed=4)
    with tf.Session() as sess:
        s = sess.run(sampled)
    frequency = np.bincount(s, minlength=10) / s.size
    # 40000 draws: each frequency is within about 4 standard errors (< 0.01) of P(k).
    np.testing.assert_allclose(frequency, probability(np.arange(10)), atol=0.01)


def test_fixed_unigram_sampler_follows_the_counts(tmp_path):
    counts = np.array([5.0, 0.0, 20.0, 1.0, 10.0, 4.0])
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("".join(f"word{i},x,{c:g}\n" for i, c in enumerate(counts)))
    from_list = tf.nn.fixed_unigram_candidate_sampler(
        [[2]], 1, 30000, False, 8, distortion=0.75, num_reserved_ids=2, unigrams=counts, seed=3)
    from_file = tf.nn.fixed_unigram_candidate_sampler(
        [[2]], 1, 30000, False, 8, vocab_file=str(vocab), distortion=0.75, num_reserved_ids=2,
        seed=3)
    shard = tf.nn.fixed_unigram_candidate_sampler([[0]], 1, 2, True, 4, num_shards=2, shard=1,
                                                  unigrams=counts, num_reserved_ids=2, seed=3)
    with tf.Session() as sess:
        (s, te, se), (s2, _, _), (s3, _, _) = sess.run([from_list, from_file, shard])
    p = np.concatenate([[0, 0], counts ** 0.75])
    p /= p.sum()
    np.testing.assert_array_equal(s, s2)  # the same counts and seeds give the same samples
    np.testing.assert_allclose(np.bincount(s, minlength=8) / s.size, p, atol=0.01)
    np.testing.assert_allclose(te, [[p[2] * 30000]], rtol=1e-5)
    np.testing.assert_allclose(se, p[s] * 30000, rtol=1e-5)
    # Shard 1 of 2 keeps ids 1, 3, 5, 7: weights 0 (reserved), 0, 1, 4 (ids within the shard).
    assert sorted(s3.tolist()) == [2, 3]


def test_fixed_unigram_sampler_errors(tmp_path):
    def fails(message, **kwargs):
        args = dict(true_classes=[[0]], num_true=1, num_sampled=2, unique=True, range_max=3,
                    unigrams=[1.0, 2.0, 3.0])
        args.update(kwargs)
        with pytest.raises((tf.errors.InvalidArgumentError, tf.errors.NotFoundError),
                           match=message):
            with tf.Session() as sess:
                sess.run(tf.nn.fixed_unigram_candidate_sampler(**args)[0])
    fails("range_max \\(4\\) must equal the number of ids", range_max=4)
    fails("Sampler's range is too small", num_sampled=3, unigrams=[1.0, 0.0, 3.0])
    fails("must be non-negative", unigrams=[1.0, -2.0, 3.0])
    fails("cannot open vocab_file", vocab_file=str(tmp_path / "missing.txt"))
    bad = tmp_path / "bad.txt"
    bad.write_text("a,1\nb,lots\nc,2\n")
    fails("Wrong vocabulary format at line 2", vocab_file=str(bad))


def test_learned_unigram_sampler_learns_the_true_classes():
    classes = tf.placeholder(tf.int64, [None, 1])
    sampled, true_expected, _ = tf.nn.learned_unigram_candidate_sampler(
        classes, 1, 5000, False, 4, seed=8)
    with tf.Session() as sess:
        first, te = sess.run([sampled, true_expected], {classes: [[3]] * 50})
        # Before any update every class weighs 1.
        np.testing.assert_allclose(te, np.full((50, 1), 0.25 * 5000), rtol=1e-6)
        second, te = sess.run([sampled, true_expected], {classes: [[3]]})
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"`true_candidate` out of range \[0, 4\), received 4"):
            sess.run(sampled, {classes: [[4]]})
    np.testing.assert_allclose(np.bincount(first, minlength=4) / 5000, [0.25] * 4, atol=0.03)
    # After 50 true 3s, class 3 weighs 51 of 54.
    np.testing.assert_allclose(te, [[51 / 54 * 5000]], rtol=1e-6)
    np.testing.assert_allclose(np.bincount(second, minlength=4) / 5000,
                               np.array([1, 1, 1, 51]) / 54, atol=0.03)


def test_sampler_errors():
    with pytest.raises(tf.errors.InvalidArgumentError, match="range_max = 5 .* num_sampled = 6"):
        with tf.Session() as sess:
            sess.run(tf.nn.uniform_candidate_sampler([[1]], 1, 6, True, 5)[0])
    classes = tf.placeholder(tf.int64, None)
    sampled = tf.nn.log_uniform_candidate_sampler(classes, 2, 3, False, 5)[0]
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"num_true = 2\]"):
            sess.run(sampled, {classes: [[1, 2, 3]]})
        assert sess.run(sampled, {classes: [[1, 2]]}).shape == (3,)


def test_compute_accidental_hits():
    indices, ids, weights = tf.nn.compute_accidental_hits(
        [[3, 7], [1, 2], [7, 5]], tf.constant([7, 0, 5, 2], tf.int64), num_true=2)
    with tf.Session() as sess:
        i, j, w = sess.run([indices, ids, weights])
    np.testing.assert_array_equal(i, [0, 1, 2, 2])
    np.testing.assert_array_equal(j, [0, 3, 0, 2])
    np.testing.assert_array_equal(w, [-FLT_MAX] * 4)


# ------------------------------------------------------------------------------------------------
# Sampled losses

def sampled_logits_ref(weights, biases, labels, inputs, sampled, true_expected, sampled_expected,
                       remove_accidental_hits):
    num_true = labels.shape[1]
    true_logits = np.einsum("nd,ntd->nt", inputs, weights[labels]) + biases[labels]
    sampled_logits = inputs @ weights[sampled].T + biases[sampled]
    if remove_accidental_hits:
        for i, j in np.ndindex(sampled_logits.shape):
            if sampled[j] in labels[i]:
                sampled_logits[i, j] -= FLT_MAX
    true_logits -= np.log(true_expected)
    sampled_logits -= np.log(sampled_expected)
    logits = np.concatenate([true_logits, sampled_logits], 1)
    targets = np.concatenate([np.full(true_logits.shape, 1.0 / num_true),
                              np.zeros(sampled_logits.shape)], 1)
    return logits, targets


def nce_ref(*args):
    x, z = sampled_logits_ref(*args)
    return (np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x)))).sum(axis=1)


def sampled_softmax_ref(*args):
    x, z = sampled_logits_ref(*args)
    log_softmax = x - x.max(axis=1, keepdims=True)
    log_softmax -= np.log(np.exp(log_softmax).sum(axis=1, keepdims=True))
    return -(z * log_softmax).sum(axis=1)


NUM_CLASSES, DIM = 10, 3
WEIGHTS = RNG.uniform(-1, 1, (NUM_CLASSES, DIM))
BIASES = RNG.uniform(-1, 1, NUM_CLASSES)
INPUTS = RNG.uniform(-1, 1, (4, DIM))
LABELS = np.array([[1, 4], [0, 9], [4, 2], [7, 7]], np.int64)
SAMPLED = np.array([4, 3, 7, 0, 5], np.int64)
TRUE_EXPECTED = RNG.uniform(0.1, 0.9, (4, 2))
SAMPLED_EXPECTED = RNG.uniform(0.1, 0.9, 5)


def shards(strategy, n):
    """WEIGHTS and BIASES split into n shards the way partition_strategy lays them out."""
    if strategy == "mod":
        return ([WEIGHTS[p::n] for p in range(n)], [BIASES[p::n] for p in range(n)])
    bounds = np.cumsum([0] + [len(a) for a in np.array_split(np.arange(NUM_CLASSES), n)])
    return ([WEIGHTS[a:b] for a, b in zip(bounds[:-1], bounds[1:])],
            [BIASES[a:b] for a, b in zip(bounds[:-1], bounds[1:])])


@pytest.mark.parametrize("loss,ref", [(tf.nn.nce_loss, nce_ref),
                                      (tf.nn.sampled_softmax_loss, sampled_softmax_ref)])
@pytest.mark.parametrize("remove_hits", [False, True])
@pytest.mark.parametrize("partition", [None, ("mod", 3), ("div", 3), ("div", 4)])
def test_sampled_losses_match_the_reference(loss, ref, remove_hits, partition):
    if partition is None:
        weights, biases, strategy = tf.constant(WEIGHTS), tf.constant(BIASES), "mod"
    else:
        strategy, n = partition
        w, b = shards(strategy, n)
        weights = [tf.constant(s) for s in w]
        biases = [tf.constant(s) for s in b]
    values = (tf.constant(SAMPLED), tf.constant(TRUE_EXPECTED, tf.float32),
              tf.constant(SAMPLED_EXPECTED, tf.float32))
    out = loss(weights, biases, LABELS, tf.constant(INPUTS), num_sampled=5,
               num_classes=NUM_CLASSES, num_true=2, sampled_values=values,
               remove_accidental_hits=remove_hits, partition_strategy=strategy)
    assert out.shape.as_list() == [4]
    with tf.Session() as sess:
        got = sess.run(out)
    expected = ref(WEIGHTS, BIASES, LABELS, INPUTS, SAMPLED,
                   TRUE_EXPECTED.astype(np.float32).astype(np.float64),
                   SAMPLED_EXPECTED.astype(np.float32).astype(np.float64), remove_hits)
    np.testing.assert_allclose(got, expected, rtol=1e-10)


@pytest.mark.parametrize("loss", [tf.nn.nce_loss, tf.nn.sampled_softmax_loss])
def test_sampled_loss_gradients_match_finite_differences(loss):
    graph = tf.Graph()
    with graph.as_default():
        w = tf.placeholder(tf.float64, WEIGHTS.shape)
        b = tf.placeholder(tf.float64, BIASES.shape)
        x = tf.placeholder(tf.float64, INPUTS.shape)
        values = (tf.constant(SAMPLED), tf.constant(TRUE_EXPECTED, tf.float32),
                  tf.constant(SAMPLED_EXPECTED, tf.float32))
        total = tf.reduce_sum(loss(w, b, LABELS, x, 5, NUM_CLASSES, num_true=2,
                                   sampled_values=values, remove_accidental_hits=True))
        grads = tf.gradients(total, [w, b, x])
    feed = {w: WEIGHTS.copy(), b: BIASES.copy(), x: INPUTS.copy()}
    with tf.Session(graph=graph) as sess:
        symbolic = sess.run(grads, feed)
        for k, p in enumerate([w, b, x]):
            value = feed[p]
            numeric = np.zeros_like(value)
            for idx in np.ndindex(value.shape):
                orig = value[idx]
                value[idx] = orig + 1e-6
                up = sess.run(total, feed)
                value[idx] = orig - 1e-6
                down = sess.run(total, feed)
                value[idx] = orig
                numeric[idx] = (up - down) / 2e-6
            np.testing.assert_allclose(symbolic[k], numeric, rtol=1e-5, atol=1e-7)


def test_sampled_losses_with_their_own_sampler_train_the_true_classes():
    tf.set_random_seed(1)
    weights = tf.Variable(np.zeros((50, 4), np.float32))
    biases = tf.Variable(np.zeros(50, np.float32))
    inputs = tf.constant(np.eye(4, dtype=np.float32))
    labels = np.array([[3], [10], [20], [45]], np.int64)
    nce = tf.reduce_mean(tf.nn.nce_loss(weights, biases, labels, inputs, 8, 50))
    softmax = tf.reduce_mean(tf.nn.sampled_softmax_loss(weights, biases, labels, inputs, 8, 50))
    train = tf.train.GradientDescentOptimizer(0.5).minimize(nce + softmax)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        before = sess.run([nce, softmax])
        for _ in range(60):
            sess.run(train)
        after = sess.run([nce, softmax])
        logits = sess.run(tf.matmul(inputs, weights, transpose_b=True) + biases)
    assert np.isfinite(before).all() and after[0] < before[0] / 2 and after[1] < before[1] / 2
    np.testing.assert_array_equal(logits.argmax(axis=1), labels[:, 0])


def test_sampled_loss_names():
    values = (tf.constant(SAMPLED), tf.constant(TRUE_EXPECTED, tf.float32),
              tf.constant(SAMPLED_EXPECTED, tf.float32))
    out = tf.nn.nce_loss(tf.constant(WEIGHTS), tf.constant(BIASES), LABELS, tf.constant(INPUTS),
                         5, NUM_CLASSES, num_true=2, sampled_values=values)
    # As in TensorFlow, the logits are built under "nce_loss/" and the row sums outside it.
    graph_ops = tf.get_default_graph().get_operations()
    assert any(op.name.startswith("nce_loss/") and op.type == "MatMul" for op in graph_ops)
    assert out.op.type == "Reshape"
    sampler = tf.nn.log_uniform_candidate_sampler([[1]], 1, 2, True, 5)
    assert sampler[0].op.type == "LogUniformCandidateSampler"


def test_every_sampler_rejects_true_classes_outside_its_range_as_tensorflow_does():
    classes = tf.placeholder(tf.int64, [1, 1])
    samplers = [tf.nn.uniform_candidate_sampler(classes, 1, 2, True, 5),
                tf.nn.log_uniform_candidate_sampler(classes, 1, 2, True, 5),
                tf.nn.all_candidate_sampler(classes, 1, 5, True)]
    with tf.Session() as sess:
        for sampler in samplers:
            for bad in (-1, 5):
                with pytest.raises(tf.errors.InvalidArgumentError,
                                   match=rf"out of range \[0, 5\), received {bad}"):
                    sess.run(sampler, {classes: [[bad]]})
            assert sess.run(sampler, {classes: [[4]]})[0].shape == (sampler[0].shape[0],)
