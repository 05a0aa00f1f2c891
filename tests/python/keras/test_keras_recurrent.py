"""Recurrent layers against numpy implementations of Keras's cells, with masks, states,
Bidirectional and TimeDistributed."""

import numpy as np
import pytest

import flowstone as tf

keras = tf.keras
RNG = np.random.RandomState(0)


def sigmoid(v):
    return 1 / (1 + np.exp(-v))


def predict(layer, x):
    inputs = keras.Input(x.shape[1:], dtype="int32" if x.dtype.kind == "i" else "float32")
    out = layer(inputs)
    return keras.Model(inputs, out).predict(x, verbose=0)


def simple_rnn_ref(x, kernel, recurrent, bias):
    h = np.zeros((x.shape[0], kernel.shape[1]))
    outputs = []
    for t in range(x.shape[1]):
        h = np.tanh(x[:, t] @ kernel + h @ recurrent + bias)
        outputs.append(h)
    return np.stack(outputs, 1)


def lstm_ref(x, kernel, recurrent, bias):
    units = recurrent.shape[0]
    h = np.zeros((x.shape[0], units))
    c = np.zeros_like(h)
    outputs = []
    for t in range(x.shape[1]):
        z = x[:, t] @ kernel + h @ recurrent + bias
        i, f, g, o = (z[:, k * units:(k + 1) * units] for k in range(4))
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        h = sigmoid(o) * np.tanh(c)
        outputs.append(h)
    return np.stack(outputs, 1), h, c


def gru_ref(x, kernel, recurrent, bias):
    units = recurrent.shape[0]
    h = np.zeros((x.shape[0], units))
    outputs = []
    for t in range(x.shape[1]):
        xs = x[:, t] @ kernel + bias[0]
        inner = h @ recurrent + bias[1]
        z = sigmoid(xs[:, :units] + inner[:, :units])
        r = sigmoid(xs[:, units:2 * units] + inner[:, units:2 * units])
        hh = np.tanh(xs[:, 2 * units:] + r * inner[:, 2 * units:])
        h = z * h + (1 - z) * hh
        outputs.append(h)
    return np.stack(outputs, 1)


X = RNG.rand(3, 5, 4).astype(np.float32)


def test_simple_rnn_sequences():
    layer = keras.layers.SimpleRNN(6, return_sequences=True)
    got = predict(layer, X)
    np.testing.assert_allclose(got, simple_rnn_ref(X, *layer.get_weights()), rtol=1e-4,
                               atol=1e-5)
    assert [w.name for w in layer.weights] == ["simple_rnn/simple_rnn_cell/kernel:0",
                                               "simple_rnn/simple_rnn_cell/recurrent_kernel:0",
                                               "simple_rnn/simple_rnn_cell/bias:0"]


def test_lstm_last_output_and_states():
    layer = keras.layers.LSTM(5, return_state=True)
    inputs = keras.Input((5, 4))
    model = keras.Model(inputs, layer(inputs))
    out, h, c = model.predict(X, verbose=0)
    kernel, recurrent, bias = layer.get_weights()
    np.testing.assert_allclose(bias[5:10], np.ones(5))  # unit_forget_bias
    _, want_h, want_c = lstm_ref(X, kernel, recurrent, bias)
    np.testing.assert_allclose(out, want_h, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(h, want_h, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(c, want_c, rtol=1e-4, atol=1e-5)


def test_recurrent_kernel_is_orthogonal():
    layer = keras.layers.SimpleRNN(6)
    predict(layer, X)
    recurrent = layer.get_weights()[1]
    np.testing.assert_allclose(recurrent @ recurrent.T, np.eye(6), atol=1e-5)


def test_gru_reset_after():
    layer = keras.layers.GRU(3, return_sequences=True)
    got = predict(layer, X)
    kernel, recurrent, bias = layer.get_weights()
    assert bias.shape == (2, 9)
    np.testing.assert_allclose(got, gru_ref(X, kernel, recurrent, bias), rtol=1e-4, atol=1e-5)


def test_go_backwards_reads_the_sequence_reversed():
    layer = keras.layers.SimpleRNN(2, go_backwards=True)
    got = predict(layer, X)
    np.testing.assert_allclose(got, simple_rnn_ref(X[:, ::-1], *layer.get_weights())[:, -1],
                               rtol=1e-4, atol=1e-5)


def test_embedding_mask_carries_state_over_padding():
    ids = np.array([[3, 1, 0, 0], [2, 4, 1, 0]], np.int32)
    inputs = keras.Input((4,), dtype="int32")
    embedding = keras.layers.Embedding(5, 3, mask_zero=True)
    rnn = keras.layers.SimpleRNN(2, return_sequences=True)
    model = keras.Model(inputs, rnn(embedding(inputs)))
    got = model.predict(ids, verbose=0)
    (table,) = embedding.get_weights()
    full = simple_rnn_ref(table[ids], *rnn.get_weights())
    np.testing.assert_allclose(got[0, :2], full[0, :2], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[0, 2], got[0, 1])   # masked: the last output repeats
    np.testing.assert_allclose(got[0, 3], got[0, 1])
    np.testing.assert_allclose(got[1, :3], full[1, :3], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[1, 3], got[1, 2])


def test_bidirectional_concat_and_time_distributed():
    layer = keras.layers.Bidirectional(keras.layers.SimpleRNN(2, return_sequences=True))
    got = predict(layer, X)
    fk, fr, fb, bk, br, bb = layer.get_weights()
    forward = simple_rnn_ref(X, fk, fr, fb)
    backward = simple_rnn_ref(X[:, ::-1], bk, br, bb)[:, ::-1]
    np.testing.assert_allclose(got, np.concatenate([forward, backward], -1), rtol=1e-4,
                               atol=1e-5)
    assert [lay.name for lay in (layer.forward_layer, layer.backward_layer)] == [
        "forward_simple_rnn", "backward_simple_rnn"]
    dense = keras.layers.Dense(3)
    got = predict(keras.layers.TimeDistributed(dense), X)
    kernel, bias = dense.get_weights()
    np.testing.assert_allclose(got, X @ kernel + bias, rtol=1e-5, atol=1e-6)


def test_lstm_trains_and_round_trips_its_config():
    rng = np.random.RandomState(3)
    x = rng.rand(64, 6, 2).astype(np.float32)
    y = x[:, :, 0].sum(1, keepdims=True)
    model = keras.Sequential([keras.layers.LSTM(8), keras.layers.Dense(1)])
    model.compile(keras.optimizers.Adam(0.02), "mse")
    history = model.fit(x, y, epochs=15, batch_size=16, verbose=0)
    assert history.history["loss"][-1] < 0.2 * history.history["loss"][0]
    config = model.layers[0].get_config()
    assert config["units"] == 8 and config["return_sequences"] is False
    clone = keras.layers.LSTM.from_config(config)
    assert clone.units == 8


def test_unknown_timesteps_is_a_clear_error():
    with pytest.raises(ValueError, match="needs a known number of timesteps"):
        keras.layers.LSTM(2)(keras.Input((None, 3)))


@pytest.mark.parametrize("go_backwards", [False, True])
def test_lstm_runs_as_one_fused_op_with_the_unrolled_cells_results(go_backwards):
    # LSTM runs BlockLSTMV2 (one op for the sequence); RNN.call unrolls the same cell.
    with tf.Graph().as_default():
        x = tf.constant(RNG.randn(3, 6, 4))
        layer = keras.layers.LSTM(5, return_sequences=True, return_state=True,
                                  go_backwards=go_backwards, dtype="float64")
        fused = layer(x)
        unrolled = keras.layers.RNN.call(layer, x)
        ops = [op.type for op in tf.get_default_graph().get_operations()]
        assert ops.count("BlockLSTMV2") == 1
        weights = layer.trainable_weights
        grads = [tf.gradients(tf.reduce_sum(out[0] * out[0]) + tf.reduce_sum(out[2]),
                              [x] + weights) for out in (fused, unrolled)]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got, want = sess.run([fused, unrolled])
            got_grads, want_grads = sess.run(grads)
    for g, w in zip(got + got_grads, want + want_grads):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-10)
