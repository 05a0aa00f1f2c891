"""tf.nn.rnn_cell: TensorFlow 1's recurrent cells (BasicRNNCell, BasicLSTMCell, LSTMCell,
GRUCell), their state tuples and wrappers (MultiRNNCell, DropoutWrapper, ResidualWrapper,
DeviceWrapper).

A cell maps (inputs, state) to (output, new_state) for one time step. Its variables are made on
the first call under a variable scope named after the cell (`basic_lstm_cell`, made unique as
TensorFlow makes it) inside the caller's scope, so a cell run by `tf.nn.dynamic_rnn` owns
`rnn/basic_lstm_cell/kernel` and `rnn/basic_lstm_cell/bias`, the names a TensorFlow checkpoint
uses; later calls reuse them. The step math is TensorFlow's, gate order included (i, j, f, o for
LSTMs; r, u for GRUs), so weights trained by either runtime give the same outputs in the other.
"""

import collections

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.util import nest as _nest
from flowstone.util.naming import to_snake_case
from flowstone.util.tf_export import tf_export


def _tf():
    """The public namespace, at call time (this module is imported while it is being built)."""
    import flowstone
    return flowstone




def _static_depth(tensor, what):
    depth = tensor.shape.as_list()[-1] if tensor.shape.rank is not None else None
    if depth is None:
        raise ValueError(f"Expected {what} to have a known last dimension, got shape "
                         f"{tensor.shape}. Could not infer input size from "
                         f"inputs.get_shape()[-1]")
    return depth


def _zeros_for(size, batch_size, dtype):
    """A zero tensor [batch_size, *size] for one component of a state size."""
    tf = _tf()
    dims = list(size) if isinstance(size, (list, tuple)) else [size]
    if isinstance(batch_size, int):
        return tf.zeros([batch_size] + dims, dtype)
    shape = tf.concat([tf.reshape(tf.cast(batch_size, _dtypes.int32), [1]),
                       tf.constant(dims, _dtypes.int32)], 0)
    return tf.zeros(shape, dtype)


@tf_export("nn.rnn_cell.LSTMStateTuple")
class LSTMStateTuple(collections.namedtuple("LSTMStateTuple", ("c", "h"))):
    """An LSTM's state: the cell state `c` and the output (hidden state) `h`."""

    __slots__ = ()

    @property
    def dtype(self):
        c, h = self
        if c.dtype != h.dtype:
            raise TypeError(f"Inconsistent internal state: {c.dtype} vs {h.dtype}")
        return c.dtype


@tf_export("nn.rnn_cell.RNNCell")
class RNNCell:
    """The abstract recurrent cell. Subclasses define `state_size`, `output_size` and
    `call(inputs, state)`, and may create variables in `build(inputs_shape)` with
    `add_variable`."""

    def __init__(self, trainable=True, name=None, dtype=None, **kwargs):
        self.trainable = trainable
        self._name = name
        self._dtype = _dtypes.as_dtype(dtype) if dtype is not None else None
        self._reuse = kwargs.pop("_reuse", None)
        self._scope = None
        self._variables = []
        self.built = False

    @property
    def name(self):
        return self._name or to_snake_case(type(self).__name__)

    @property
    def dtype(self):
        return self._dtype

    @property
    def state_size(self):
        raise NotImplementedError("Abstract method")

    @property
    def output_size(self):
        raise NotImplementedError("Abstract method")

    @property
    def variables(self):
        return list(self._variables)

    weights = variables

    @property
    def trainable_variables(self):
        return list(self._variables) if self.trainable else []

    trainable_weights = trainable_variables

    @property
    def non_trainable_variables(self):
        return [] if self.trainable else list(self._variables)

    def build(self, inputs_shape):
        self.built = True

    def call(self, inputs, state):
        raise NotImplementedError("Abstract method")

    def add_variable(self, name, shape, dtype=None, initializer=None, trainable=True):
        """A variable in the cell's scope (made on the first call, reused afterwards)."""
        tf = _tf()
        variable = tf.get_variable(name, shape, dtype=dtype or self._dtype or _dtypes.float32,
                                   initializer=initializer,
                                   trainable=trainable and self.trainable)
        if all(variable is not v for v in self._variables):
            self._variables.append(variable)
        return variable

    add_weight = add_variable

    def __call__(self, inputs, state, scope=None):
        """Runs one step. The first call fixes the cell's variable scope: `scope` when given,
        else a new scope named after the cell inside the current one."""
        tf = _tf()
        if self._scope is None:
            if scope is not None:
                with tf.variable_scope(scope) as captured:
                    self._scope = captured
            elif self._name is not None and self._reuse:
                with tf.variable_scope(self._name) as captured:
                    self._scope = captured
            else:
                with tf.variable_scope(None, default_name=self.name) as captured:
                    self._scope = captured
            reuse = self._reuse
        else:
            reuse = True
        with tf.variable_scope(self._scope, reuse=reuse, auxiliary_name_scope=False):
            with tf.name_scope(self._scope.original_name_scope):
                inputs = _nest.map_structure(_ops.convert_to_tensor, inputs)
                if not self.built:
                    if self._dtype is None:
                        self._dtype = _nest.flatten(inputs)[0].dtype.base_dtype
                    self.build(_nest.flatten(inputs)[0].shape)
                    self.built = True
                return self.call(inputs, state)

    def get_initial_state(self, inputs=None, batch_size=None, dtype=None):
        if inputs is not None:
            inputs = _ops.convert_to_tensor(inputs)
            batch_size = inputs.shape.as_list()[0] if inputs.shape.rank else None
            if batch_size is None:
                batch_size = _tf().shape(inputs)[0]
            dtype = inputs.dtype
        if batch_size is None or dtype is None:
            raise ValueError("batch_size and dtype cannot be None while constructing initial "
                             f"state: batch_size={batch_size}, dtype={dtype}")
        return self.zero_state(batch_size, dtype)

    def zero_state(self, batch_size, dtype):
        """A state of zeros, shaped like `state_size` with `batch_size` rows."""
        tf = _tf()
        with tf.name_scope(type(self).__name__ + "ZeroState", values=[batch_size]):
            return _nest.map_structure(lambda size: _zeros_for(size, batch_size, dtype),
                                       self.state_size)


@tf_export("nn.rnn_cell.BasicRNNCell")
class BasicRNNCell(RNNCell):
    """output = new_state = activation(W [inputs, state] + b)."""

    def __init__(self, num_units, activation=None, reuse=None, name=None, dtype=None, **kwargs):
        super().__init__(name=name, dtype=dtype, _reuse=reuse, **kwargs)
        self._num_units = num_units
        self._activation = activation or _tf().tanh

    @property
    def state_size(self):
        return self._num_units

    @property
    def output_size(self):
        return self._num_units

    def build(self, inputs_shape):
        depth = inputs_shape.as_list()[-1] if inputs_shape.rank is not None else None
        if depth is None:
            raise ValueError(f"Expected inputs.shape[-1] to be known, saw shape: {inputs_shape}")
        self._kernel = self.add_variable("kernel", [depth + self._num_units, self._num_units])
        self._bias = self.add_variable("bias", [self._num_units],
                                       initializer=_tf().zeros_initializer(dtype=self._dtype))
        self.built = True

    def call(self, inputs, state):
        tf = _tf()
        gate_inputs = tf.matmul(tf.concat([inputs, state], 1), self._kernel)
        output = self._activation(tf.nn.bias_add(gate_inputs, self._bias))
        return output, output


@tf_export("nn.rnn_cell.GRUCell")
class GRUCell(RNNCell):
    """Gated recurrent unit (Cho et al., 2014): reset and update gates, then a candidate."""

    def __init__(self, num_units, activation=None, reuse=None, kernel_initializer=None,
                 bias_initializer=None, name=None, dtype=None, **kwargs):
        super().__init__(name=name, dtype=dtype, _reuse=reuse, **kwargs)
        self._num_units = num_units
        self._activation = activation or _tf().tanh
        self._kernel_initializer = kernel_initializer
        self._bias_initializer = bias_initializer

    @property
    def state_size(self):
        return self._num_units

    @property
    def output_size(self):
        return self._num_units

    def build(self, inputs_shape):
        tf = _tf()
        depth = inputs_shape.as_list()[-1] if inputs_shape.rank is not None else None
        if depth is None:
            raise ValueError(f"Expected inputs.shape[-1] to be known, saw shape: {inputs_shape}")
        n = self._num_units
        self._gate_kernel = self.add_variable("gates/kernel", [depth + n, 2 * n],
                                              initializer=self._kernel_initializer)
        self._gate_bias = self.add_variable(
            "gates/bias", [2 * n],
            initializer=self._bias_initializer or tf.constant_initializer(1.0, dtype=self._dtype))
        self._candidate_kernel = self.add_variable("candidate/kernel", [depth + n, n],
                                                   initializer=self._kernel_initializer)
        self._candidate_bias = self.add_variable(
            "candidate/bias", [n],
            initializer=self._bias_initializer or tf.zeros_initializer(dtype=self._dtype))
        self.built = True

    def call(self, inputs, state):
        tf = _tf()
        gate_inputs = tf.matmul(tf.concat([inputs, state], 1), self._gate_kernel)
        value = tf.sigmoid(tf.nn.bias_add(gate_inputs, self._gate_bias))
        r, u = tf.split(value, 2, axis=1)
        candidate = tf.matmul(tf.concat([inputs, r * state], 1), self._candidate_kernel)
        c = self._activation(tf.nn.bias_add(candidate, self._candidate_bias))
        new_h = u * state + (1 - u) * c
        return new_h, new_h


@tf_export("nn.rnn_cell.BasicLSTMCell")
class BasicLSTMCell(RNNCell):
    """The basic LSTM (Hochreiter & Schmidhuber, 1997), with `forget_bias` added to the forget
    gate and no peepholes, clipping or projection."""

    def __init__(self, num_units, forget_bias=1.0, state_is_tuple=True, activation=None,
                 reuse=None, name=None, dtype=None, **kwargs):
        super().__init__(name=name, dtype=dtype, _reuse=reuse, **kwargs)
        self._num_units = num_units
        self._forget_bias = forget_bias
        self._state_is_tuple = state_is_tuple
        self._activation = activation or _tf().tanh

    @property
    def state_size(self):
        n = self._num_units
        return LSTMStateTuple(n, n) if self._state_is_tuple else 2 * n

    @property
    def output_size(self):
        return self._num_units

    def build(self, inputs_shape):
        depth = inputs_shape.as_list()[-1] if inputs_shape.rank is not None else None
        if depth is None:
            raise ValueError(f"Expected inputs.shape[-1] to be known, saw shape: {inputs_shape}")
        n = self._num_units
        self._kernel = self.add_variable("kernel", [depth + n, 4 * n])
        self._bias = self.add_variable("bias", [4 * n],
                                       initializer=_tf().zeros_initializer(dtype=self._dtype))
        self.built = True

    def call(self, inputs, state):
        tf = _tf()
        if self._state_is_tuple:
            c, h = state
        else:
            c, h = tf.split(state, 2, axis=1)
        gate_inputs = tf.nn.bias_add(tf.matmul(tf.concat([inputs, h], 1), self._kernel),
                                     self._bias)
        i, j, f, o = tf.split(gate_inputs, 4, axis=1)
        forget_bias = tf.constant(self._forget_bias, dtype=f.dtype)
        new_c = c * tf.sigmoid(f + forget_bias) + tf.sigmoid(i) * self._activation(j)
        new_h = self._activation(new_c) * tf.sigmoid(o)
        if self._state_is_tuple:
            return new_h, LSTMStateTuple(new_c, new_h)
        return new_h, tf.concat([new_c, new_h], 1)


@tf_export("nn.rnn_cell.LSTMCell")
class LSTMCell(RNNCell):
    """The LSTM with optional peepholes (Gers & Schmidhuber), cell clipping and an output
    projection (Sak et al., 2014)."""

    def __init__(self, num_units, use_peepholes=False, cell_clip=None, initializer=None,
                 num_proj=None, proj_clip=None, num_unit_shards=None, num_proj_shards=None,
                 forget_bias=1.0, state_is_tuple=True, activation=None, reuse=None, name=None,
                 dtype=None, **kwargs):
        super().__init__(name=name, dtype=dtype, _reuse=reuse, **kwargs)
        if num_unit_shards is not None or num_proj_shards is not None:
            raise NotImplementedError(
                "LSTMCell: num_unit_shards and num_proj_shards (variable partitioning) are not "
                "supported; leave them None.")
        self._num_units = num_units
        self._use_peepholes = use_peepholes
        self._cell_clip = cell_clip
        self._initializer = initializer
        self._num_proj = num_proj
        self._proj_clip = proj_clip
        self._forget_bias = forget_bias
        self._state_is_tuple = state_is_tuple
        self._activation = activation or _tf().tanh

    @property
    def state_size(self):
        h = self._num_proj or self._num_units
        if self._state_is_tuple:
            return LSTMStateTuple(self._num_units, h)
        return self._num_units + h

    @property
    def output_size(self):
        return self._num_proj or self._num_units

    def build(self, inputs_shape):
        tf = _tf()
        depth = inputs_shape.as_list()[-1] if inputs_shape.rank is not None else None
        if depth is None:
            raise ValueError(f"Expected inputs.shape[-1] to be known, saw shape: {inputs_shape}")
        n = self._num_units
        h_depth = self._num_proj or n
        self._kernel = self.add_variable("kernel", [depth + h_depth, 4 * n],
                                         initializer=self._initializer)
        self._bias = self.add_variable("bias", [4 * n],
                                       initializer=tf.zeros_initializer(dtype=self._dtype))
        if self._use_peepholes:
            self._w_f_diag = self.add_variable("w_f_diag", [n], initializer=self._initializer)
            self._w_i_diag = self.add_variable("w_i_diag", [n], initializer=self._initializer)
            self._w_o_diag = self.add_variable("w_o_diag", [n], initializer=self._initializer)
        if self._num_proj is not None:
            self._proj_kernel = self.add_variable("projection/kernel", [n, self._num_proj],
                                                  initializer=self._initializer)
        self.built = True

    def call(self, inputs, state):
        tf = _tf()
        n = self._num_units
        num_proj = self._num_proj or n
        if self._state_is_tuple:
            c_prev, m_prev = state
        else:
            c_prev = tf.slice(state, [0, 0], [-1, n])
            m_prev = tf.slice(state, [0, n], [-1, num_proj])
        _static_depth(inputs, "inputs")
        lstm_matrix = tf.nn.bias_add(tf.matmul(tf.concat([inputs, m_prev], 1), self._kernel),
                                     self._bias)
        i, j, f, o = tf.split(lstm_matrix, 4, axis=1)
        if self._use_peepholes:
            c = (tf.sigmoid(f + self._forget_bias + self._w_f_diag * c_prev) * c_prev +
                 tf.sigmoid(i + self._w_i_diag * c_prev) * self._activation(j))
        else:
            c = tf.sigmoid(f + self._forget_bias) * c_prev + tf.sigmoid(i) * self._activation(j)
        if self._cell_clip is not None:
            c = tf.clip_by_value(c, -self._cell_clip, self._cell_clip)
        if self._use_peepholes:
            m = tf.sigmoid(o + self._w_o_diag * c) * self._activation(c)
        else:
            m = tf.sigmoid(o) * self._activation(c)
        if self._num_proj is not None:
            m = tf.matmul(m, self._proj_kernel)
            if self._proj_clip is not None:
                m = tf.clip_by_value(m, -self._proj_clip, self._proj_clip)
        if self._state_is_tuple:
            return m, LSTMStateTuple(c, m)
        return m, tf.concat([c, m], 1)


@tf_export("nn.rnn_cell.MultiRNNCell")
class MultiRNNCell(RNNCell):
    """Cells stacked in layers: each layer's output is the next one's input; the state is the
    tuple of the layers' states. Layer i's variables live under `cell_i/`."""

    def __init__(self, cells, state_is_tuple=True):
        super().__init__()
        if not cells:
            raise ValueError("Must specify at least one cell for MultiRNNCell.")
        if not _nest.is_nested(cells):
            raise TypeError(f"cells must be a list or tuple, but saw: {cells}.")
        if not state_is_tuple and any(_nest.is_nested(c.state_size) for c in cells):
            raise ValueError("Some cells return tuples of states, but the flag "
                             "state_is_tuple is not set. State sizes are: "
                             f"{[c.state_size for c in cells]}")
        self._cells = list(cells)
        self._state_is_tuple = state_is_tuple

    @property
    def state_size(self):
        if self._state_is_tuple:
            return tuple(cell.state_size for cell in self._cells)
        return sum(cell.state_size for cell in self._cells)

    @property
    def output_size(self):
        return self._cells[-1].output_size

    @property
    def variables(self):
        return [v for cell in self._cells for v in cell.variables]

    weights = variables

    @property
    def trainable_variables(self):
        return [v for cell in self._cells for v in cell.trainable_variables]

    trainable_weights = trainable_variables

    def zero_state(self, batch_size, dtype):
        tf = _tf()
        with tf.name_scope(type(self).__name__ + "ZeroState", values=[batch_size]):
            if self._state_is_tuple:
                return tuple(cell.zero_state(batch_size, dtype) for cell in self._cells)
            return super().zero_state(batch_size, dtype)

    def call(self, inputs, state):
        tf = _tf()
        current_input = inputs
        new_states = []
        offset = 0
        for i, cell in enumerate(self._cells):
            with tf.variable_scope(f"cell_{i}"):
                if self._state_is_tuple:
                    if not _nest.is_nested(state):
                        raise ValueError(f"Expected state to be a tuple of length "
                                         f"{len(self.state_size)}, but received: {state}")
                    current_state = state[i]
                else:
                    current_state = tf.slice(state, [0, offset], [-1, cell.state_size])
                    offset += cell.state_size
                current_input, new_state = cell(current_input, current_state)
                new_states.append(new_state)
        if self._state_is_tuple:
            return current_input, tuple(new_states)
        return current_input, tf.concat(new_states, 1)


class _WrapperCell(RNNCell):
    """A cell that delegates to another; its variables are the wrapped cell's."""

    def __init__(self, cell, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(cell, RNNCell) and not (hasattr(cell, "state_size") and
                                                  callable(cell)):
            raise TypeError(f"The parameter cell is not a RNNCell: {cell!r}")
        self.cell = cell

    @property
    def state_size(self):
        return self.cell.state_size

    @property
    def output_size(self):
        return self.cell.output_size

    @property
    def variables(self):
        return self.cell.variables

    weights = variables

    @property
    def trainable_variables(self):
        return self.cell.trainable_variables

    trainable_weights = trainable_variables

    def zero_state(self, batch_size, dtype):
        tf = _tf()
        with tf.name_scope(type(self).__name__ + "ZeroState", values=[batch_size]):
            return self.cell.zero_state(batch_size, dtype)

    def __call__(self, inputs, state, scope=None):
        # A wrapper adds no scope of its own: the wrapped cell's variables keep their names.
        return self.call(inputs, state, scope)


def _default_state_filter(substate):
    """TensorFlow's default: dropout on an LSTM's output h, never on its cell state c."""
    if isinstance(substate, LSTMStateTuple):
        return LSTMStateTuple(c=False, h=True)
    return True


def _state_dropout_selection(visitor, state):
    """Bools shaped like `state`, TensorFlow's traversal: the visitor answers for a substructure
    with a bool (False: no dropout anywhere inside; True: ask again for each part) or with a
    structure of bools one level deep (which parts to ask again about); at a tensor, its bool
    decides."""
    answer = visitor(state)
    if not _nest.is_nested(state):
        if not isinstance(answer, bool):
            raise TypeError(f"dropout_state_filter_visitor must return a bool for a tensor, "
                            f"got {answer!r}")
        return answer
    everything_off = lambda sub: _nest.map_structure(lambda _: False, sub)
    if isinstance(answer, bool):
        if not answer:
            return everything_off(state)
        parts = [_state_dropout_selection(visitor, sub) for sub in state]
    else:
        if not isinstance(answer, tuple) or len(answer) != len(state):
            raise TypeError(f"dropout_state_filter_visitor must return a bool or a tuple of "
                            f"bools matching the state, got {answer!r}")
        parts = [_state_dropout_selection(visitor, sub) if keep else everything_off(sub)
                 for keep, sub in zip(answer, state)]
    return type(state)(*parts) if hasattr(state, "_fields") else type(state)(parts)


@tf_export("nn.rnn_cell.DropoutWrapper")
class DropoutWrapper(_WrapperCell):
    """Dropout on a cell's inputs, outputs and state, with keep probabilities. With
    `variational_recurrent=True` one mask per sequence (made when the wrapper is built, shared
    by every step and every example, as TensorFlow 1 makes it) is used instead of a new one per
    step."""

    def __init__(self, cell, input_keep_prob=1.0, output_keep_prob=1.0, state_keep_prob=1.0,
                 variational_recurrent=False, input_size=None, dtype=None, seed=None,
                 dropout_state_filter_visitor=None, **kwargs):
        super().__init__(cell, **kwargs)
        tf = _tf()
        for name, prob in (("input_keep_prob", input_keep_prob),
                           ("output_keep_prob", output_keep_prob),
                           ("state_keep_prob", state_keep_prob)):
            if isinstance(prob, float) and not 0.0 < prob <= 1.0:
                raise ValueError(f"Parameter {name} must be between 0 and 1: {prob}")
        self._input_keep_prob = input_keep_prob
        self._output_keep_prob = output_keep_prob
        self._state_keep_prob = state_keep_prob
        self._variational = variational_recurrent
        self._seed = seed
        self._state_filter = dropout_state_filter_visitor or _default_state_filter
        self._masks = None
        if variational_recurrent:
            if dtype is None:
                raise ValueError("When variational_recurrent=True, dtype must be provided")

            def mask_noise(size, offset):
                dims = [1] + (list(size) if isinstance(size, (list, tuple)) else [size])
                seed_here = None if seed is None else seed + offset
                return tf.random_uniform(dims, seed=seed_here, dtype=dtype)

            masks = {}
            if not self._always_keeps(input_keep_prob):
                if input_size is None:
                    raise ValueError("When variational_recurrent=True and input_keep_prob < 1.0 "
                                     "or is unknown, input_size must be provided")
                masks["input"] = _nest.map_structure(lambda s: mask_noise(s, 0), input_size)
            masks["state"] = _nest.map_structure(lambda s: mask_noise(s, 1), cell.state_size)
            masks["output"] = _nest.map_structure(lambda s: mask_noise(s, 2), cell.output_size)
            self._masks = masks

    @staticmethod
    def _always_keeps(prob):
        return isinstance(prob, (int, float)) and float(prob) == 1.0

    def _drop(self, values, keep_prob, which, offset, selected=None):
        """Dropout on each tensor of `values` for which `selected` (same structure, bools;
        all when None) is true."""
        tf = _tf()
        if self._always_keeps(keep_prob):
            return values
        flat = _nest.flatten(values)
        chosen = [True] * len(flat) if selected is None else _nest.flatten(selected)
        if self._variational:
            noises = _nest.flatten(self._masks[which])
            dropped = [tf.div(v, keep_prob) * tf.floor(keep_prob + noise) if keep else v
                       for v, noise, keep in zip(flat, noises, chosen)]
        else:
            seed = None if self._seed is None else self._seed + offset
            dropped = [tf.nn.dropout(v, keep_prob=keep_prob, seed=seed) if keep else v
                       for v, keep in zip(flat, chosen)]
        return _nest.pack_sequence_as(values, dropped)

    def call(self, inputs, state, scope=None):
        inputs = self._drop(inputs, self._input_keep_prob, "input", 0)
        output, new_state = self.cell(inputs, state, scope=scope)
        selected = _state_dropout_selection(self._state_filter, new_state)
        new_state = self._drop(new_state, self._state_keep_prob, "state", 1, selected)
        output = self._drop(output, self._output_keep_prob, "output", 2)
        return output, new_state


@tf_export("nn.rnn_cell.ResidualWrapper")
class ResidualWrapper(_WrapperCell):
    """Adds each step's inputs to its outputs (or applies `residual_fn(inputs, outputs)`)."""

    def __init__(self, cell, residual_fn=None, **kwargs):
        super().__init__(cell, **kwargs)
        self._residual_fn = residual_fn

    def call(self, inputs, state, scope=None):
        outputs, new_state = self.cell(inputs, state, scope=scope)
        if self._residual_fn is not None:
            return self._residual_fn(inputs, outputs), new_state

        def add(inp, out):
            inp.shape.assert_is_compatible_with(out.shape)
            return inp + out

        return _nest.map_structure(add, inputs, outputs), new_state


@tf_export("nn.rnn_cell.DeviceWrapper")
class DeviceWrapper(_WrapperCell):
    """Runs the wrapped cell's ops on `device`."""

    def __init__(self, cell, device, **kwargs):
        super().__init__(cell, **kwargs)
        self._device = device

    def zero_state(self, batch_size, dtype):
        with _tf().device(self._device):
            return super().zero_state(batch_size, dtype)

    def call(self, inputs, state, scope=None):
        with _tf().device(self._device):
            return self.cell(inputs, state, scope=scope)
