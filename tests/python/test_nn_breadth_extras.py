"""tf.nn compositions: embedding_lookup_sparse and safe_embedding_lookup_sparse (numpy and real
TensorFlow), with_space_to_batch (against dilated convolutions), raw_rnn (against dynamic_rnn)
and static_state_saving_rnn (against static_rnn, with a state saver)."""

import pickle

import numpy as np
import pytest

import flowstone as tf
from peers import requires_tensorflow, run_tensorflow

RNG = np.random.default_rng(8)
PARAMS = RNG.normal(size=(6, 3))
IDS = (np.array([[0, 0], [0, 1], [0, 2], [2, 0], [3, 1]], np.int64),
       np.array([1, 4, 1, 0, 5], np.int64), np.array([4, 3], np.int64))
WEIGHTS = np.array([2.0, 0.5, 1.0, 3.0, 1.5])


def _run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


def _reference(ids_rows, weights, combiner, rows):
    out = np.zeros((rows, 3))
    for r in range(rows):
        members = [(i, w) for (row, i, w) in ids_rows if row == r]
        if not members:
            continue
        total = sum(w * PARAMS[i] for i, w in members)
        norm = {"sum": 1.0, "mean": sum(w for _, w in members),
                "sqrtn": np.sqrt(sum(w * w for _, w in members))}[combiner]
        out[r] = total / norm
    return out


@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
@pytest.mark.parametrize("weighted", [False, True])
def test_embedding_lookup_sparse(combiner, weighted):
    ids = tf.SparseTensor(*IDS)
    weights = tf.SparseTensor(IDS[0], WEIGHTS, IDS[2]) if weighted else None
    got = _run(tf.nn.embedding_lookup_sparse(PARAMS, ids, weights, combiner=combiner))
    w = WEIGHTS if weighted else np.ones(5)
    rows = [(row, i, wt) for (row, _), i, wt in zip(IDS[0], IDS[1], w)]
    # Rows past the last one with ids are not in the result, as in TensorFlow.
    np.testing.assert_allclose(got, _reference(rows, w, combiner, 4), rtol=1e-12)


def test_embedding_lookup_sparse_sharded_with_max_norm():
    ids = tf.SparseTensor(*IDS)
    shards = [PARAMS[0::2], PARAMS[1::2]]  # "mod": id i in shard i % 2
    got = _run(tf.nn.embedding_lookup_sparse(shards, ids, None, combiner="sum", max_norm=0.5))
    clipped = PARAMS * np.minimum(1.0, 0.5 / np.linalg.norm(PARAMS, axis=1, keepdims=True))
    want = np.stack([clipped[1] + clipped[4] + clipped[1], np.zeros(3), clipped[0], clipped[5]])
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_embedding_lookup_sparse_errors():
    with pytest.raises(ValueError, match="combiner must be one of"):
        tf.nn.embedding_lookup_sparse(PARAMS, tf.SparseTensor(*IDS), None, combiner="max")
    with pytest.raises(TypeError, match="sp_ids must be SparseTensor"):
        tf.nn.embedding_lookup_sparse(PARAMS, IDS[1], None)
    with pytest.raises(ValueError, match="Missing embedding_weights"):
        tf.nn.safe_embedding_lookup_sparse([], tf.SparseTensor(*IDS))


def _safe_inputs():
    indices = np.array([[0, 0, 0], [0, 0, 1], [0, 1, 0], [1, 0, 0], [1, 1, 2]], np.int64)
    ids = np.array([1, -1, 4, 2, 5], np.int64)
    weights = np.array([1.0, 2.0, 0.0, -1.0, 0.5])
    return indices, ids, weights, np.array([2, 2, 3], np.int64)


def test_safe_embedding_lookup_sparse_prunes_and_fills():
    indices, ids, weights, shape = _safe_inputs()
    sp_ids = tf.SparseTensor(indices, ids, shape)
    sp_weights = tf.SparseTensor(indices, weights, shape)
    zeros_default = tf.nn.safe_embedding_lookup_sparse(PARAMS, sp_ids, sp_weights)
    with_default = tf.nn.safe_embedding_lookup_sparse(PARAMS, sp_ids, sp_weights,
                                                      default_id=3)
    summed = tf.nn.safe_embedding_lookup_sparse(PARAMS, sp_ids, sp_weights, combiner="sum")
    got_zero, got_default, got_sum = _run((zeros_default, with_default, summed))
    assert got_zero.shape == (2, 2, 3)
    # [0, 0]: id 1 (the -1 is dropped); [0, 1]: its only weight is 0, so it is empty;
    # [1, 0]: negative weight, empty; [1, 1]: id 5.
    np.testing.assert_allclose(got_zero, [[PARAMS[1], np.zeros(3)], [np.zeros(3), PARAMS[5]]])
    np.testing.assert_allclose(got_default, [[PARAMS[1], PARAMS[3]], [PARAMS[3], PARAMS[5]]])
    # "sum" keeps non-positive weights.
    np.testing.assert_allclose(got_sum, [[PARAMS[1], np.zeros(3)],
                                         [-PARAMS[2], 0.5 * PARAMS[5]]])


@requires_tensorflow
def test_embedding_lookups_match_tensorflow(tmp_path):
    safe = _safe_inputs()
    arrays = {"params": PARAMS, "ids": IDS, "weights": WEIGHTS, "safe": safe}
    (tmp_path / "inputs.pkl").write_bytes(pickle.dumps(arrays))
    run_tensorflow("""
        import pickle
        import numpy as np
        import tensorflow as tf
        a = pickle.load(open("inputs.pkl", "rb"))
        ids = tf.SparseTensor(*a["ids"])
        weights = tf.SparseTensor(a["ids"][0], a["weights"], a["ids"][2])
        results = {}
        for combiner in ("sum", "mean", "sqrtn"):
            results[combiner] = tf.compat.v1.nn.embedding_lookup_sparse(
                a["params"], ids, weights, combiner=combiner).numpy()
        i, v, w, s = a["safe"]
        shards = [a["params"][:3], a["params"][3:]]
        for default in (None, 2):
            results[default] = tf.compat.v1.nn.safe_embedding_lookup_sparse(
                shards, tf.SparseTensor(i, v, s), tf.SparseTensor(i, w, s),
                default_id=default).numpy()
        pickle.dump(results, open("results.pkl", "wb"))
    """, workdir=str(tmp_path))
    theirs = pickle.loads((tmp_path / "results.pkl").read_bytes())
    sp_ids = tf.SparseTensor(*IDS)
    sp_weights = tf.SparseTensor(IDS[0], WEIGHTS, IDS[2])
    for combiner in ("sum", "mean", "sqrtn"):
        got = _run(tf.nn.embedding_lookup_sparse(PARAMS, sp_ids, sp_weights, combiner=combiner))
        np.testing.assert_allclose(got, theirs[combiner], rtol=1e-12)
    indices, ids, weights, shape = safe
    for default in (None, 2):
        got = _run(tf.nn.safe_embedding_lookup_sparse(
            [PARAMS[:3], PARAMS[3:]], tf.SparseTensor(indices, ids, shape),
            tf.SparseTensor(indices, weights, shape), default_id=default))
        np.testing.assert_allclose(got, theirs[default], rtol=1e-12)


# --- with_space_to_batch -------------------------------------------------------------------------

@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("rate", [[2, 2], [3, 2]])
def test_with_space_to_batch_is_a_dilated_convolution(padding, rate):
    x = RNG.normal(size=(2, 9, 7, 3))
    w = RNG.normal(size=(3, 2, 3, 4))

    def conv(converted, num_spatial_dims, inner_padding):
        assert num_spatial_dims == 2 and inner_padding == "VALID"
        return tf.nn.conv2d(converted, w, [1, 1, 1, 1], inner_padding)

    got = tf.nn.with_space_to_batch(x, rate, padding, conv, filter_shape=w.shape)
    want = tf.nn.conv2d(x, w, [1, 1, 1, 1], padding, dilations=[1] + rate + [1])
    got_value, want_value = _run((got, want))
    np.testing.assert_allclose(got_value, want_value, rtol=1e-10, atol=1e-12)


def test_with_space_to_batch_rate_one_and_errors():
    x = RNG.normal(size=(1, 5, 2))
    calls = []

    def record(converted, num_spatial_dims, padding):
        calls.append(padding)
        return converted

    assert tf.nn.with_space_to_batch(x, [1], "SAME", record) is not None
    assert calls == ["SAME"]  # rate 1: the op sees the input and the padding as given
    with pytest.raises(ValueError, match="filter_shape"):
        tf.nn.with_space_to_batch(x, [2], "SAME", record)
    with pytest.raises(ValueError, match="dilation_rate must be positive"):
        tf.nn.with_space_to_batch(x, [0], "VALID", record)
    with pytest.raises(ValueError, match="Invalid padding method"):
        tf.nn.with_space_to_batch(x, [2], "FULL", record)


# --- raw_rnn and static_state_saving_rnn ---------------------------------------------------------

def test_raw_rnn_matches_dynamic_rnn():
    steps, batch, depth, units = 5, 3, 4, 6
    inputs = RNG.normal(size=(steps, batch, depth))
    lengths = np.array([5, 2, 4], np.int32)
    cell = tf.nn.rnn_cell.BasicRNNCell(units)
    inputs_ta = tf.TensorArray(tf.float64, size=steps).unstack(tf.constant(inputs))

    def loop_fn(time, cell_output, cell_state, loop_state):
        emit = cell_output
        state = cell.zero_state(batch, tf.float64) if cell_output is None else cell_state
        finished = time >= lengths
        next_input = tf.cond(tf.reduce_all(finished), lambda: tf.zeros([batch, depth], tf.float64),
                             lambda: inputs_ta.read(tf.minimum(time, steps - 1)))
        return finished, next_input, state, emit, None

    with tf.variable_scope("shared"):
        emit_ta, final_state, final_loop_state = tf.nn.raw_rnn(cell, loop_fn)
    with tf.variable_scope("shared", reuse=True):
        outputs, state = tf.nn.dynamic_rnn(cell, inputs, lengths, dtype=tf.float64,
                                           time_major=True)
    assert final_loop_state is None
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got, got_state, want, want_state = sess.run((emit_ta.stack(), final_state, outputs,
                                                     state))
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(got_state, want_state, rtol=1e-12)


class _StateSaver:
    """The state saver interface: state(name) and save_state(name, value)."""

    def __init__(self, batch, sizes):
        self.variables = {name: tf.Variable(np.full((batch, size), 0.5), name=name)
                          for name, size in sizes.items()}

    def state(self, name):
        return self.variables[name].read_value()

    def save_state(self, name, value):
        return tf.assign(self.variables[name], value).op


def test_static_state_saving_rnn_saves_the_final_state():
    cell = tf.nn.rnn_cell.LSTMCell(4, state_is_tuple=True)
    inputs = [tf.constant(RNG.normal(size=(2, 3))) for _ in range(3)]
    saver = _StateSaver(2, {"c": 4, "h": 4})
    outputs, state = tf.nn.static_state_saving_rnn(cell, inputs, saver, ("c", "h"))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first_outputs, first_state = sess.run((outputs, state))
        saved_c, saved_h = sess.run((saver.variables["c"], saver.variables["h"]))
        np.testing.assert_allclose(saved_c, first_state.c)
        np.testing.assert_allclose(saved_h, first_state.h)
        second_outputs = sess.run(outputs)  # starts from the saved state: different outputs
    assert not np.allclose(first_outputs[0], second_outputs[0])
    with pytest.raises(ValueError, match="should be the same type as `cell.state_size`"):
        tf.nn.static_state_saving_rnn(cell, inputs, saver, "c")
