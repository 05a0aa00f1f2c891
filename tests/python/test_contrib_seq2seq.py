"""tf.contrib.seq2seq decoding and attention: dynamic_decode with TrainingHelper equals the same
cell run by dynamic_rnn; greedy decoding stops at the end token or maximum_iterations; Bahdanau
and Luong alignments against numpy, masked by memory lengths; AttentionWrapper's variables
carry TF1's names; and an attention model learns to reverse sequences."""

import numpy as np
import pytest

import flowstone as tf

s2s = tf.contrib.seq2seq
RNG = np.random.default_rng(3)


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def test_training_decode_equals_dynamic_rnn():
    x = tf.constant(RNG.normal(size=(2, 5, 3)), tf.float32)
    lengths = tf.constant([5, 3])
    cell = tf.nn.rnn_cell.BasicLSTMCell(4)
    projection = tf.layers.Dense(6, name="projection")
    decoder = s2s.BasicDecoder(cell, s2s.TrainingHelper(x, lengths),
                               cell.zero_state(2, tf.float32), output_layer=projection)
    outputs, state, decoded_lengths = s2s.dynamic_decode(decoder, impute_finished=True)
    with tf.variable_scope("decoder", reuse=True):
        rnn_out, rnn_state = tf.nn.dynamic_rnn(cell, x, sequence_length=lengths,
                                               dtype=tf.float32)
    expected = projection(rnn_out)
    assert sorted(v.name for v in tf.global_variables()) == [
        "decoder/basic_lstm_cell/bias:0", "decoder/basic_lstm_cell/kernel:0",
        "decoder/projection/bias:0", "decoder/projection/kernel:0"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got, want, ids, n, h, h_rnn = sess.run([outputs.rnn_output, expected, outputs.sample_id,
                                                decoded_lengths, state.h, rnn_state.h])
    np.testing.assert_array_equal(n, [5, 3])
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1, :3], want[1, :3], rtol=1e-5, atol=1e-6)
    assert np.all(got[1, 3:] == 0)  # impute_finished zeroes what follows the end
    np.testing.assert_array_equal(ids, np.argmax(got, -1) * (got.any(-1)))
    np.testing.assert_allclose(h, h_rnn, rtol=1e-5, atol=1e-6)


def test_greedy_decoding_stops_at_the_end_token_or_the_limit():
    vocab, end = 5, 4
    embedding = tf.constant(np.eye(vocab), tf.float32)
    cell = tf.nn.rnn_cell.BasicRNNCell(vocab, activation=tf.identity)
    # The output layer makes the next token (previous + 1): token k's embedding is e_k and
    # the cell (no recurrence, identity weights) passes it on.
    helper = s2s.GreedyEmbeddingHelper(embedding, start_tokens=[0, 2], end_token=end)
    shift = np.roll(np.eye(vocab), 1, axis=1).astype(np.float32) * 10.0
    layer = tf.layers.Dense(vocab, use_bias=False, kernel_initializer=tf.constant_initializer(
        shift))
    decoder = s2s.BasicDecoder(cell, helper, cell.zero_state(2, tf.float32), output_layer=layer)
    outputs, _, lengths = s2s.dynamic_decode(decoder, maximum_iterations=10)
    capped, _, capped_lengths = s2s.dynamic_decode(decoder, maximum_iterations=2,
                                                   scope="decoder")
    with tf.Session() as sess:
        kernel, bias = [v for v in tf.global_variables() if "basic_rnn_cell" in v.name]
        sess.run(tf.global_variables_initializer())
        sess.run([kernel.assign(np.vstack([np.eye(vocab), np.zeros((vocab, vocab))])),
                  bias.assign(np.zeros(vocab))])
        ids, n, capped_ids, capped_n = sess.run([outputs.sample_id, lengths,
                                                 capped.sample_id, capped_lengths])
    np.testing.assert_array_equal(ids[0], [1, 2, 3, 4])
    np.testing.assert_array_equal(ids[1, :2], [3, 4])
    np.testing.assert_array_equal(n, [4, 2])
    np.testing.assert_array_equal(capped_ids, [[1, 2], [3, 4]])
    np.testing.assert_array_equal(capped_n, [2, 2])


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize("kind", ["bahdanau", "luong"])
def test_alignments_against_numpy_with_memory_masking(kind):
    memory = RNG.normal(size=(2, 4, 3)).astype(np.float32)
    query = RNG.normal(size=(2, 5)).astype(np.float32)
    lengths = np.array([4, 2], np.int32)
    if kind == "bahdanau":
        mechanism = s2s.BahdanauAttention(5, memory, memory_sequence_length=lengths)
    else:
        mechanism = s2s.LuongAttention(5, memory, memory_sequence_length=lengths)
    alignments, _ = mechanism(tf.constant(query), state=None)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = sess.run(alignments)
        values = {v.name: sess.run(v) for v in tf.global_variables()}
    masked = memory * (np.arange(4)[None, :] < lengths[:, None])[..., None]
    keys = masked @ values["memory_layer/kernel:0"]
    if kind == "bahdanau":
        processed = query @ values["bahdanau_attention/query_layer/kernel:0"]
        v = values["bahdanau_attention/attention_v:0"]
        score = np.tanh(keys + processed[:, None, :]) @ v
    else:
        score = np.einsum("bu,btu->bt", query, keys)
    score = np.where(np.arange(4)[None, :] < lengths[:, None], score, -np.inf)
    np.testing.assert_allclose(got, _softmax(score), rtol=1e-5, atol=1e-6)
    assert np.all(got[1, 2:] == 0)


def test_attention_wrapper_step_and_variable_names():
    memory = tf.constant(RNG.normal(size=(2, 4, 3)), tf.float32)
    mechanism = s2s.LuongAttention(6, memory, memory_sequence_length=[4, 3], scale=True)
    cell = s2s.AttentionWrapper(tf.nn.rnn_cell.GRUCell(6), mechanism, attention_layer_size=5,
                                alignment_history=True)
    assert cell.output_size == 5
    state = cell.zero_state(2, tf.float32)
    inputs = tf.constant(RNG.normal(size=(2, 7, 2)), tf.float32)
    decoder = s2s.BasicDecoder(cell, s2s.TrainingHelper(inputs, [7, 7]), state)
    outputs, final_state, _ = s2s.dynamic_decode(decoder)
    history = final_state.alignment_history.stack()
    names = sorted(v.name for v in tf.global_variables())
    assert "memory_layer/kernel:0" in names
    assert "decoder/attention_wrapper/attention_layer/kernel:0" in names
    assert "decoder/attention_wrapper/luong_attention/attention_g:0" in names
    assert any(n.startswith("decoder/attention_wrapper/gru_cell/") for n in names)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out, alignments, t = sess.run([outputs.rnn_output, history, final_state.time])
    assert out.shape == (2, 7, 5) and t == 7
    assert alignments.shape == (7, 2, 4)
    np.testing.assert_allclose(alignments.sum(-1), 1.0, rtol=1e-5)
    assert np.all(alignments[:, 1, 3] == 0)  # past the second memory's length


def test_tile_batch_repeats_each_entry_in_place():
    t = tf.constant([[1, 2], [3, 4]])
    nested = s2s.tile_batch({"a": t, "b": tf.constant([5, 6])}, 3)
    with tf.Session() as sess:
        out = sess.run(nested)
    np.testing.assert_array_equal(out["a"], [[1, 2]] * 3 + [[3, 4]] * 3)
    np.testing.assert_array_equal(out["b"], [5, 5, 5, 6, 6, 6])
    assert nested["a"].shape.as_list() == [6, 2]


def test_an_attention_model_learns_to_reverse_sequences():
    vocab, length, batch = 6, 4, 32
    start = vocab  # a go token outside the vocabulary
    data = RNG.integers(0, vocab, size=(batch, length))
    target = data[:, ::-1]
    decoder_in = np.concatenate([np.full((batch, 1), start), target[:, :-1]], axis=1)
    embedding = tf.compat.v1.get_variable("embedding", [vocab + 1, 16])
    encoded, _ = tf.nn.dynamic_rnn(tf.nn.rnn_cell.GRUCell(32, name="encoder"),
                                   tf.nn.embedding_lookup(embedding, data), dtype=tf.float32)
    mechanism = s2s.BahdanauAttention(32, encoded)
    cell = s2s.AttentionWrapper(tf.nn.rnn_cell.GRUCell(32), mechanism, attention_layer_size=32)
    helper = s2s.TrainingHelper(tf.nn.embedding_lookup(embedding, decoder_in),
                                tf.fill([batch], length))
    decoder = s2s.BasicDecoder(cell, helper, cell.zero_state(batch, tf.float32),
                               output_layer=tf.layers.Dense(vocab))
    outputs, _, _ = s2s.dynamic_decode(decoder)
    loss = s2s.sequence_loss(outputs.rnn_output, tf.constant(target, tf.int32),
                             tf.ones([batch, length]))
    train = tf.train.AdamOptimizer(0.02).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.compat.v1.global_variables_initializer())
        first = sess.run(loss)
        for _ in range(150):
            sess.run(train)
        last, ids = sess.run([loss, outputs.sample_id])
    assert first > 1.5 and last < 0.2
    assert (ids == target).mean() > 0.95


# --- beam search ------------------------------------------------------------------------------
VOCAB, END = 5, 4
BIGRAM = RNG.normal(size=(VOCAB, VOCAB)).astype(np.float32) * 2.0


def _bigram_decoder(make_decoder):
    """A decoder whose logits depend on the previous token only: BIGRAM[previous]."""
    embedding = tf.constant(np.eye(VOCAB), tf.float32)
    cell = tf.nn.rnn_cell.BasicRNNCell(VOCAB, activation=tf.identity)
    layer = tf.layers.Dense(VOCAB, use_bias=False,
                            kernel_initializer=tf.constant_initializer(BIGRAM))
    decoder = make_decoder(cell, embedding, layer)
    return decoder, cell


def _run_decoder(decoder, max_steps):
    outputs, state, lengths = s2s.dynamic_decode(decoder, maximum_iterations=max_steps)
    with tf.Session() as sess:
        kernel, bias = [v for v in tf.global_variables() if "basic_rnn_cell" in v.name]
        sess.run(tf.global_variables_initializer())
        sess.run([kernel.assign(np.vstack([np.eye(VOCAB), np.zeros((VOCAB, VOCAB))])),
                  bias.assign(np.zeros(VOCAB))])
        return sess.run([outputs, state, lengths])


def _reference_beam_search(start, beam, steps, penalty=0.0):
    """TensorFlow's beam search on the bigram model, in numpy."""
    log_softmax = BIGRAM - np.log(np.exp(BIGRAM).sum(1, keepdims=True))
    beams = [([start], 0.0, False, 0)] + [([start], -np.inf, True, 0)] * (beam - 1)
    for t in range(steps):
        candidates = []
        for index, (seq, logp, finished, length) in enumerate(beams):
            for word in range(VOCAB):
                if finished:
                    step = 0.0 if word == END else np.finfo(np.float32).min
                else:
                    step = log_softmax[seq[-1], word]
                new_len = length + (0 if finished or word == END else 1)
                score = (logp + step) / (((5.0 + new_len) / 6.0) ** penalty if penalty else 1.0)
                candidates.append((score, index, word, logp + step))
            if t == 0:
                break  # only the first beam's continuations at the first step
        candidates.sort(key=lambda c: -c[0])
        new = []
        for score, index, word, logp in candidates[:beam]:
            seq, _, finished, length = beams[index]
            new.append((seq + [word], logp, finished or word == END,
                        length + (0 if finished else 1)))
        beams = new
        if all(b[2] for b in beams):
            break
    return beams


def test_gather_tree_follows_parents_and_pads_with_end_token():
    ids = np.array([[[1, 2, 3], [4, 5, 6]], [[7, 8, 9], [10, 11, 12]],
                    [[13, 14, 15], [16, 17, 18]]], np.int32)
    parents = np.array([[[0, 0, 0], [0, 0, 0]], [[2, 1, 0], [1, 1, 2]],
                        [[0, 2, 1], [0, 0, 0]]], np.int32)
    beams = s2s.gather_tree(ids, parents, [3, 2], end_token=10)
    with tf.Session() as sess:
        out = sess.run(beams)
    np.testing.assert_array_equal(out[:, 0, :], [[3, 1, 2], [7, 9, 8], [13, 14, 15]])
    np.testing.assert_array_equal(out[:, 1, :], [[5, 5, 6], [10, 11, 12], [10, 10, 10]])
    with pytest.raises(tf.errors.InvalidArgumentError, match="invalid parent id 7"):
        with tf.Session() as sess:
            sess.run(s2s.gather_tree(ids, np.full_like(parents, 7), [3, 3], end_token=10))


def test_beam_width_one_is_greedy_decoding():
    greedy, _ = _bigram_decoder(lambda cell, emb, layer: s2s.BasicDecoder(
        cell, s2s.GreedyEmbeddingHelper(emb, [0, 1], END), cell.zero_state(2, tf.float32),
        output_layer=layer))
    greedy_out, _, greedy_lengths = _run_decoder(greedy, 6)
    tf.reset_default_graph()
    beam, _ = _bigram_decoder(lambda cell, emb, layer: s2s.BeamSearchDecoder(
        cell, emb, [0, 1], END, cell.zero_state(2, tf.float32), beam_width=1,
        output_layer=layer))
    beam_out, _, _ = _run_decoder(beam, 6)
    ids = beam_out.predicted_ids[:, :, 0]
    for b, length in enumerate(greedy_lengths):  # greedy goes on decoding after its end token
        np.testing.assert_array_equal(ids[b, :length], greedy_out.sample_id[b, :length])


@pytest.mark.parametrize("penalty", [0.0, 0.6])
def test_beam_search_equals_the_reference(penalty):
    beam_width, steps = 3, 5
    decoder, _ = _bigram_decoder(lambda cell, emb, layer: s2s.BeamSearchDecoder(
        cell, emb, [2], END, s2s.tile_batch(cell.zero_state(1, tf.float32), beam_width),
        beam_width=beam_width, output_layer=layer, length_penalty_weight=penalty))
    outputs, state, _ = _run_decoder(decoder, steps)
    reference = _reference_beam_search(2, beam_width, steps, penalty)
    for k, (seq, logp, finished, length) in enumerate(reference):
        got = list(outputs.predicted_ids[0, :, k])
        want = seq[1:]
        assert got[:len(want)] == want
        assert all(token == END for token in got[len(want):])
        np.testing.assert_allclose(state.log_probs[0, k], logp, rtol=1e-5)
        assert state.lengths[0, k] == length
