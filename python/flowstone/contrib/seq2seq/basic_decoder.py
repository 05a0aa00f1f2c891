"""tf.contrib.seq2seq's decoding: Helpers (what the decoder reads next and when it is done),
BasicDecoder (an RNN cell, a helper and an optional output layer) and dynamic_decode, the
tf.while_loop that runs a decoder until every sequence finished or maximum_iterations, with
TensorFlow's outputs, final state and lengths."""

import abc
import collections

import flowstone as tf

__all__ = ["Helper", "CustomHelper", "TrainingHelper", "GreedyEmbeddingHelper",
           "SampleEmbeddingHelper", "Decoder", "BasicDecoder", "BasicDecoderOutput",
           "dynamic_decode", "tile_batch"]


def _embedding_fn(embedding):
    if callable(embedding):
        return embedding
    params = tf.convert_to_tensor(embedding, name="embedding")
    return lambda ids: tf.nn.embedding_lookup(params, ids)


class Helper(abc.ABC):
    """Tells a decoder its first inputs, how to sample an output, and its next inputs."""

    @property
    @abc.abstractmethod
    def batch_size(self):
        """The batch size (a scalar tensor or int)."""

    @property
    def sample_ids_shape(self):
        return tf.TensorShape([])

    @property
    def sample_ids_dtype(self):
        return tf.int32

    @abc.abstractmethod
    def initialize(self, name=None):
        """(finished, first inputs)."""

    @abc.abstractmethod
    def sample(self, time, outputs, state, name=None):
        """The sample ids for this step's outputs."""

    @abc.abstractmethod
    def next_inputs(self, time, outputs, state, sample_ids, name=None):
        """(finished, next inputs, next state)."""


class CustomHelper(Helper):
    """A Helper of three functions."""

    def __init__(self, initialize_fn, sample_fn, next_inputs_fn, sample_ids_shape=None,
                 sample_ids_dtype=None):
        self._initialize_fn = initialize_fn
        self._sample_fn = sample_fn
        self._next_inputs_fn = next_inputs_fn
        self._batch_size = None
        self._sample_ids_shape = tf.TensorShape(sample_ids_shape or [])
        self._sample_ids_dtype = sample_ids_dtype or tf.int32

    @property
    def batch_size(self):
        if self._batch_size is None:
            raise ValueError("batch_size accessed before initialize was called")
        return self._batch_size

    @property
    def sample_ids_shape(self):
        return self._sample_ids_shape

    @property
    def sample_ids_dtype(self):
        return self._sample_ids_dtype

    def initialize(self, name=None):
        finished, next_inputs = self._initialize_fn()
        if self._batch_size is None:
            self._batch_size = tf.size(finished)
        return finished, next_inputs

    def sample(self, time, outputs, state, name=None):
        return self._sample_fn(time=time, outputs=outputs, state=state)

    def next_inputs(self, time, outputs, state, sample_ids, name=None):
        return self._next_inputs_fn(time=time, outputs=outputs, state=state,
                                    sample_ids=sample_ids)


class TrainingHelper(Helper):
    """Teacher forcing: step t reads inputs[:, t]; a sequence finishes at its length."""

    def __init__(self, inputs, sequence_length, time_major=False, name=None):
        with tf.name_scope(name, "TrainingHelper", [inputs, sequence_length]):
            inputs = tf.convert_to_tensor(inputs, name="inputs")
            self._inputs = inputs
            if not time_major:
                inputs = tf.nest.map_structure(_transpose_batch_time, inputs)
            self._input_tas = tf.nest.map_structure(_unstack_ta, inputs)
            self._sequence_length = tf.convert_to_tensor(sequence_length,
                                                         name="sequence_length")
            if self._sequence_length.shape.rank != 1:
                raise ValueError(f"Expected sequence_length to be a vector, but received shape: "
                                 f"{self._sequence_length.shape}")
            self._zero_inputs = tf.nest.map_structure(lambda x: tf.zeros_like(x[0, :]), inputs)
            self._batch_size = tf.size(self._sequence_length)

    @property
    def inputs(self):
        return self._inputs

    @property
    def sequence_length(self):
        return self._sequence_length

    @property
    def batch_size(self):
        return self._batch_size

    def initialize(self, name=None):
        with tf.name_scope(name, "TrainingHelperInitialize"):
            finished = tf.equal(0, self._sequence_length)
            all_finished = tf.reduce_all(finished)
            next_inputs = tf.cond(
                all_finished, lambda: self._zero_inputs,
                lambda: tf.nest.map_structure(lambda inp: inp.read(0), self._input_tas))
            return finished, next_inputs

    def sample(self, time, outputs, state, name=None):
        with tf.name_scope(name, "TrainingHelperSample", [time, outputs]):
            return tf.cast(tf.argmax(outputs, axis=-1), tf.int32)

    def next_inputs(self, time, outputs, state, sample_ids, name=None):
        with tf.name_scope(name, "TrainingHelperNextInputs", [time, outputs, state]):
            next_time = time + 1
            finished = next_time >= self._sequence_length
            all_finished = tf.reduce_all(finished)
            next_inputs = tf.cond(
                all_finished, lambda: self._zero_inputs,
                lambda: tf.nest.map_structure(lambda inp: inp.read(next_time), self._input_tas))
            return finished, next_inputs, state


class GreedyEmbeddingHelper(Helper):
    """Inference: each step reads the embedding of the argmax of the last outputs; a sequence
    finishes when it emits `end_token`."""

    def __init__(self, embedding, start_tokens, end_token):
        self._embedding_fn = _embedding_fn(embedding)
        self._start_tokens = tf.convert_to_tensor(start_tokens, dtype=tf.int32,
                                                  name="start_tokens")
        self._end_token = tf.convert_to_tensor(end_token, dtype=tf.int32, name="end_token")
        if self._start_tokens.shape.rank != 1:
            raise ValueError("start_tokens must be a vector")
        if self._end_token.shape.rank != 0:
            raise ValueError("end_token must be a scalar")
        self._batch_size = tf.size(self._start_tokens)
        self._start_inputs = self._embedding_fn(self._start_tokens)

    @property
    def batch_size(self):
        return self._batch_size

    def initialize(self, name=None):
        return tf.tile([False], [self._batch_size]), self._start_inputs

    def sample(self, time, outputs, state, name=None):
        return tf.cast(tf.argmax(outputs, axis=-1), tf.int32)

    def next_inputs(self, time, outputs, state, sample_ids, name=None):
        finished = tf.equal(sample_ids, self._end_token)
        all_finished = tf.reduce_all(finished)
        next_inputs = tf.cond(all_finished, lambda: self._start_inputs,
                              lambda: self._embedding_fn(sample_ids))
        return finished, next_inputs, state


class SampleEmbeddingHelper(GreedyEmbeddingHelper):
    """Like GreedyEmbeddingHelper, but samples the next id from the softmax of the outputs
    (divided by `softmax_temperature`)."""

    def __init__(self, embedding, start_tokens, end_token, softmax_temperature=None, seed=None):
        super().__init__(embedding, start_tokens, end_token)
        self._softmax_temperature = softmax_temperature
        self._seed = seed

    def sample(self, time, outputs, state, name=None):
        logits = outputs if self._softmax_temperature is None else (
            outputs / self._softmax_temperature)
        ids = tf.random.categorical(logits, 1, seed=self._seed)
        return tf.cast(tf.reshape(ids, [-1]), tf.int32)


class Decoder(abc.ABC):
    """What dynamic_decode runs: initialize() and step() over nested outputs and states."""

    @property
    @abc.abstractmethod
    def batch_size(self):
        """The batch size."""

    @property
    @abc.abstractmethod
    def output_size(self):
        """The size of each step's outputs (nested TensorShapes or ints)."""

    @property
    @abc.abstractmethod
    def output_dtype(self):
        """The dtypes of each step's outputs."""

    @abc.abstractmethod
    def initialize(self, name=None):
        """(finished, first inputs, initial state)."""

    @abc.abstractmethod
    def step(self, time, inputs, state, name=None):
        """(outputs, next state, next inputs, finished)."""

    @property
    def tracks_own_finished(self):
        return False

    def finalize(self, outputs, final_state, sequence_lengths):
        raise NotImplementedError


BasicDecoderOutput = collections.namedtuple("BasicDecoderOutput", ("rnn_output", "sample_id"))


class BasicDecoder(Decoder):
    """One cell step per decoding step, the output layer (if any) applied to its outputs."""

    def __init__(self, cell, helper, initial_state, output_layer=None):
        if not isinstance(helper, Helper):
            raise TypeError(f"helper must be a Helper, received: {type(helper)}")
        if output_layer is not None and not callable(output_layer):
            raise TypeError(f"output_layer must be a Layer, received: {type(output_layer)}")
        self._cell = cell
        self._helper = helper
        self._initial_state = initial_state
        self._output_layer = output_layer

    @property
    def batch_size(self):
        return self._helper.batch_size

    def _rnn_output_size(self):
        size = self._cell.output_size
        if self._output_layer is None:
            return size
        shape = tf.TensorShape([None, size]) if isinstance(size, int) else tf.TensorShape(
            [None]).concatenate(size)
        return self._output_layer.compute_output_shape(shape)[1:]

    @property
    def output_size(self):
        return BasicDecoderOutput(rnn_output=self._rnn_output_size(),
                                  sample_id=self._helper.sample_ids_shape)

    @property
    def output_dtype(self):
        dtype = tf.nest.flatten(self._initial_state)[0].dtype
        return BasicDecoderOutput(rnn_output=dtype, sample_id=self._helper.sample_ids_dtype)

    def initialize(self, name=None):
        return self._helper.initialize() + (self._initial_state,)

    def step(self, time, inputs, state, name=None):
        with tf.name_scope(name, "BasicDecoderStep", (time, inputs, state)):
            cell_outputs, cell_state = self._cell(inputs, state)
            if self._output_layer is not None:
                cell_outputs = self._output_layer(cell_outputs)
            sample_ids = self._helper.sample(time=time, outputs=cell_outputs, state=cell_state)
            finished, next_inputs, next_state = self._helper.next_inputs(
                time=time, outputs=cell_outputs, state=cell_state, sample_ids=sample_ids)
        return BasicDecoderOutput(cell_outputs, sample_ids), next_state, next_inputs, finished


def _transpose_batch_time(x):
    x = tf.convert_to_tensor(x)
    rank = x.shape.rank
    if rank is not None and rank < 2:
        return x
    perm = [1, 0] + list(range(2, rank)) if rank is not None else tf.concat(
        [[1, 0], tf.range(2, tf.rank(x))], 0)
    return tf.transpose(x, perm)


def _unstack_ta(x):
    return tf.TensorArray(x.dtype, size=tf.shape(x)[0], element_shape=x.shape[1:]).unstack(x)


def _size_shape(size):
    return tf.TensorShape([size]) if isinstance(size, int) else tf.TensorShape(size)


def dynamic_decode(decoder, output_time_major=False, impute_finished=False,
                   maximum_iterations=None, parallel_iterations=32, swap_memory=False,
                   scope=None):
    """Runs `decoder` until every sequence finished (or maximum_iterations). Returns
    (final_outputs, final_state, final_sequence_lengths), outputs [batch, time, ...] unless
    output_time_major; with impute_finished, a finished sequence's outputs are zeros and its
    state stops changing."""
    if not isinstance(decoder, Decoder):
        raise TypeError(f"Expected decoder to be type Decoder, but saw: {type(decoder)}")
    with tf.variable_scope(scope or "decoder"):
        if maximum_iterations is not None:
            maximum_iterations = tf.convert_to_tensor(maximum_iterations, dtype=tf.int32,
                                                      name="maximum_iterations")
            if maximum_iterations.shape.rank != 0:
                raise ValueError("maximum_iterations must be a scalar")
        initial_finished, initial_inputs, initial_state = decoder.initialize()
        if maximum_iterations is not None:
            initial_finished = tf.logical_or(initial_finished, 0 >= maximum_iterations)
        batch_size = decoder.batch_size
        zero_outputs = tf.nest.map_structure(
            lambda size, dtype: tf.zeros(tf.concat(
                [tf.reshape(batch_size, [1]),
                 tf.constant(_size_shape(size).as_list(), dtype=tf.int32)], 0), dtype=dtype),
            decoder.output_size, decoder.output_dtype)
        initial_outputs_ta = tf.nest.map_structure(
            lambda size, dtype: tf.TensorArray(dtype, size=0, dynamic_size=True,
                                               element_shape=tf.TensorShape(
                                                   [None]).concatenate(_size_shape(size))),
            decoder.output_size, decoder.output_dtype)
        initial_lengths = tf.zeros_like(initial_finished, dtype=tf.int32)
        initial_time = tf.constant(0, dtype=tf.int32)

        def condition(time, outputs_ta, state, inputs, finished, lengths):
            return tf.logical_not(tf.reduce_all(finished))

        def body(time, outputs_ta, state, inputs, finished, lengths):
            outputs, decoder_state, next_inputs, decoder_finished = decoder.step(time, inputs,
                                                                                state)
            next_finished = (decoder_finished if decoder.tracks_own_finished
                             else tf.logical_or(decoder_finished, finished))
            if maximum_iterations is not None:
                next_finished = tf.logical_or(next_finished, time + 1 >= maximum_iterations)
            next_lengths = tf.where(tf.logical_not(finished), tf.fill(tf.shape(lengths), time + 1),
                                    lengths)
            if impute_finished:
                emit = tf.nest.map_structure(
                    lambda out, zero: tf.where_v2(_broadcast_mask(finished, out), zero, out),
                    outputs, zero_outputs)
                next_state = tf.nest.map_structure(
                    lambda new, cur: new if new.shape.rank == 0 else tf.where_v2(
                        _broadcast_mask(finished, new), cur, new), decoder_state, state)
            else:
                emit, next_state = outputs, decoder_state
            outputs_ta = tf.nest.map_structure(lambda ta, out: ta.write(time, out), outputs_ta,
                                               emit)
            return time + 1, outputs_ta, next_state, next_inputs, next_finished, next_lengths

        loop_vars = (initial_time, initial_outputs_ta, initial_state, initial_inputs,
                     initial_finished, initial_lengths)
        _, final_outputs_ta, final_state, _, _, final_lengths = tf.while_loop(
            condition, body, loop_vars, parallel_iterations=parallel_iterations,
            maximum_iterations=maximum_iterations, swap_memory=swap_memory)
        final_outputs = tf.nest.map_structure(lambda ta: ta.stack(), final_outputs_ta)
        try:
            final_outputs, final_state = decoder.finalize(final_outputs, final_state,
                                                          final_lengths)
        except NotImplementedError:
            pass
        if not output_time_major:
            final_outputs = tf.nest.map_structure(_transpose_batch_time, final_outputs)
    return final_outputs, final_state, final_lengths


def _broadcast_mask(finished, like):
    """`finished` [batch] reshaped to broadcast against `like` [batch, ...]."""
    rank = like.shape.rank
    return tf.reshape(finished, [-1] + [1] * (rank - 1)) if rank else finished


def tile_batch(t, multiplier, name=None):
    """Each batch entry of every tensor in `t` repeated `multiplier` times in place:
    [a, b] -> [a, a, b, b] (for beam search's batch * beam layout)."""

    def tile_one(x):
        x = tf.convert_to_tensor(x)
        if x.shape.rank == 0:
            raise ValueError("t must have statically known rank")
        tiled = tf.tile(tf.expand_dims(x, 1), [1, multiplier] + [1] * (x.shape.rank - 1))
        shape = tf.concat([[tf.shape(x)[0] * multiplier], tf.shape(x)[1:]], 0)
        out = tf.reshape(tiled, shape)
        if x.shape[0] is not None:
            out.set_shape(tf.TensorShape([x.shape[0] * multiplier]).concatenate(x.shape[1:]))
        return out

    with tf.name_scope(name, "tile_batch", tf.nest.flatten(t)):
        return tf.nest.map_structure(tile_one, t)
