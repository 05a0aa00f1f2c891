"""tf.contrib.rnn's fused LSTMs over the C++ ops LSTMBlockCell and BlockLSTM
(src/ops/nn/lstm_ops.cc): `LSTMBlockCell`, a drop-in cell for dynamic_rnn / static_rnn that runs a
step as one op, and `LSTMBlockFusedCell`, which runs a whole time-major sequence as one op.

Both compute BasicLSTMCell's step (gates i, j, f, o from one kernel [input + units, 4 * units],
forget_bias added to f) with optional peepholes and cell clipping, and name their variables as
TensorFlow 1 does: `lstm_cell/kernel`, `lstm_cell/bias` (and `w_i_diag`, `w_f_diag`, `w_o_diag`
with peepholes) for LSTMBlockCell, `lstm_fused_cell/...` for LSTMBlockFusedCell.
"""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.ops.rnn_cell_impl import LSTMStateTuple, RNNCell


def _tf():
    """The public namespace, at call time (this module is imported while it is being built)."""
    import flowstone
    return flowstone


def lstm_block_cell(x, cs_prev, h_prev, w, wci, wcf, wco, b, forget_bias=1.0, cell_clip=3.0,
                    use_peephole=False, name=None):
    """One LSTMBlockCell op; returns its outputs (i, cs, f, o, ci, co, h)."""
    attrs = {"forget_bias": float(forget_bias), "cell_clip": float(cell_clip),
             "use_peephole": bool(use_peephole)}
    op = _ops.apply_op("LSTMBlockCell", [x, cs_prev, h_prev, w, wci, wcf, wco, b], attrs,
                       name=name or "LSTMBlockCell")
    return tuple(op.outputs)


def block_lstm(seq_len_max, x, cs_prev, h_prev, w, wci, wcf, wco, b, forget_bias=1.0,
               cell_clip=3.0, use_peephole=False, name=None):
    """One BlockLSTM op over a time-major sequence; returns its outputs (i, cs, f, o, ci, co,
    h), each [time, batch, units]."""
    attrs = {"forget_bias": float(forget_bias), "cell_clip": float(cell_clip),
             "use_peephole": bool(use_peephole)}
    seq_len_max = _ops.convert_to_tensor(seq_len_max, dtype=_dtypes.int64, name="seq_len_max")
    op = _ops.apply_op("BlockLSTM", [seq_len_max, x, cs_prev, h_prev, w, wci, wcf, wco, b], attrs,
                       name=name or "BlockLSTM")
    return tuple(op.outputs)


def _static_depth(shape, axis, what):
    depth = shape.as_list()[axis] if shape.rank is not None else None
    if depth is None:
        raise ValueError(f"Expected {what} to have a known last dimension, got shape {shape}")
    return depth


def _peephole_weights(cell, dtype):
    """The three peephole vectors: variables with use_peephole, zeros (unused) without."""
    tf = _tf()
    if cell._use_peephole:
        return cell._w_i_diag, cell._w_f_diag, cell._w_o_diag
    zeros = tf.zeros([cell._num_units], dtype=dtype)
    return zeros, zeros, zeros


def _add_peephole_variables(cell, add_variable):
    if cell._use_peephole:
        n = cell._num_units
        cell._w_i_diag = add_variable("w_i_diag", [n])
        cell._w_f_diag = add_variable("w_f_diag", [n])
        cell._w_o_diag = add_variable("w_o_diag", [n])


class LSTMBlockCell(RNNCell):
    """BasicLSTMCell's step as one LSTMBlockCell op (and its gradient as one LSTMBlockCellGrad op
    and three matrix ops). The state must be an LSTMStateTuple (c, h)."""

    def __init__(self, num_units, forget_bias=1.0, cell_clip=None, use_peephole=False,
                 dtype=None, reuse=None, name="lstm_cell"):
        super().__init__(name=name, dtype=dtype, _reuse=reuse)
        self._num_units = num_units
        self._forget_bias = forget_bias
        self._cell_clip = cell_clip if cell_clip is not None else -1
        self._use_peephole = use_peephole

    @property
    def state_size(self):
        return LSTMStateTuple(self._num_units, self._num_units)

    @property
    def output_size(self):
        return self._num_units

    def build(self, inputs_shape):
        if inputs_shape.rank is not None and inputs_shape.rank != 2:
            raise ValueError(f"Expected inputs of rank 2 ([batch, depth]), got shape "
                             f"{inputs_shape}")
        depth = _static_depth(inputs_shape, -1, "inputs")
        n = self._num_units
        self._kernel = self.add_variable("kernel", [depth + n, 4 * n])
        self._bias = self.add_variable("bias", [4 * n],
                                       initializer=_tf().zeros_initializer(dtype=self._dtype))
        _add_peephole_variables(self, self.add_variable)
        self.built = True

    def call(self, inputs, state):
        if not isinstance(state, tuple) or len(state) != 2:
            raise ValueError(f"LSTMBlockCell expects an LSTMStateTuple (c, h) as its state, got "
                             f"{state!r}")
        cs_prev, h_prev = state
        wci, wcf, wco = _peephole_weights(self, self._kernel.dtype.base_dtype)
        _, cs, _, _, _, _, h = lstm_block_cell(
            inputs, cs_prev, h_prev, self._kernel, wci, wcf, wco, self._bias,
            forget_bias=self._forget_bias, cell_clip=self._cell_clip,
            use_peephole=self._use_peephole)
        return h, LSTMStateTuple(cs, h)


class LSTMBlockFusedCell:
    """An LSTM over a whole time-major sequence as one BlockLSTM op (and its gradient as one
    BlockLSTMGrad op).

    cell(inputs, initial_state=None, dtype=None, sequence_length=None, scope=None) takes
    inputs [time, batch, depth] (or a list of [batch, depth] tensors, one per step) and returns
    (outputs, LSTMStateTuple(c, h)) with outputs [time, batch, units] (a list for a list).
    With sequence_length, outputs past each example's length are zeros and the final state is
    the state at its last step (the initial state for length 0).
    """

    def __init__(self, num_units, forget_bias=1.0, cell_clip=None, use_peephole=False,
                 reuse=None, dtype=None, name="lstm_fused_cell"):
        self._num_units = num_units
        self._forget_bias = forget_bias
        self._cell_clip = cell_clip if cell_clip is not None else -1
        self._use_peephole = use_peephole
        self._reuse = reuse
        self._dtype = _dtypes.as_dtype(dtype) if dtype is not None else None
        self._name = name
        self._scope = None
        self._variables = []
        self.built = False

    @property
    def num_units(self):
        return self._num_units

    @property
    def variables(self):
        return list(self._variables)

    trainable_variables = variables
    weights = variables
    trainable_weights = variables

    def _add_variable(self, name, shape, initializer=None):
        tf = _tf()
        variable = tf.get_variable(name, shape, dtype=self._dtype, initializer=initializer)
        self._variables.append(variable)
        return variable

    def _build(self, input_shape):
        depth = _static_depth(input_shape, 2, "inputs")
        n = self._num_units
        self._kernel = self._add_variable("kernel", [depth + n, 4 * n])
        self._bias = self._add_variable("bias", [4 * n],
                                        initializer=_tf().zeros_initializer(dtype=self._dtype))
        _add_peephole_variables(self, self._add_variable)
        self.built = True

    def __call__(self, inputs, initial_state=None, dtype=None, sequence_length=None, scope=None):
        tf = _tf()
        is_list = isinstance(inputs, (list, tuple))
        inputs = tf.stack(inputs) if is_list else _ops.convert_to_tensor(inputs, name="inputs")
        if inputs.shape.rank is not None and inputs.shape.rank != 3:
            raise ValueError(f"LSTMBlockFusedCell expects time-major inputs of rank 3 ([time, "
                             f"batch, depth]), got shape {inputs.shape}")
        if self._scope is None:
            with tf.variable_scope(scope, default_name=self._name) as captured:
                self._scope = captured
            reuse = self._reuse
        else:
            reuse = True
        with tf.variable_scope(self._scope, reuse=reuse, auxiliary_name_scope=False):
            with tf.name_scope(self._scope.original_name_scope):
                if not self.built:
                    if self._dtype is None:
                        self._dtype = inputs.dtype.base_dtype
                    self._build(inputs.shape)
                return self._run(tf, inputs, initial_state, dtype, sequence_length, is_list)

    def _run(self, tf, inputs, initial_state, dtype, sequence_length, is_list):
        static = inputs.shape.as_list() if inputs.shape.rank is not None else [None] * 3
        time_len = static[0] if static[0] is not None else tf.shape(inputs)[0]
        batch_size = static[1] if static[1] is not None else tf.shape(inputs)[1]
        if initial_state is None:
            if dtype is None:
                raise ValueError("Either initial_state or dtype needs to be specified")
            shape = ([batch_size, self._num_units] if isinstance(batch_size, int)
                     else tf.stack([batch_size, self._num_units]))
            zeros = tf.zeros(shape, dtype=dtype)
            initial_cell_state, initial_output = zeros, zeros
        else:
            initial_cell_state, initial_output = initial_state
        if sequence_length is None:
            seq_len_max = tf.cast(time_len, _dtypes.int64)
        else:
            sequence_length = tf.cast(sequence_length, _dtypes.int32)
            seq_len_max = tf.cast(tf.reduce_max(sequence_length), _dtypes.int64)
        wci, wcf, wco = _peephole_weights(self, self._kernel.dtype.base_dtype)
        _, cell_states, _, _, _, _, outputs = block_lstm(
            seq_len_max, inputs, initial_cell_state, initial_output, self._kernel, wci, wcf, wco,
            self._bias, forget_bias=self._forget_bias,
            cell_clip=self._cell_clip if self._cell_clip > 0 else 0.0,
            use_peephole=self._use_peephole)
        if sequence_length is None:
            final_state = LSTMStateTuple(cell_states[-1], outputs[-1])
        else:
            mask = tf.transpose(tf.sequence_mask(sequence_length, time_len, dtype=outputs.dtype))
            outputs = outputs * tf.expand_dims(mask, -1)
            # The state after each example's last step: index sequence_length into the states
            # with the initial state in front.
            index = tf.stack([sequence_length, tf.range(batch_size)], axis=1)
            final_state = LSTMStateTuple(
                tf.gather_nd(tf.concat([tf.expand_dims(initial_cell_state, 0), cell_states], 0),
                             index),
                tf.gather_nd(tf.concat([tf.expand_dims(initial_output, 0), outputs], 0), index))
        if is_list:
            outputs = tf.unstack(outputs, num=static[0])
        return outputs, final_state
