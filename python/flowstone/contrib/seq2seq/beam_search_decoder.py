"""tf.contrib.seq2seq.BeamSearchDecoder and gather_tree: beam search over an RNN cell with
TensorFlow 1's scoring (log probabilities summed, finished beams extended only by end_token at no
cost, Google NMT's length penalty ((5 + length) / 6) ** weight), so a decoder written for TF1
decodes the same sequences. The cell's initial state must be tiled to batch * beam_width
(tile_batch), as in TensorFlow."""

import collections

import flowstone as tf
from flowstone.contrib.seq2seq.basic_decoder import Decoder, _embedding_fn

__all__ = ["BeamSearchDecoder", "BeamSearchDecoderState", "BeamSearchDecoderOutput",
           "FinalBeamSearchDecoderOutput", "gather_tree"]


class BeamSearchDecoderState(collections.namedtuple("BeamSearchDecoderState", (
        "cell_state", "log_probs", "finished", "lengths", "accumulated_attention_probs"))):
    pass


class BeamSearchDecoderOutput(collections.namedtuple("BeamSearchDecoderOutput", (
        "scores", "predicted_ids", "parent_ids"))):
    pass


class FinalBeamSearchDecoderOutput(collections.namedtuple("FinalBeamDecoderOutput", (
        "predicted_ids", "beam_search_decoder_output"))):
    """predicted_ids [batch, time, beam] (time-major: [time, batch, beam]): the beams read back
    through their parents, best first."""


def gather_tree(step_ids, parent_ids, max_sequence_lengths, end_token, name=None):
    """The full sequences of each beam ([time, batch, beam]), from each step's ids and parents."""
    with tf.name_scope(name, "GatherTree"):
        step_ids = tf.convert_to_tensor(step_ids, name="step_ids")
        return tf.raw_ops.GatherTree(
            step_ids=step_ids, parent_ids=tf.cast(parent_ids, step_ids.dtype),
            max_sequence_lengths=tf.cast(max_sequence_lengths, tf.int32),
            end_token=tf.cast(end_token, step_ids.dtype))


def _length_penalty(lengths, weight):
    if not weight:
        return 1.0
    return tf.pow((5.0 + tf.cast(lengths, tf.float32)) / 6.0, weight)


class BeamSearchDecoder(Decoder):
    """Keeps the beam_width best partial sequences of each batch entry."""

    def __init__(self, cell, embedding, start_tokens, end_token, initial_state, beam_width,
                 output_layer=None, length_penalty_weight=0.0, coverage_penalty_weight=0.0,
                 reorder_tensor_arrays=True):
        if coverage_penalty_weight:
            raise NotImplementedError("BeamSearchDecoder(coverage_penalty_weight=...) is not "
                                      "implemented in Flowstone")
        self._cell = cell
        self._output_layer = output_layer
        self._embedding_fn = _embedding_fn(embedding)
        self._start_tokens = tf.convert_to_tensor(start_tokens, dtype=tf.int32,
                                                  name="start_tokens")
        if self._start_tokens.shape.rank != 1:
            raise ValueError("start_tokens must be a vector")
        self._end_token = tf.convert_to_tensor(end_token, dtype=tf.int32, name="end_token")
        if self._end_token.shape.rank != 0:
            raise ValueError("end_token must be a scalar")
        self._batch_size = tf.size(self._start_tokens)
        self._beam_width = beam_width
        self._length_penalty_weight = length_penalty_weight
        self._initial_cell_state = tf.nest.map_structure(self._split_batch_beams,
                                                         initial_state)
        self._start_tokens = tf.tile(tf.expand_dims(self._start_tokens, 1), [1, beam_width])
        self._start_inputs = self._embedding_fn(self._start_tokens)
        self._finished = tf.one_hot(tf.zeros([self._batch_size], tf.int32), depth=beam_width,
                                    on_value=False, off_value=True, dtype=tf.bool)

    @property
    def batch_size(self):
        return self._batch_size

    @property
    def tracks_own_finished(self):
        return True

    def _vocab_size(self):
        size = self._cell.output_size if self._output_layer is None else (
            self._output_layer.units)
        return size

    @property
    def output_size(self):
        return BeamSearchDecoderOutput(scores=tf.TensorShape([self._beam_width]),
                                       predicted_ids=tf.TensorShape([self._beam_width]),
                                       parent_ids=tf.TensorShape([self._beam_width]))

    @property
    def output_dtype(self):
        dtype = tf.nest.flatten(self._initial_cell_state)[0].dtype
        return BeamSearchDecoderOutput(scores=dtype, predicted_ids=tf.int32,
                                       parent_ids=tf.int32)

    # [batch * beam, ...] <-> [batch, beam, ...]
    def _split_batch_beams(self, t):
        t = tf.convert_to_tensor(t)
        if t.shape.rank is None or t.shape.rank < 1:
            return t
        return tf.reshape(t, tf.concat([[self._batch_size, self._beam_width],
                                        tf.shape(t)[1:]], 0))

    def _merge_batch_beams(self, t):
        if t.shape.rank is None or t.shape.rank < 2:
            return t
        return tf.reshape(t, tf.concat([[self._batch_size * self._beam_width],
                                        tf.shape(t)[2:]], 0))

    def initialize(self, name=None):
        dtype = tf.nest.flatten(self._initial_cell_state)[0].dtype
        log_probs = tf.one_hot(tf.zeros([self._batch_size], tf.int32), depth=self._beam_width,
                               on_value=tf.constant(0.0, dtype),
                               off_value=tf.constant(float("-inf"), dtype), dtype=dtype)
        state = BeamSearchDecoderState(
            cell_state=self._initial_cell_state, log_probs=log_probs, finished=self._finished,
            lengths=tf.zeros([self._batch_size, self._beam_width], tf.int64),
            accumulated_attention_probs=())
        return self._finished, self._start_inputs, state

    def step(self, time, inputs, state, name=None):
        with tf.name_scope(name, "BeamSearchDecoderStep", (time, inputs, state)):
            merged_inputs = tf.nest.map_structure(self._merge_batch_beams, inputs)
            cell_state = tf.nest.map_structure(self._merge_batch_beams, state.cell_state)
            cell_outputs, next_cell_state = self._cell(merged_inputs, cell_state)
            if self._output_layer is not None:
                cell_outputs = self._output_layer(cell_outputs)
            logits = self._split_batch_beams(cell_outputs)
            next_cell_state = tf.nest.map_structure(self._split_batch_beams, next_cell_state)
            return self._beam_step(time, logits, next_cell_state, state)

    def _beam_step(self, time, logits, next_cell_state, state):
        vocab = tf.shape(logits)[-1]
        step_log_probs = tf.nn.log_softmax(logits)
        # A finished beam goes on only with end_token, at no cost.
        finished_row = tf.one_hot(self._end_token, vocab, on_value=tf.constant(0.0, logits.dtype),
                                  off_value=tf.constant(logits.dtype.min, logits.dtype))
        step_log_probs = tf.where_v2(tf.expand_dims(state.finished, -1), finished_row,
                                     step_log_probs)
        total = tf.expand_dims(state.log_probs, -1) + step_log_probs
        not_finished = tf.logical_not(state.finished)
        add_length = tf.where_v2(
            tf.logical_and(tf.expand_dims(not_finished, -1),
                           tf.not_equal(tf.range(vocab), self._end_token)),
            tf.constant(1, tf.int64), tf.constant(0, tf.int64))
        lengths = tf.expand_dims(state.lengths, -1) + add_length
        scores = total / _length_penalty(lengths, self._length_penalty_weight)
        # At the first step every beam holds the same start: only beam 0's continuations count.
        flat = tf.cond(time > 0, lambda: tf.reshape(scores, [self._batch_size, -1]),
                       lambda: scores[:, 0])
        next_scores, indices = tf.nn.top_k(flat, k=self._beam_width)
        indices = tf.cast(indices, tf.int32)
        next_word_ids = indices % vocab
        next_beam_ids = indices // vocab

        def pick(values):
            """values [batch, beam, ...] at the chosen parents."""
            batch_index = tf.tile(tf.expand_dims(tf.range(self._batch_size), 1),
                                  [1, self._beam_width])
            return tf.gather_nd(values, tf.stack([batch_index, next_beam_ids], -1))

        flat_total = tf.reshape(total, [self._batch_size, -1])
        batch_index = tf.tile(tf.expand_dims(tf.range(self._batch_size), 1),
                              [1, self._beam_width])
        next_log_probs = tf.gather_nd(flat_total, tf.stack([batch_index, indices], -1))
        previously_finished = pick(state.finished)
        # A beam's length counts its tokens, end_token included, and stops once it finished.
        next_lengths = pick(state.lengths) + tf.cast(tf.logical_not(previously_finished),
                                                     tf.int64)
        next_finished = tf.logical_or(previously_finished,
                                      tf.equal(next_word_ids, self._end_token))
        next_cell_state = tf.nest.map_structure(
            lambda t: pick(t) if t.shape.rank is not None and t.shape.rank >= 2 else t,
            next_cell_state)
        next_state = BeamSearchDecoderState(
            cell_state=next_cell_state, log_probs=next_log_probs, finished=next_finished,
            lengths=next_lengths, accumulated_attention_probs=())
        output = BeamSearchDecoderOutput(scores=next_scores, predicted_ids=next_word_ids,
                                         parent_ids=next_beam_ids)
        next_inputs = tf.cond(tf.reduce_all(next_finished), lambda: self._start_inputs,
                              lambda: self._embedding_fn(next_word_ids))
        return output, next_state, next_inputs, next_finished

    def finalize(self, outputs, final_state, sequence_lengths):
        """The beams read back through their parents (time-major, as dynamic_decode
        transposes after)."""
        max_lengths = tf.cast(tf.reduce_max(final_state.lengths, axis=1), tf.int32)
        predicted_ids = gather_tree(outputs.predicted_ids, outputs.parent_ids,
                                    max_sequence_lengths=max_lengths, end_token=self._end_token)
        return FinalBeamSearchDecoderOutput(beam_search_decoder_output=outputs,
                                            predicted_ids=predicted_ids), final_state
