"""tf.nn's CTC additions: ctc_beam_search_decoder (and _v2) against real TensorFlow on pruned
beams and against an exhaustive search (op_cases_nnbreadth.py), ctc_loss_v2 with dense and
sparse labels and any blank class, collapse_repeated and ctc_unique_labels."""

import os
import pickle

import numpy as np
import pytest

import flowstone as tf
from ctc_reference import ctc_loss_brute_force
from gradient_check import check_gradients
from peers import requires_tensorflow, run_tensorflow

RNG = np.random.default_rng(11)


def _run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


def _dense(sparse_value):
    out = np.zeros(sparse_value.dense_shape, np.int64)
    for (b, i), v in zip(sparse_value.indices, sparse_value.values):
        out[b, i] = v
    return out, [int(sum(1 for x in sparse_value.indices if x[0] == b))
                 for b in range(sparse_value.dense_shape[0])]


def _tensorflow(script, tmp_path, **arrays):
    """Runs `script` under TensorFlow with the arrays in `inputs` and returns its `results`."""
    (tmp_path / "inputs.pkl").write_bytes(pickle.dumps(arrays))
    run_tensorflow("import pickle\nimport numpy as np\nimport tensorflow as tf\n"
                   "inputs = pickle.load(open('inputs.pkl', 'rb'))\nresults = {}\n" + script +
                   "\npickle.dump(results, open('results.pkl', 'wb'))\n", workdir=str(tmp_path))
    return pickle.loads((tmp_path / "results.pkl").read_bytes())


# --- beam search ---------------------------------------------------------------------------------

BEAM_LOGITS = RNG.normal(size=(6, 3, 5)).astype(np.float32)
BEAM_LENGTHS = np.array([6, 4, 2], np.int32)
BEAM_SETTINGS = [(1, 1, True), (3, 2, True), (4, 4, False), (10, 3, False)]


@requires_tensorflow
def test_beam_search_matches_tensorflow_on_pruned_beams(tmp_path):
    theirs = _tensorflow("""
for width, top, merge in inputs["settings"]:
    decoded, log_probs = tf.compat.v1.nn.ctc_beam_search_decoder(
        inputs["logits"], inputs["lengths"], beam_width=width, top_paths=top,
        merge_repeated=merge)
    results[(width, top, merge)] = ([(d.indices.numpy(), d.values.numpy(), d.dense_shape.numpy())
                                     for d in decoded], log_probs.numpy())
""", tmp_path, logits=BEAM_LOGITS, lengths=BEAM_LENGTHS, settings=BEAM_SETTINGS)
    for width, top, merge in BEAM_SETTINGS:
        decoded, log_probs = tf.nn.ctc_beam_search_decoder(
            BEAM_LOGITS, BEAM_LENGTHS, beam_width=width, top_paths=top, merge_repeated=merge)
        assert len(decoded) == top and log_probs.shape.as_list() == [3, top]
        mine_decoded, mine_log_probs = _run((decoded, log_probs))
        their_decoded, their_log_probs = theirs[(width, top, merge)]
        for mine, their in zip(mine_decoded, their_decoded):
            np.testing.assert_array_equal(mine.indices, their[0])
            np.testing.assert_array_equal(mine.values, their[1])
            np.testing.assert_array_equal(mine.dense_shape, their[2])
        np.testing.assert_allclose(mine_log_probs, their_log_probs, rtol=1e-5)


def test_beam_search_v2_does_not_merge_repeats():
    logits = np.log(np.array([[[0.1, 0.8, 0.1]], [[0.1, 0.1, 0.8]], [[0.1, 0.8, 0.1]]]))
    v2, _ = tf.nn.ctc_beam_search_decoder_v2(logits, [3], beam_width=10)
    merged, _ = tf.nn.ctc_beam_search_decoder(logits, [3], beam_width=10)
    v2_value, merged_value = _run((v2[0], merged[0]))
    np.testing.assert_array_equal(v2_value.values, [1, 1])  # "1 blank 1": two labels
    np.testing.assert_array_equal(merged_value.values, [1])
    assert v2[0].values.op.get_attr("merge_repeated") is False


def test_beam_search_errors():
    with pytest.raises(tf.errors.InvalidArgumentError, match="more paths than the beam width"):
        _run(tf.nn.ctc_beam_search_decoder(BEAM_LOGITS, BEAM_LENGTHS, beam_width=2,
                                           top_paths=3)[1])
    # No frames: the beam holds only the empty prefix.
    with pytest.raises(tf.errors.InvalidArgumentError, match="Less leaves in the beam search"):
        _run(tf.nn.ctc_beam_search_decoder(BEAM_LOGITS, [6, 4, 0], beam_width=2, top_paths=2)[1])
    with pytest.raises(tf.errors.InvalidArgumentError, match="sequence_length"):
        _run(tf.nn.ctc_beam_search_decoder(BEAM_LOGITS, [7, 1, 1], beam_width=2)[1])


# --- ctc_loss_v2 ---------------------------------------------------------------------------------

LOSS_LOGITS = RNG.normal(size=(5, 2, 4))
LOSS_LABELS = [[2, 2, 1], [3]]


def _with_blank_last(logits, blank):
    order = [c for c in range(logits.shape[-1]) if c != blank] + [blank]
    return logits[..., order]


def _renumbered(labels, blank):
    return [[c - (c > blank) for c in row] for row in labels]


def test_ctc_loss_v2_dense_labels_blank_zero():
    dense = np.array([[2, 2, 1], [3, 0, 0]], np.int32)
    loss = tf.nn.ctc_loss_v2(dense, tf.constant(LOSS_LOGITS), label_length=[3, 1],
                             logit_length=[5, 4])
    got = _run(loss)
    shifted = _with_blank_last(LOSS_LOGITS, 0)
    want = [ctc_loss_brute_force(shifted[:5, 0], _renumbered([LOSS_LABELS[0]], 0)[0], True),
            ctc_loss_brute_force(shifted[:4, 1], _renumbered([LOSS_LABELS[1]], 0)[0], True)]
    np.testing.assert_allclose(got, want, rtol=1e-10)


@pytest.mark.parametrize("blank_index", [1, -1])
def test_ctc_loss_v2_sparse_labels_any_blank(blank_index):
    blank = blank_index % 4
    labels = [[c for c in row if c != blank] or [0 if blank else 1] for row in LOSS_LABELS]
    indices = [[b, i] for b, row in enumerate(labels) for i in range(len(row))]
    values = [c for row in labels for c in row]
    sparse = tf.SparseTensor(np.array(indices, np.int64), np.array(values, np.int32),
                             [2, max(map(len, labels))])
    batch_major = np.transpose(LOSS_LOGITS, [1, 0, 2])
    loss = tf.nn.ctc_loss_v2(sparse, batch_major, None, [5, 5], logits_time_major=False,
                             blank_index=blank_index)
    shifted = _with_blank_last(LOSS_LOGITS, blank)
    want = [ctc_loss_brute_force(shifted[:, b], _renumbered(labels, blank)[b], True)
            for b in range(2)]
    np.testing.assert_allclose(_run(loss), want, rtol=1e-10)


def test_ctc_loss_v2_gradient_and_sparse_without_blank_index():
    dense = np.array([[1, 3], [2, 0]], np.int32)
    check_gradients(lambda logits: tf.nn.ctc_loss_v2(dense, logits, [2, 1], [5, 5]),
                    [LOSS_LOGITS], [0], rtol=1e-5)
    sparse = tf.SparseTensor([[0, 0]], [1], [1, 1])
    with pytest.raises(ValueError, match="`blank_index` must be provided"):
        tf.nn.ctc_loss_v2(sparse, LOSS_LOGITS[:, :1], None, [5])


# --- label helpers -------------------------------------------------------------------------------

def test_collapse_repeated():
    labels = np.array([[1, 1, 2, 2, 2, 7], [3, 3, 3, 3, 0, 0], [5, 4, 4, 5, 6, 6]], np.int32)
    collapsed, lengths = tf.nn.collapse_repeated(labels, np.array([6, 4, 5], np.int32))
    got, got_lengths = _run((collapsed, lengths))
    np.testing.assert_array_equal(got, [[1, 2, 7, 0], [3, 0, 0, 0], [5, 4, 5, 6]])
    np.testing.assert_array_equal(got_lengths, [3, 1, 4])
    assert got_lengths.dtype == np.int32


def test_ctc_unique_labels():
    labels = np.array([[3, 1, 3, 2], [0, 0, 5, 0]], np.int64)
    unique, idx = tf.nn.ctc_unique_labels(labels)
    got_unique, got_idx = _run((unique, idx))
    np.testing.assert_array_equal(got_unique, [[3, 1, 2, 0], [0, 5, 0, 0]])
    np.testing.assert_array_equal(got_idx, [[0, 1, 0, 2], [0, 0, 1, 0]])
    assert got_unique.dtype == np.int64 and got_idx.dtype == np.int32


@requires_tensorflow
def test_ctc_v2_helpers_match_tensorflow(tmp_path):
    labels = np.array([[1, 1, 2, 2, 2, 7], [3, 3, 3, 3, 0, 0]], np.int32)
    lengths = np.array([6, 3], np.int32)
    dense = np.array([[2, 2, 1], [3, 1, 0]], np.int32)
    theirs = _tensorflow("""
results["collapse"] = [t.numpy() for t in tf.nn.collapse_repeated(inputs["labels"],
                                                                  inputs["lengths"])]
results["unique"] = [t.numpy() for t in tf.nn.ctc_unique_labels(inputs["labels"])]
results["loss"] = tf.nn.ctc_loss(inputs["dense"], inputs["logits"].astype(np.float32), [3, 2], [5, 4],
                                 blank_index=2).numpy()
""", tmp_path, labels=labels, lengths=lengths, dense=dense, logits=LOSS_LOGITS)
    mine = _run((tf.nn.collapse_repeated(labels, lengths), tf.nn.ctc_unique_labels(labels),
                 tf.nn.ctc_loss_v2(dense, LOSS_LOGITS, [3, 2], [5, 4], blank_index=2)))
    for got, want in zip(list(mine[0]) + list(mine[1]), theirs["collapse"] + theirs["unique"]):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(mine[2], theirs["loss"], rtol=1e-5)  # TensorFlow: float32
