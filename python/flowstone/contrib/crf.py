"""tf.contrib.crf: a linear-chain conditional random field over tag sequences (TF1 NER and
tagging models): sequence scores, the log partition function by the forward algorithm, the
log-likelihood to train with, and Viterbi decoding in numpy (viterbi_decode) and in the graph
(crf_decode). Sequences shorter than the batch's length are masked by `sequence_lengths`.

Composed from ops, as TensorFlow's own: the forward recursion and the decoding passes are RNN
cells run by tf.nn.dynamic_rnn, so the log-likelihood has gradients and runs in one graph.
"""

import numpy as np

import flowstone as tf
from flowstone.ops.rnn_cell_impl import RNNCell

__all__ = ["crf_sequence_score", "crf_unary_score", "crf_binary_score", "crf_log_norm",
           "crf_log_likelihood", "crf_multitag_sequence_score", "viterbi_decode", "crf_decode",
           "CrfForwardRnnCell", "CrfDecodeForwardRnnCell", "CrfDecodeBackwardRnnCell"]


def _positions_mask(sequence_lengths, max_length, dtype):
    return tf.sequence_mask(sequence_lengths, maxlen=max_length, dtype=dtype)


def crf_unary_score(tag_indices, sequence_lengths, inputs):
    """Sum over each sequence's positions of the chosen tag's potential: [batch]."""
    tag_indices = tf.convert_to_tensor(tag_indices, name="tag_indices")
    inputs = tf.convert_to_tensor(inputs, name="inputs")
    num_tags = tf.shape(inputs)[2]
    picked = tf.reduce_sum(
        inputs * tf.one_hot(tag_indices, num_tags, dtype=inputs.dtype), axis=2)
    mask = _positions_mask(sequence_lengths, tf.shape(inputs)[1], inputs.dtype)
    return tf.reduce_sum(picked * mask, axis=1)


def crf_binary_score(tag_indices, sequence_lengths, transition_params):
    """Sum over each sequence's consecutive tag pairs of the transition score: [batch]."""
    tag_indices = tf.convert_to_tensor(tag_indices, name="tag_indices")
    transition_params = tf.convert_to_tensor(transition_params, name="transition_params")
    num_tags = tf.shape(transition_params)[0]
    start_tags = tag_indices[:, :-1]
    end_tags = tag_indices[:, 1:]
    flat = tf.reshape(transition_params, [-1])
    pair_scores = tf.gather(flat, start_tags * num_tags + end_tags)
    num_pairs = tf.shape(tag_indices)[1] - 1
    mask = _positions_mask(tf.maximum(sequence_lengths - 1, 0), num_pairs,
                           transition_params.dtype)
    return tf.reduce_sum(pair_scores * mask, axis=1)


def crf_sequence_score(inputs, tag_indices, sequence_lengths, transition_params):
    """The unnormalized score of each tag sequence: [batch]."""
    inputs = tf.convert_to_tensor(inputs, name="inputs")
    unary = crf_unary_score(tag_indices, sequence_lengths, inputs)
    binary = crf_binary_score(tag_indices, sequence_lengths, transition_params)
    score = unary + binary
    # Empty sequences score 0.
    return tf.where_v2(sequence_lengths > 0, score, tf.zeros_like(score))


def crf_multitag_sequence_score(inputs, tag_bitmap, sequence_lengths, transition_params):
    """The log-sum of the scores of every tag sequence `tag_bitmap` [batch, time, tags] allows."""
    inputs = tf.convert_to_tensor(inputs, name="inputs")
    tag_bitmap = tf.convert_to_tensor(tag_bitmap, dtype=tf.bool, name="tag_bitmap")
    masked = tf.where_v2(tag_bitmap, inputs,
                                tf.fill(tf.shape(inputs),
                                               tf.constant(-np.inf, inputs.dtype)))
    return crf_log_norm(masked, sequence_lengths, transition_params)


class CrfForwardRnnCell(RNNCell):
    """One step of the forward algorithm: alphas_t = x_t + logsumexp_i(alphas_{t-1, i} + T_ij)."""

    def __init__(self, transition_params):
        super().__init__()
        self._transition_params = tf.expand_dims(transition_params, 0)
        self._num_tags = transition_params.shape[0]

    @property
    def state_size(self):
        return self._num_tags

    @property
    def output_size(self):
        return self._num_tags

    def __call__(self, inputs, state, scope=None):
        scores = tf.expand_dims(state, 2) + self._transition_params
        new_alphas = inputs + tf.reduce_logsumexp(scores, axis=1)
        return new_alphas, new_alphas


def crf_log_norm(inputs, sequence_lengths, transition_params):
    """log Z: the log-sum over every tag sequence of its score, per sequence: [batch]."""
    inputs = tf.convert_to_tensor(inputs, name="inputs")
    transition_params = tf.convert_to_tensor(transition_params, dtype=inputs.dtype,
                                               name="transition_params")
    sequence_lengths = tf.convert_to_tensor(sequence_lengths, name="sequence_lengths")
    first = inputs[:, 0, :]
    if inputs.shape[1] == 1:
        log_norm = tf.reduce_logsumexp(first, axis=1)
    else:
        _, alphas = tf.nn.dynamic_rnn(CrfForwardRnnCell(transition_params), inputs[:, 1:, :],
                                    sequence_length=tf.maximum(sequence_lengths - 1, 0),
                                    initial_state=first, dtype=inputs.dtype)
        log_norm = tf.reduce_logsumexp(alphas, axis=1)
    return tf.where_v2(sequence_lengths > 0, log_norm, tf.zeros_like(log_norm))


def crf_log_likelihood(inputs, tag_indices, sequence_lengths, transition_params=None):
    """(log-likelihood of each tag sequence [batch], the transition matrix). Without
    `transition_params`, a [tags, tags] variable "transitions" is made with get_variable."""
    inputs = tf.convert_to_tensor(inputs, name="inputs")
    num_tags = inputs.shape[2]
    if transition_params is None:
        transition_params = tf.get_variable("transitions", [num_tags, num_tags],
                                                        dtype=inputs.dtype)
    sequence_scores = crf_sequence_score(inputs, tag_indices, sequence_lengths,
                                         transition_params)
    log_norm = crf_log_norm(inputs, sequence_lengths, transition_params)
    return sequence_scores - log_norm, transition_params


def viterbi_decode(score, transition_params):
    """(the highest scoring tag sequence as a list, its score) for one [time, tags] array."""
    score = np.asarray(score)
    transition_params = np.asarray(transition_params)
    trellis = np.zeros_like(score)
    backpointers = np.zeros_like(score, dtype=np.int32)
    trellis[0] = score[0]
    for t in range(1, score.shape[0]):
        candidates = np.expand_dims(trellis[t - 1], 1) + transition_params
        trellis[t] = score[t] + np.max(candidates, 0)
        backpointers[t] = np.argmax(candidates, 0)
    viterbi = [int(np.argmax(trellis[-1]))]
    for pointers in reversed(backpointers[1:]):
        viterbi.append(int(pointers[viterbi[-1]]))
    viterbi.reverse()
    return viterbi, float(np.max(trellis[-1]))


class CrfDecodeForwardRnnCell(RNNCell):
    """One Viterbi step: the best score of each tag so far, and which previous tag gave it."""

    def __init__(self, transition_params):
        super().__init__()
        self._transition_params = tf.expand_dims(transition_params, 0)
        self._num_tags = transition_params.shape[0]

    @property
    def state_size(self):
        return self._num_tags

    @property
    def output_size(self):
        return self._num_tags

    def __call__(self, inputs, state, scope=None):
        candidates = tf.expand_dims(state, 2) + self._transition_params
        new_state = inputs + tf.reduce_max(candidates, axis=1)
        backpointers = tf.cast(tf.argmax(candidates, axis=1), tf.int32)
        return backpointers, new_state


class CrfDecodeBackwardRnnCell(RNNCell):
    """One step back through the backpointers, from the best last tag."""

    def __init__(self, num_tags):
        super().__init__()
        self._num_tags = num_tags

    @property
    def state_size(self):
        return 1

    @property
    def output_size(self):
        return 1

    def __call__(self, inputs, state, scope=None):
        state = tf.squeeze(state, axis=1)
        batch = tf.shape(inputs)[0]
        index = tf.stack([tf.range(batch), state], axis=1)
        new_tags = tf.expand_dims(tf.gather_nd(inputs, index), -1)
        return new_tags, new_tags


def crf_decode(potentials, transition_params, sequence_length):
    """(the best tag sequences [batch, time] int32, their scores [batch]), in the graph."""
    potentials = tf.convert_to_tensor(potentials, name="potentials")
    transition_params = tf.convert_to_tensor(transition_params, dtype=potentials.dtype,
                                               name="transition_params")
    sequence_length = tf.cast(sequence_length, tf.int32)
    first = potentials[:, 0, :]
    if potentials.shape[1] == 1:
        return (tf.expand_dims(tf.cast(tf.argmax(first, axis=1),
                                                    tf.int32), 1),
                tf.reduce_max(first, axis=1))
    num_tags = transition_params.shape[0]
    steps = tf.maximum(sequence_length - 1, 0)
    backpointers, last_score = tf.nn.dynamic_rnn(
        CrfDecodeForwardRnnCell(transition_params), potentials[:, 1:, :], sequence_length=steps,
        initial_state=first, dtype=tf.int32)
    backpointers = tf.reverse_sequence(backpointers, steps, seq_axis=1)
    best_last = tf.cast(tf.argmax(last_score, axis=1), tf.int32)
    decode, _ = tf.nn.dynamic_rnn(CrfDecodeBackwardRnnCell(num_tags), backpointers,
                                sequence_length=steps,
                                initial_state=tf.expand_dims(best_last, -1),
                                dtype=tf.int32)
    decode = tf.squeeze(decode, axis=2)
    decode = tf.concat([tf.expand_dims(best_last, 1), decode], axis=1)
    decode = tf.reverse_sequence(decode, sequence_length, seq_axis=1)
    return decode, tf.reduce_max(last_score, axis=1)

