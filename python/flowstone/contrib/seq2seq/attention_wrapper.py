"""tf.contrib.seq2seq attention: BahdanauAttention (additive, optionally normalized) and
LuongAttention (multiplicative, optionally scaled) over a memory masked by its sequence lengths,
and AttentionWrapper, an RNN cell that feeds each step's attention back into the cell. Variables
are named as TensorFlow 1's (`memory_layer/kernel`, `bahdanau_attention/attention_v`,
`attention_wrapper/attention_layer/kernel`, ...), so checkpoints carry over."""

import collections

import flowstone as tf
from flowstone.ops.rnn_cell_impl import RNNCell

__all__ = ["AttentionMechanism", "BahdanauAttention", "LuongAttention", "AttentionWrapper",
           "AttentionWrapperState", "hardmax"]


def hardmax(logits, name=None):
    """One-hot of the argmax along the last axis."""
    with tf.name_scope(name, "Hardmax", [logits]):
        logits = tf.convert_to_tensor(logits, name="logits")
        depth = tf.shape(logits)[-1]
        return tf.one_hot(tf.argmax(logits, -1), depth, dtype=logits.dtype)


class AttentionMechanism:
    """The base of the attention mechanisms."""


class _BaseAttention(AttentionMechanism):
    """Keeps the (masked) memory as `values` and its projection as `keys`."""

    def __init__(self, query_layer, memory, probability_fn, memory_sequence_length,
                 memory_layer, score_mask_value, name):
        self._query_layer = query_layer
        self._memory_layer = memory_layer
        self._probability_fn = probability_fn
        self._name = name
        with tf.name_scope(name, "BaseAttentionMechanismInit", tf.nest.flatten(memory)):
            memory = tf.convert_to_tensor(memory, name="memory")
            self._memory_sequence_length = memory_sequence_length
            if memory_sequence_length is not None:
                mask = tf.sequence_mask(memory_sequence_length, maxlen=tf.shape(memory)[1],
                                        dtype=memory.dtype)
                self._values = memory * tf.expand_dims(mask, -1)
            else:
                self._values = memory
            self._keys = (self._memory_layer(self._values) if self._memory_layer is not None
                          else self._values)
            self._batch_size = (self._keys.shape[0] if self._keys.shape[0] is not None
                                else tf.shape(self._keys)[0])
            self._alignments_size = (self._keys.shape[1] if self._keys.shape[1] is not None
                                     else tf.shape(self._keys)[1])
        if score_mask_value is None:
            score_mask_value = float("-inf")
        self._score_mask_value = score_mask_value

    memory_layer = property(lambda self: self._memory_layer)
    query_layer = property(lambda self: self._query_layer)
    values = property(lambda self: self._values)
    keys = property(lambda self: self._keys)
    batch_size = property(lambda self: self._batch_size)
    alignments_size = property(lambda self: self._alignments_size)

    @property
    def state_size(self):
        return self._alignments_size

    def _normalize(self, score):
        """Scores past a memory's length get score_mask_value before probability_fn."""
        if self._memory_sequence_length is not None:
            mask = tf.sequence_mask(self._memory_sequence_length, maxlen=tf.shape(score)[1])
            score = tf.where_v2(mask, score, tf.fill(tf.shape(score), tf.cast(
                self._score_mask_value, score.dtype)))
        return self._probability_fn(score)

    def initial_alignments(self, batch_size, dtype):
        return tf.zeros(tf.stack([batch_size, self._alignments_size]), dtype=dtype)

    def initial_state(self, batch_size, dtype):
        return self.initial_alignments(batch_size, dtype)


def _probability(probability_fn):
    return probability_fn if probability_fn is not None else tf.nn.softmax


class BahdanauAttention(_BaseAttention):
    """score = v . tanh(keys + W q) (with `normalize`, v is weight-normalized:
    g v / |v| and a bias b inside the tanh)."""

    def __init__(self, num_units, memory, memory_sequence_length=None, normalize=False,
                 probability_fn=None, score_mask_value=None, dtype=None,
                 custom_key_value_fn=None, name="BahdanauAttention"):
        dtype = dtype or tf.float32
        super().__init__(
            query_layer=tf.layers.Dense(num_units, name="query_layer", use_bias=False,
                                        dtype=dtype),
            memory=memory, probability_fn=_probability(probability_fn),
            memory_sequence_length=memory_sequence_length,
            memory_layer=tf.layers.Dense(num_units, name="memory_layer", use_bias=False,
                                         dtype=dtype),
            score_mask_value=score_mask_value, name=name)
        self._num_units = num_units
        self._normalize_v = normalize

    def __call__(self, query, state):
        with tf.variable_scope(None, "bahdanau_attention", [query]):
            processed = tf.expand_dims(self._query_layer(query), 1)
            keys = self._keys
            v = tf.get_variable("attention_v", [self._num_units], dtype=keys.dtype)
            if self._normalize_v:
                g = tf.get_variable("attention_g", dtype=keys.dtype,
                                    initializer=tf.constant_initializer(
                                        (1.0 / self._num_units) ** 0.5), shape=())
                b = tf.get_variable("attention_b", [self._num_units], dtype=keys.dtype,
                                    initializer=tf.zeros_initializer())
                normed_v = g * v * tf.rsqrt(tf.reduce_sum(tf.square(v)))
                score = tf.reduce_sum(normed_v * tf.tanh(keys + processed + b), [2])
            else:
                score = tf.reduce_sum(v * tf.tanh(keys + processed), [2])
        alignments = self._normalize(score)
        return alignments, alignments


class LuongAttention(_BaseAttention):
    """score = q . keys (with `scale`, times a learned scalar g)."""

    def __init__(self, num_units, memory, memory_sequence_length=None, scale=False,
                 probability_fn=None, score_mask_value=None, dtype=None,
                 custom_key_value_fn=None, name="LuongAttention"):
        dtype = dtype or tf.float32
        super().__init__(
            query_layer=None, memory=memory, probability_fn=_probability(probability_fn),
            memory_sequence_length=memory_sequence_length,
            memory_layer=tf.layers.Dense(num_units, name="memory_layer", use_bias=False,
                                         dtype=dtype),
            score_mask_value=score_mask_value, name=name)
        self._num_units = num_units
        self._scale = scale

    def __call__(self, query, state):
        with tf.variable_scope(None, "luong_attention", [query]):
            keys = self._keys
            if query.shape[-1] is not None and keys.shape[-1] is not None and (
                    query.shape[-1] != keys.shape[-1]):
                raise ValueError(f"Incompatible or unknown inner dimensions between query and "
                                 f"keys.  Query (cell output) has units: {query.shape[-1]}.  "
                                 f"Keys (memory projection) have units: {keys.shape[-1]}.  "
                                 "Perhaps you need to set num_units to the keys' dimension "
                                 f"({keys.shape[-1]})?")
            score = tf.squeeze(tf.matmul(tf.expand_dims(query, 1), keys, transpose_b=True), [1])
            if self._scale:
                g = tf.get_variable("attention_g", dtype=keys.dtype,
                                    initializer=tf.ones_initializer(), shape=())
                score = g * score
        alignments = self._normalize(score)
        return alignments, alignments


class AttentionWrapperState(collections.namedtuple(
        "AttentionWrapperState", ("cell_state", "attention", "time", "alignments",
                                  "alignment_history", "attention_state"))):
    """The wrapped cell's state, the last attention and alignments, and the step."""

    def clone(self, **kwargs):
        return self._replace(**kwargs)


class AttentionWrapper(RNNCell):
    """Runs `cell` on [inputs, last attention], then attends with its output:
    attention = attention_layer([cell output, context]) (the context alone without an attention
    layer); the step's output is the attention (or the cell's output without
    output_attention)."""

    def __init__(self, cell, attention_mechanism, attention_layer_size=None,
                 alignment_history=False, cell_input_fn=None, output_attention=True,
                 initial_cell_state=None, name=None, attention_layer=None,
                 attention_fn=None):
        super().__init__(name=name)
        if isinstance(attention_mechanism, (list, tuple)):
            raise NotImplementedError("AttentionWrapper takes one attention mechanism in "
                                      "Flowstone (TensorFlow also takes a list)")
        if not isinstance(attention_mechanism, AttentionMechanism):
            raise TypeError(f"attention_mechanism must be an AttentionMechanism, saw type: "
                            f"{type(attention_mechanism).__name__}")
        self._cell = cell
        self._mechanism = attention_mechanism
        self._cell_input_fn = cell_input_fn or (lambda inputs, attention: tf.concat(
            [inputs, attention], -1))
        if attention_layer_size is not None and attention_layer is not None:
            raise ValueError("Only one of attention_layer_size and attention_layer should be "
                             "set")
        if attention_layer_size is not None:
            attention_layer = tf.layers.Dense(attention_layer_size, name="attention_layer",
                                              use_bias=False,
                                              dtype=attention_mechanism.values.dtype)
        self._attention_layer = attention_layer
        if attention_layer_size is not None:
            self._attention_size = attention_layer_size
        elif attention_layer is not None:
            self._attention_size = attention_layer.units
        else:
            self._attention_size = attention_mechanism.values.shape[-1]
        self._alignment_history = alignment_history
        self._output_attention = output_attention
        self._initial_cell_state = initial_cell_state

    @property
    def output_size(self):
        return self._attention_size if self._output_attention else self._cell.output_size

    @property
    def state_size(self):
        return AttentionWrapperState(
            cell_state=self._cell.state_size, time=tf.TensorShape([]),
            attention=self._attention_size, alignments=self._mechanism.alignments_size,
            attention_state=self._mechanism.state_size,
            alignment_history=self._mechanism.alignments_size if self._alignment_history
            else ())

    def zero_state(self, batch_size, dtype):
        with tf.name_scope(type(self).__name__ + "ZeroState"):
            cell_state = (self._initial_cell_state if self._initial_cell_state is not None
                          else self._cell.zero_state(batch_size, dtype))
            alignments = self._mechanism.initial_alignments(batch_size, dtype)
            history = (tf.TensorArray(dtype, size=0, dynamic_size=True)
                       if self._alignment_history else ())
            return AttentionWrapperState(
                cell_state=cell_state, time=tf.zeros([], dtype=tf.int32),
                attention=tf.zeros(tf.stack([batch_size, self._attention_size]), dtype=dtype),
                alignments=alignments, attention_state=self._mechanism.initial_state(
                    batch_size, dtype), alignment_history=history)

    def __call__(self, inputs, state, scope=None):
        with tf.variable_scope(scope or "attention_wrapper"):
            cell_inputs = self._cell_input_fn(inputs, state.attention)
            cell_output, next_cell_state = self._cell(cell_inputs, state.cell_state)
            alignments, next_attention_state = self._mechanism(cell_output,
                                                               state=state.attention_state)
            context = tf.squeeze(tf.matmul(tf.expand_dims(alignments, 1),
                                           self._mechanism.values), [1])
            attention = (self._attention_layer(tf.concat([cell_output, context], 1))
                         if self._attention_layer is not None else context)
            history = (state.alignment_history.write(state.time, alignments)
                       if self._alignment_history else ())
            next_state = AttentionWrapperState(
                time=state.time + 1, cell_state=next_cell_state, attention=attention,
                attention_state=next_attention_state, alignments=alignments,
                alignment_history=history)
        return (attention if self._output_attention else cell_output), next_state
