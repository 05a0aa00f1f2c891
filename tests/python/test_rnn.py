"""tf.nn.rnn_cell cells and tf.nn.{static,dynamic,bidirectional_dynamic,static_bidirectional}_rnn:
step math against numpy, sequence-length masking, static == dynamic, float64 finite-difference
gradients, variable names, wrappers, errors, and the same program run by TensorFlow."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import flowstone as tf
from gradient_check import check_gradients
from peers import HAVE_PEER, PEER_PYTHON, SKIP_REASON

rnn_cell = tf.nn.rnn_cell


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def run_with_weights(build, seed=0):
    """Builds in a fresh graph, gives every variable reproducible uniform values, and returns
    (fetched results, {variable name: value})."""
    with tf.Graph().as_default():
        results = build()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            weights = {}
            for i, v in enumerate(tf.global_variables()):
                value = np.random.RandomState(seed + i).uniform(-0.6, 0.6, v.shape.as_list())
                sess.run(v.assign(value.astype(v.dtype.as_numpy_dtype)))
                weights[v.name] = value
            return sess.run(results), weights


def lstm_reference(x, kernel, bias, forget_bias=1.0, lengths=None):
    """BasicLSTMCell over [batch, time, depth] in numpy, with TensorFlow's gate order i, j, f, o
    and masking: (outputs, (c, h))."""
    batch, steps, _ = x.shape
    units = kernel.shape[1] // 4
    c = np.zeros((batch, units))
    h = np.zeros((batch, units))
    outputs = np.zeros((batch, steps, units))
    for t in range(steps):
        z = np.concatenate([x[:, t], h], 1) @ kernel + bias
        i, j, f, o = np.split(z, 4, axis=1)
        new_c = c * sigmoid(f + forget_bias) + sigmoid(i) * np.tanh(j)
        new_h = np.tanh(new_c) * sigmoid(o)
        live = np.ones(batch, bool) if lengths is None else t < lengths
        c = np.where(live[:, None], new_c, c)
        h = np.where(live[:, None], new_h, h)
        outputs[:, t] = np.where(live[:, None], new_h, 0.0)
    return outputs, (c, h)


X = np.random.RandomState(3).randn(3, 5, 4)
LENGTHS = np.array([5, 2, 3], np.int32)


def test_dynamic_rnn_basic_lstm_matches_numpy_with_and_without_lengths():
    for lengths in (None, LENGTHS):
        def build():
            cell = rnn_cell.BasicLSTMCell(6)
            outputs, state = tf.nn.dynamic_rnn(cell, tf.constant(X), sequence_length=lengths,
                                               dtype=tf.float64)
            assert isinstance(state, rnn_cell.LSTMStateTuple)
            assert outputs.shape.as_list() == [3, 5, 6]
            return outputs, state

        (outputs, state), weights = run_with_weights(build)
        assert sorted(weights) == ["rnn/basic_lstm_cell/bias:0", "rnn/basic_lstm_cell/kernel:0"]
        ref_out, (ref_c, ref_h) = lstm_reference(X, weights["rnn/basic_lstm_cell/kernel:0"],
                                                 weights["rnn/basic_lstm_cell/bias:0"],
                                                 lengths=lengths)
        np.testing.assert_allclose(outputs, ref_out, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(state.c, ref_c, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(state.h, ref_h, rtol=1e-10, atol=1e-12)


def test_gru_and_basic_rnn_steps_match_numpy():
    def build():
        gru = rnn_cell.GRUCell(3)
        simple = rnn_cell.BasicRNNCell(2, activation=tf.nn.relu)
        x = tf.constant(X[:, 0])
        return (gru(x, tf.constant(np.full((3, 3), 0.25)))[0],
                simple(x, tf.constant(np.full((3, 2), -0.5)))[0])

    (gru_out, rnn_out), w = run_with_weights(build)
    x = X[:, 0]
    state = np.full((3, 3), 0.25)
    value = sigmoid(np.concatenate([x, state], 1) @ w["gru_cell/gates/kernel:0"] +
                    w["gru_cell/gates/bias:0"])
    r, u = np.split(value, 2, axis=1)
    c = np.tanh(np.concatenate([x, r * state], 1) @ w["gru_cell/candidate/kernel:0"] +
                w["gru_cell/candidate/bias:0"])
    np.testing.assert_allclose(gru_out, u * state + (1 - u) * c, rtol=1e-10)
    expected = np.maximum(np.concatenate([x, np.full((3, 2), -0.5)], 1) @
                          w["basic_rnn_cell/kernel:0"] + w["basic_rnn_cell/bias:0"], 0)
    np.testing.assert_allclose(rnn_out, expected, rtol=1e-10)


def test_lstm_cell_peepholes_clipping_and_projection():
    def build():
        cell = rnn_cell.LSTMCell(4, use_peepholes=True, cell_clip=0.3, num_proj=2,
                                 proj_clip=0.2)
        assert cell.state_size == (4, 2) and cell.output_size == 2
        state = rnn_cell.LSTMStateTuple(tf.constant(np.full((3, 4), 0.1)),
                                        tf.constant(np.full((3, 2), -0.1)))
        return cell(tf.constant(X[:, 0]), state)

    (m, (c, h)), w = run_with_weights(build)
    c_prev, m_prev = np.full((3, 4), 0.1), np.full((3, 2), -0.1)
    z = np.concatenate([X[:, 0], m_prev], 1) @ w["lstm_cell/kernel:0"] + w["lstm_cell/bias:0"]
    i, j, f, o = np.split(z, 4, axis=1)
    ref_c = (sigmoid(f + 1.0 + w["lstm_cell/w_f_diag:0"] * c_prev) * c_prev +
             sigmoid(i + w["lstm_cell/w_i_diag:0"] * c_prev) * np.tanh(j))
    ref_c = np.clip(ref_c, -0.3, 0.3)
    ref_m = sigmoid(o + w["lstm_cell/w_o_diag:0"] * ref_c) * np.tanh(ref_c)
    ref_m = np.clip(ref_m @ w["lstm_cell/projection/kernel:0"], -0.2, 0.2)
    np.testing.assert_allclose(c, ref_c, rtol=1e-10)
    np.testing.assert_allclose(m, ref_m, rtol=1e-10)
    np.testing.assert_allclose(h, ref_m, rtol=1e-10)


def test_static_rnn_equals_dynamic_rnn_and_bidirectional_reverses_within_lengths():
    def build():
        x = tf.constant(X)
        with tf.variable_scope("shared") as scope:
            dynamic, d_state = tf.nn.dynamic_rnn(rnn_cell.GRUCell(3), x, LENGTHS,
                                                 dtype=tf.float64, scope="rnn")
        with tf.variable_scope(scope, reuse=True):
            static, s_state = tf.nn.static_rnn(rnn_cell.GRUCell(3), tf.unstack(x, axis=1),
                                               dtype=tf.float64, sequence_length=LENGTHS)
        (fw, bw), _ = tf.nn.bidirectional_dynamic_rnn(
            rnn_cell.GRUCell(2), rnn_cell.GRUCell(2), x, LENGTHS, dtype=tf.float64)
        with tf.variable_scope("reversed"):
            rev, _ = tf.nn.dynamic_rnn(rnn_cell.GRUCell(2), tf.reverse_sequence(
                x, LENGTHS, seq_axis=1, batch_axis=0), LENGTHS, dtype=tf.float64)
        return dynamic, d_state, tf.stack(static, 1), s_state, bw, rev

    # The backward cell and the "reversed" cell are given the same weights, so that the backward
    # outputs must be the reversed run's outputs in reverse order.
    with tf.Graph().as_default():
        dynamic, d_state, static, s_state, bw, rev = build()
        bw_vars = [v for v in tf.global_variables() if "/bw/" in v.name]
        rev_vars = [v for v in tf.global_variables() if v.name.startswith("reversed/")]
        assert [v.name.split("/bw/")[1] for v in bw_vars] == \
               [v.name.split("reversed/rnn/")[1] for v in rev_vars]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for a, b in zip(bw_vars, rev_vars):
                sess.run(b.assign(a))
            d, ds, s, ss, b, r = sess.run([dynamic, d_state, static, s_state, bw, rev])
    np.testing.assert_allclose(d, s, rtol=1e-12)
    np.testing.assert_allclose(ds, ss, rtol=1e-12)
    for row, length in enumerate(LENGTHS):
        np.testing.assert_allclose(b[row, :length], r[row, :length][::-1], rtol=1e-12)
        assert np.all(b[row, length:] == 0) and np.all(d[row, length:] == 0)


def test_multi_rnn_cell_names_and_gradients_against_finite_differences():
    def build(x, h0):
        cell = rnn_cell.MultiRNNCell([
            rnn_cell.LSTMCell(3, use_peepholes=True,
                              initializer=tf.random_uniform_initializer(-0.5, 0.5, seed=1)),
            rnn_cell.GRUCell(2, kernel_initializer=tf.random_uniform_initializer(-0.5, 0.5,
                                                                                  seed=2))])
        state = (rnn_cell.LSTMStateTuple(tf.zeros([3, 3], tf.float64), tf.zeros([3, 3],
                                                                                 tf.float64)), h0)
        outputs, final = tf.nn.dynamic_rnn(cell, x, LENGTHS, initial_state=state)
        names = sorted(v.name for v in tf.trainable_variables())
        assert names == sorted([
            "rnn/multi_rnn_cell/cell_0/lstm_cell/kernel:0",
            "rnn/multi_rnn_cell/cell_0/lstm_cell/bias:0",
            "rnn/multi_rnn_cell/cell_0/lstm_cell/w_f_diag:0",
            "rnn/multi_rnn_cell/cell_0/lstm_cell/w_i_diag:0",
            "rnn/multi_rnn_cell/cell_0/lstm_cell/w_o_diag:0",
            "rnn/multi_rnn_cell/cell_1/gru_cell/gates/kernel:0",
            "rnn/multi_rnn_cell/cell_1/gru_cell/gates/bias:0",
            "rnn/multi_rnn_cell/cell_1/gru_cell/candidate/kernel:0",
            "rnn/multi_rnn_cell/cell_1/gru_cell/candidate/bias:0"])
        return tf.concat([tf.reshape(outputs, [3, -1]), final[0].c, final[1]], 1)

    check_gradients(build, [X, np.full((3, 2), 0.3)], wrt=[0, 1], rtol=1e-6, atol=1e-8)


def test_dropout_wrapper_scales_kept_units_and_spares_the_lstm_cell_state():
    def build():
        cell = rnn_cell.DropoutWrapper(rnn_cell.BasicLSTMCell(50), output_keep_prob=0.5,
                                       state_keep_prob=0.5, seed=3)
        plain = rnn_cell.BasicLSTMCell(50, reuse=True, name=cell.cell.name)
        x = tf.constant(X[:, 0])
        state = cell.zero_state(3, tf.float64)
        with tf.variable_scope("d"):
            out, new_state = cell(x, state)
        with tf.variable_scope("d", reuse=True):
            ref_out, ref_state = plain(x, state)
        return out, new_state, ref_out, ref_state

    (out, state, ref_out, ref_state), _ = run_with_weights(build)
    kept = out != 0
    assert 0.3 < kept.mean() < 0.7
    np.testing.assert_allclose(out[kept], ref_out[kept] / 0.5, rtol=1e-12)
    np.testing.assert_allclose(state.c, ref_state.c, rtol=1e-12)  # c is never dropped
    assert 0.3 < (state.h != 0).mean() < 0.7


def test_errors_are_tensorflows():
    with tf.Graph().as_default():
        x = tf.constant(X)
        with pytest.raises(ValueError, match="If there is no initial_state, you must give a "
                                             "dtype"):
            tf.nn.dynamic_rnn(rnn_cell.GRUCell(2), x)
        with pytest.raises(ValueError, match="sequence_length must be a vector of length "
                                             "batch_size"):
            tf.nn.dynamic_rnn(rnn_cell.GRUCell(2), x, [[1, 2, 3]], dtype=tf.float64)
        with pytest.raises(ValueError, match="Must specify at least one cell"):
            rnn_cell.MultiRNNCell([])
        with pytest.raises(ValueError, match="input_keep_prob must be between 0 and 1"):
            rnn_cell.DropoutWrapper(rnn_cell.GRUCell(2), input_keep_prob=1.5)
        cell = rnn_cell.BasicLSTMCell(2)
        tf.nn.dynamic_rnn(cell, x, dtype=tf.float64, scope="a")
        with pytest.raises(ValueError, match="basic_lstm_cell/kernel already exists"):
            tf.nn.dynamic_rnn(rnn_cell.BasicLSTMCell(2), x, dtype=tf.float64, scope="a")


_ORACLE_PROGRAM = textwrap.dedent("""
    import json, sys
    import numpy as np
    if sys.argv[1] == "tensorflow":
        import tensorflow.compat.v1 as tf
        tf.disable_eager_execution()
    else:
        import flowstone as tf
    rnn = tf.nn.rnn_cell
    x = tf.constant(np.random.RandomState(0).randn(3, 5, 4).astype(np.float32))
    lengths = np.array([5, 2, 3], np.int32)
    cells = {
        "basic_lstm": lambda: rnn.BasicLSTMCell(6, forget_bias=0.5),
        "lstm": lambda: rnn.LSTMCell(6, use_peepholes=True, num_proj=3, cell_clip=0.5,
                                     proj_clip=0.4),
        "gru": lambda: rnn.GRUCell(5),
        "multi": lambda: rnn.MultiRNNCell([rnn.BasicLSTMCell(3), rnn.GRUCell(4)]),
        "residual": lambda: rnn.ResidualWrapper(rnn.GRUCell(4)),
        "concat_state": lambda: rnn.BasicLSTMCell(3, state_is_tuple=False),
    }
    results = {}
    for key, make in cells.items():
        with tf.variable_scope(key):
            results[key] = tf.nn.dynamic_rnn(make(), x, lengths, dtype=tf.float32)
    with tf.variable_scope("variants"):
        results["time_major"] = tf.nn.dynamic_rnn(
            rnn.GRUCell(3), tf.transpose(x, [1, 0, 2]), lengths, dtype=tf.float32,
            time_major=True)
        results["static"] = tf.nn.static_rnn(rnn.BasicLSTMCell(3), tf.unstack(x, axis=1),
                                             dtype=tf.float32, sequence_length=lengths)
        results["bidirectional"] = tf.nn.bidirectional_dynamic_rnn(
            rnn.GRUCell(2), rnn.BasicLSTMCell(3), x, lengths, dtype=tf.float32)
        results["static_bidirectional"] = tf.nn.static_bidirectional_rnn(
            rnn.GRUCell(2), rnn.GRUCell(2), tf.unstack(x, axis=1), dtype=tf.float32,
            scope="static_bidirectional")
    flat = [t for v in results.values() for t in tf.nest.flatten(v)]
    loss = tf.add_n([tf.reduce_sum(tf.square(t)) for t in flat])
    variables = tf.trainable_variables()
    grads = tf.gradients(loss, variables)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for v in variables:
            seed = sum(map(ord, v.name)) % 1000
            value = np.random.RandomState(seed).uniform(-0.5, 0.5, v.shape.as_list())
            sess.run(v.assign(value.astype(np.float32)))
        values, grad_values = sess.run([flat, grads])
    print(json.dumps({"values": [np.asarray(a).tolist() for a in values],
                      "grads": [np.asarray(a).tolist() for a in grad_values],
                      "names": [v.name for v in variables]}))
""")


@pytest.mark.skipif(not HAVE_PEER, reason=SKIP_REASON)
def test_outputs_gradients_and_variable_names_match_tensorflow(tmp_path):
    script = tmp_path / "rnn_program.py"
    script.write_text(_ORACLE_PROGRAM)
    # TF 2.16+ provides tf.compat.v1.nn.rnn_cell only with the tf-keras package.
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", TF_USE_LEGACY_KERAS="1")

    def run(python, which):
        done = subprocess.run([python, str(script), which], capture_output=True, text=True,
                              env=env, timeout=600)
        if which == "tensorflow" and "not available with Keras 3" in done.stderr:
            pytest.skip("TensorFlow's rnn_cell needs tf-keras in the oracle's venv")
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.splitlines()[-1])

    ours = run(sys.executable, "flowstone")
    theirs = run(PEER_PYTHON, "tensorflow")
    assert ours["names"] == theirs["names"]
    for kind in ("values", "grads"):
        assert len(ours[kind]) == len(theirs[kind])
        for i, (a, b) in enumerate(zip(ours[kind], theirs[kind])):
            np.testing.assert_allclose(np.array(a), np.array(b), rtol=1e-4, atol=2e-5,
                                       err_msg=f"{kind}[{i}]")
