"""The fused LSTMs (tf.contrib.rnn.LSTMBlockCell, LSTMBlockFusedCell; ops LSTMBlockCell,
BlockLSTM, BlockLSTMV2 and their gradients): the same numbers as the unfused BasicLSTMCell with
the same weights, gradients against finite differences, TensorFlow's variable names and errors,
results independent of the thread count, and real TensorFlow's ops as the oracle."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import flowstone as tf
from flowstone.framework.ops import apply_op
from flowstone.ops.lstm_ops import block_lstm, lstm_block_cell
from gradient_check import check_gradients
from lstm_reference import IFCO, block_forward
from peers import HAVE_PEER, PEER_PYTHON, SKIP_REASON

RNG = np.random.RandomState(5)
X = RNG.randn(3, 5, 4)  # [batch, time, depth]
LENGTHS = np.array([5, 2, 0], np.int32)
UNITS = 3


def _assign_same_weights(sess, groups, seed=0):
    """Gives the variables at the same position of each group the same random values."""
    for k, variables in enumerate(zip(*groups)):
        value = np.random.RandomState(seed + k).uniform(-0.7, 0.7, variables[0].shape.as_list())
        for v in variables:
            sess.run(v.assign(value.astype(v.dtype.as_numpy_dtype)))


def _run_both(build_fused, dtype, lengths=None):
    """(fused results, BasicLSTMCell dynamic_rnn results) with the same weights."""
    with tf.Graph().as_default():
        x = tf.constant(X.astype(dtype))
        with tf.variable_scope("fused"):
            fused = build_fused(x)
        fused_vars = tf.trainable_variables()
        with tf.variable_scope("basic"):
            basic = tf.nn.dynamic_rnn(tf.nn.rnn_cell.BasicLSTMCell(UNITS), x, lengths,
                                      dtype=x.dtype)
        basic_vars = [v for v in tf.trainable_variables() if v not in fused_vars]
        fused_grads = tf.gradients(tf.reduce_sum(fused[0]) + tf.reduce_sum(fused[1].c),
                                   [x] + fused_vars)
        basic_grads = tf.gradients(tf.reduce_sum(basic[0]) + tf.reduce_sum(basic[1].c),
                                   [x] + basic_vars)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            _assign_same_weights(sess, [fused_vars, basic_vars])
            return sess.run([fused, fused_grads]), sess.run([basic, basic_grads])


@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-10), (np.float32, 1e-6)])
def test_lstm_block_cell_in_dynamic_rnn_matches_basic_lstm_cell(dtype, tol):
    ours, basic = _run_both(
        lambda x: tf.nn.dynamic_rnn(tf.contrib.rnn.LSTMBlockCell(UNITS), x, LENGTHS,
                                    dtype=x.dtype), dtype, LENGTHS)
    for got, want in zip(tf.nest.flatten(ours), tf.nest.flatten(basic)):
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("lengths", [None, LENGTHS])
def test_lstm_block_fused_cell_matches_basic_lstm_cell(lengths):
    def fused(x):
        outputs, state = tf.contrib.rnn.LSTMBlockFusedCell(UNITS)(
            tf.transpose(x, [1, 0, 2]), dtype=x.dtype, sequence_length=lengths)
        return tf.transpose(outputs, [1, 0, 2]), state

    ours, basic = _run_both(fused, np.float64, lengths)
    for got, want in zip(tf.nest.flatten(ours), tf.nest.flatten(basic)):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


def _cell_inputs(batch=2, depth=3, units=UNITS, time=None):
    rng = np.random.RandomState(11)
    x_shape = (batch, depth) if time is None else (time, batch, depth)
    return [rng.uniform(-1, 1, x_shape), rng.uniform(-1, 1, (batch, units)),
            rng.uniform(-1, 1, (batch, units)), rng.uniform(-0.8, 0.8, (depth + units, 4 * units)),
            rng.uniform(-0.5, 0.5, units), rng.uniform(-0.5, 0.5, units),
            rng.uniform(-0.5, 0.5, units), rng.uniform(-0.5, 0.5, 4 * units)]


@pytest.mark.parametrize("use_peephole", [False, True])
def test_lstm_block_cell_gradients_match_finite_differences(use_peephole):
    def build(*inputs):
        _, cs, _, _, _, _, h = lstm_block_cell(*inputs, forget_bias=0.7, cell_clip=-1.0,
                                               use_peephole=use_peephole)
        return tf.concat([cs, h], 1)

    wrt = list(range(8)) if use_peephole else [0, 1, 2, 3, 7]
    check_gradients(build, _cell_inputs(), wrt=wrt, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("op, seq_len_max", [("BlockLSTM", 4), ("BlockLSTM", 2),
                                             ("BlockLSTMV2", 3)])
def test_block_lstm_gradients_match_finite_differences(op, seq_len_max):
    def build(*inputs):
        seq_len = tf.constant(seq_len_max, tf.int64)
        outputs = apply_op(op, [seq_len] + list(inputs),
                           {"use_peephole": True, "cell_clip": 0.0}).outputs
        return tf.concat([outputs[1], outputs[6]], 2)

    check_gradients(build, _cell_inputs(time=4), wrt=list(range(8)), rtol=1e-6, atol=1e-8)


def test_dynamic_rnn_gradient_through_lstm_block_cells_matches_finite_differences():
    def build(x):
        cell = tf.nn.rnn_cell.MultiRNNCell([
            tf.contrib.rnn.LSTMBlockCell(UNITS, use_peephole=True),
            tf.contrib.rnn.LSTMBlockCell(2)])
        with tf.variable_scope("rnn", initializer=tf.random_uniform_initializer(-0.5, 0.5,
                                                                                 seed=3)):
            outputs, state = tf.nn.dynamic_rnn(cell, x, LENGTHS, dtype=tf.float64)
        return tf.concat([tf.reshape(outputs, [3, -1]), state[0].c, state[1].h], 1)

    check_gradients(build, [X], wrt=[0], rtol=1e-6, atol=1e-8)


def test_sequence_op_matches_numpy_and_v2_uses_keras_gate_order():
    inputs = _cell_inputs(time=4)
    with tf.Graph().as_default(), tf.Session() as sess:
        v1 = sess.run(block_lstm(3, *inputs, forget_bias=0.5, cell_clip=0.6))
        v2 = sess.run(apply_op("BlockLSTMV2", [tf.constant(3, tf.int64)] + inputs).outputs)
    # Float attrs are 32-bit, as in TensorFlow: cell_clip=0.6 clips at float32(0.6).
    clip = float(np.float32(0.6))
    for got, want in zip(v1, block_forward(3, *inputs, forget_bias=0.5, cell_clip=clip)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    for got, want in zip(v2, block_forward(3, *inputs, forget_bias=0.0, cell_clip=0.0,
                                           layout=IFCO)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert not np.any(v1[6][3]) and np.all(v1[6][2] != 0)


def test_float32_gate_math_is_accurate_over_the_whole_range():
    # float32 runs its own vectorized exp and tanh. With x = h_prev = 0 the pre-activations are
    # the bias exactly, so the bias and cs_prev sweep them from near 0 to saturation; the
    # reference is float64 numpy on the same float32 values.
    rng = np.random.RandomState(2)
    units = 64
    magnitudes = np.logspace(-5, 2.5, 4 * units)
    bias = (rng.permutation(magnitudes) * rng.choice([-1, 1], 4 * units)).astype(np.float32)
    cs_prev = (rng.permutation(magnitudes)[:units] * rng.choice([-1, 1], units) / 20)
    inputs = [np.zeros((1, 3)), cs_prev[None], np.zeros((1, units)),
              rng.uniform(-1, 1, (3 + units, 4 * units)), rng.uniform(-1, 1, units),
              rng.uniform(-1, 1, units), rng.uniform(-1, 1, units), bias]
    inputs = [a.astype(np.float32) for a in inputs]
    for peephole in (False, True):
        with tf.Graph().as_default(), tf.Session() as sess:
            got = sess.run(lstm_block_cell(*inputs, cell_clip=-1.0, use_peephole=peephole))
        want = block_forward(1, inputs[0][None].astype(np.float64),
                             *[a.astype(np.float64) for a in inputs[1:]], cell_clip=-1.0,
                             use_peephole=peephole)
        for g, w in zip(got, want):
            assert np.all(np.isfinite(g))
            np.testing.assert_allclose(g, w[0], rtol=1e-6, atol=1e-30)


def test_variable_names_are_tensorflows():
    with tf.Graph().as_default():
        x = tf.zeros([2, 5, 4])
        tf.nn.dynamic_rnn(tf.contrib.rnn.LSTMBlockCell(3, use_peephole=True), x, dtype=tf.float32)
        tf.contrib.rnn.LSTMBlockFusedCell(3)(tf.transpose(x, [1, 0, 2]), dtype=tf.float32)
        names = sorted(v.name for v in tf.trainable_variables())
    assert names == sorted(["rnn/lstm_cell/kernel:0", "rnn/lstm_cell/bias:0",
                            "rnn/lstm_cell/w_i_diag:0", "rnn/lstm_cell/w_f_diag:0",
                            "rnn/lstm_cell/w_o_diag:0", "lstm_fused_cell/kernel:0",
                            "lstm_fused_cell/bias:0"])


def test_bad_inputs_raise_tensorflow_errors():
    inputs = [a.astype(np.float32) for a in _cell_inputs()]
    with tf.Graph().as_default(), tf.Session() as sess:
        w = tf.placeholder(tf.float32, [None, 4 * UNITS])
        h = lstm_block_cell(inputs[0], inputs[1], inputs[2], w, *inputs[4:])[6]
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"w must have input_size \+ cell_size = 3 \+ 3 rows"):
            sess.run(h, {w: np.zeros((7, 4 * UNITS), np.float32)})
        seq = tf.placeholder(tf.int64, [])
        x = tf.constant(np.zeros((4, 2, 3), np.float32))
        out = block_lstm(seq, x, *inputs[1:])[6]
        with pytest.raises(tf.errors.InvalidArgumentError, match="seq_len_max must be >= 0"):
            sess.run(out, {seq: -1})
        assert sess.run(out, {seq: 2}).shape == (4, 2, UNITS)
        with pytest.raises(ValueError, match="4 \\* cell_size"):
            lstm_block_cell(inputs[0], inputs[1], inputs[2], np.zeros((6, 10), np.float32),
                            inputs[4], inputs[5], inputs[6], np.zeros(10, np.float32))
        with pytest.raises(ValueError, match="LSTMStateTuple"):
            tf.contrib.rnn.LSTMBlockCell(3)(tf.zeros([2, 3]), tf.zeros([2, 6]))
        with pytest.raises(ValueError, match="rank 3"):
            tf.contrib.rnn.LSTMBlockFusedCell(3)(tf.zeros([2, 3]), dtype=tf.float32)


_THREADS_PROGRAM = textwrap.dedent("""
    import sys
    import numpy as np
    import flowstone as tf
    tf.set_random_seed(1)
    rng = np.random.RandomState(0)
    x = tf.constant(rng.randn(30, 32, 48).astype(np.float32))
    cell = tf.contrib.rnn.LSTMBlockFusedCell(64, use_peephole=True)
    outputs, state = cell(x, dtype=tf.float32)
    step_cell = tf.contrib.rnn.LSTMBlockCell(64)
    step_outputs, _ = tf.nn.dynamic_rnn(step_cell, x, dtype=tf.float32, time_major=True)
    loss = tf.reduce_sum(outputs * outputs) + tf.reduce_sum(state.c) + tf.reduce_sum(step_outputs)
    grads = tf.gradients(loss, [x] + tf.trainable_variables())
    threads = int(sys.argv[1])
    config = tf.ConfigProto(intra_op_parallelism_threads=threads,
                            inter_op_parallelism_threads=threads)
    with tf.Session(config=config) as sess:
        sess.run(tf.global_variables_initializer())
        for value in sess.run([loss] + grads):
            print(np.asarray(value).tobytes().hex()[:64], float(np.sum(value)).hex())
""")


def test_results_do_not_depend_on_the_thread_count():
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")

    def run(threads):
        done = subprocess.run([sys.executable, "-c", _THREADS_PROGRAM, str(threads)],
                              capture_output=True, text=True, timeout=300, env=env)
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout

    one = run(1)
    assert one == run(2) == run(4)


_ORACLE_PROGRAM = textwrap.dedent("""
    import json, sys
    import numpy as np
    if sys.argv[1] == "tensorflow":
        import tensorflow.compat.v1 as tf
        tf.disable_eager_execution()
        def op(name, inputs, attrs):
            return getattr(tf.raw_ops, name)(**inputs, **attrs)
    else:
        import flowstone as tf
        from flowstone.framework.ops import apply_op
        def op(name, inputs, attrs):
            return apply_op(name, list(inputs.values()), attrs).outputs
    rng = np.random.RandomState(4)
    units, depth, batch, time = 5, 3, 4, 6
    def vec(*shape, scale=1.0):
        return tf.constant(rng.uniform(-scale, scale, shape).astype(np.float32))
    weights = dict(w=vec(depth + units, 4 * units), wci=vec(units, scale=0.5),
                   wcf=vec(units, scale=0.5), wco=vec(units, scale=0.5), b=vec(4 * units))
    cell_in = dict(x=vec(batch, depth), cs_prev=vec(batch, units), h_prev=vec(batch, units))
    results = []
    for attrs in (dict(forget_bias=1.0, cell_clip=-1.0, use_peephole=False),
                  dict(forget_bias=0.4, cell_clip=0.3, use_peephole=True)):
        results += list(op("LSTMBlockCell", {**cell_in, **weights}, attrs))
    seq_in = dict(x=vec(time, batch, depth), cs_prev=vec(batch, units), h_prev=vec(batch, units))
    for name, attrs in (("BlockLSTM", dict(forget_bias=0.6, cell_clip=-1.0, use_peephole=True)),
                        ("BlockLSTMV2", dict(cell_clip=0.0, use_peephole=True))):
        for seq_len in (time, 4):
            inputs = {"seq_len_max": tf.constant(seq_len, tf.int64), **seq_in, **weights}
            outputs = list(op(name, inputs, attrs))
            cs_grad, h_grad = vec(time, batch, units), vec(time, batch, units)
            if name == "BlockLSTM":
                loss = tf.reduce_sum(outputs[6] * h_grad) + tf.reduce_sum(outputs[1] * cs_grad)
                grads = tf.gradients(loss, list(inputs.values())[1:])
            else:
                # TensorFlow's registered gradient of BlockLSTMV2 runs BlockLSTMGrad, whose
                # gate order is V1's (docs/COMPAT.md): compare the gradient op itself.
                saved = dict(zip(["i", "cs", "f", "o", "ci", "co", "h"], outputs))
                grads = list(op("BlockLSTMGradV2", {**inputs, **saved, "cs_grad": cs_grad,
                                                    "h_grad": h_grad},
                                dict(use_peephole=True)))
            # Only cs and h: TensorFlow leaves the other outputs' steps past seq_len_max unset.
            results += [outputs[1], outputs[6]] + grads
    with tf.Session() as sess:
        print(json.dumps([v.tolist() for v in sess.run(results)]))
""")


@pytest.mark.skipif(not HAVE_PEER, reason=SKIP_REASON)
def test_outputs_and_gradients_match_tensorflows_ops(tmp_path):
    script = tmp_path / "lstm_program.py"
    script.write_text(_ORACLE_PROGRAM)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")

    def run(python, which):
        done = subprocess.run([python, str(script), which], capture_output=True, text=True,
                              env=env, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.splitlines()[-1])

    ours = run(sys.executable, "flowstone")
    theirs = run(PEER_PYTHON, "tensorflow")
    assert len(ours) == len(theirs) == 14 + 4 * 10
    for i, (a, b) in enumerate(zip(ours, theirs)):
        np.testing.assert_allclose(np.array(a), np.array(b), rtol=1e-5, atol=1e-5,
                                   err_msg=f"result {i}")
