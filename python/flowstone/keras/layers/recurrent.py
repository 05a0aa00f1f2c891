"""Recurrent layers: SimpleRNN, LSTM and GRU (cells run by one RNN layer), Bidirectional and
TimeDistributed.

The time loop is unrolled into the graph (LSTM runs as one fused op when it can): the number
of timesteps must be known when the layer is built (it is whenever the data fixes it: fit and
predict build from the data's shape). A mask (from Embedding(mask_zero=True) or Masking) carries
the state and output over masked steps.
"""

import copy

import flowstone as tf
from flowstone.keras import activations
from flowstone.keras import constraints, initializers, regularizers
from flowstone.keras.engine.base_layer import Layer
from flowstone.framework import ops as _ops
from flowstone.keras.engine.input_spec import InputSpec
from flowstone.util.tf_export import tf_export


def _serialize(obj, module):
    return None if obj is None else module.serialize(obj)


class _Cell(Layer):
    """Shared weights and config of the three cells; `gates` blocks of `units` columns."""

    gates = 1

    def __init__(self, units, activation="tanh", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", kernel_regularizer=None, recurrent_regularizer=None,
                 bias_regularizer=None, kernel_constraint=None, recurrent_constraint=None,
                 bias_constraint=None, dropout=0.0, recurrent_dropout=0.0, **kwargs):
        super().__init__(**kwargs)
        self.units = int(units)
        if self.units <= 0:
            raise ValueError("Received an invalid value for argument `units`, expected a "
                             f"positive integer, got {units}.")
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.recurrent_initializer = initializers.get(recurrent_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.recurrent_regularizer = regularizers.get(recurrent_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.recurrent_constraint = constraints.get(recurrent_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        if dropout or recurrent_dropout:
            raise NotImplementedError("dropout / recurrent_dropout inside recurrent cells are "
                                      "not supported; put a Dropout layer before or after.")
        self.dropout, self.recurrent_dropout = 0.0, 0.0

    state_size = property(lambda self: self.units)

    def build(self, input_shape):
        input_dim = tf.TensorShape(input_shape).as_list()[-1]
        width = self.units * self.gates
        self.kernel = self.add_weight("kernel", (input_dim, width),
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.recurrent_kernel = self.add_weight("recurrent_kernel", (self.units, width),
                                                initializer=self.recurrent_initializer,
                                                regularizer=self.recurrent_regularizer,
                                                constraint=self.recurrent_constraint)
        self.bias = self.add_weight("bias", self._bias_shape(), initializer=self._bias_init(),
                                    regularizer=self.bias_regularizer,
                                    constraint=self.bias_constraint) if self.use_bias else None

    def _bias_shape(self):
        return (self.units * self.gates,)

    def _bias_init(self):
        return self.bias_initializer

    def initial_states(self, batch, dtype):
        return [tf.zeros(tf.stack([batch, self.units]), dtype=dtype)]

    def get_config(self):
        return {**super().get_config(), "units": self.units,
                "activation": activations.serialize(self.activation),
                "use_bias": self.use_bias,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "recurrent_initializer": initializers.serialize(self.recurrent_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer),
                "kernel_regularizer": _serialize(self.kernel_regularizer, regularizers),
                "recurrent_regularizer": _serialize(self.recurrent_regularizer, regularizers),
                "bias_regularizer": _serialize(self.bias_regularizer, regularizers),
                "kernel_constraint": _serialize(self.kernel_constraint, constraints),
                "recurrent_constraint": _serialize(self.recurrent_constraint, constraints),
                "bias_constraint": _serialize(self.bias_constraint, constraints),
                "dropout": self.dropout, "recurrent_dropout": self.recurrent_dropout}


@tf_export("keras.layers.SimpleRNNCell")
class SimpleRNNCell(_Cell):
    def step(self, x, states):
        h = tf.matmul(x, self.kernel.value()) + tf.matmul(states[0], self.recurrent_kernel.value())
        if self.use_bias:
            h = h + self.bias.value()
        h = self.activation(h)
        return h, [h]


@tf_export("keras.layers.LSTMCell")
class LSTMCell(_Cell):
    """Gates in Keras's order i, f, c, o; c' = f*c + i*act(z_c), h' = o*act(c')."""

    gates = 4

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid",
                 unit_forget_bias=True, **kwargs):
        kwargs.pop("implementation", None)
        super().__init__(units, activation=activation, **kwargs)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.unit_forget_bias = unit_forget_bias

    state_size = property(lambda self: [self.units, self.units])

    def _bias_init(self):
        if not self.unit_forget_bias:
            return self.bias_initializer
        units, base = self.units, self.bias_initializer

        def init(shape, dtype=None, partition_info=None):
            return tf.concat([base((units,), dtype), tf.ones([units], dtype=dtype),
                              base((2 * units,), dtype)], 0)
        return init

    def initial_states(self, batch, dtype):
        zeros = tf.zeros(tf.stack([batch, self.units]), dtype=dtype)
        return [zeros, zeros]

    def step(self, x, states):
        h, c = states
        z = tf.matmul(x, self.kernel.value()) + tf.matmul(h, self.recurrent_kernel.value())
        if self.use_bias:
            z = z + self.bias.value()
        z_i, z_f, z_c, z_o = tf.split(z, 4, axis=1)
        i, f, o = (self.recurrent_activation(z_i), self.recurrent_activation(z_f),
                   self.recurrent_activation(z_o))
        c = f * c + i * self.activation(z_c)
        h = o * self.activation(c)
        return h, [h, c]

    def get_config(self):
        return {**super().get_config(),
                "recurrent_activation": activations.serialize(self.recurrent_activation),
                "unit_forget_bias": self.unit_forget_bias, "implementation": 2}


@tf_export("keras.layers.GRUCell")
class GRUCell(_Cell):
    """Gates z, r, h; with reset_after (Keras 2's default) the reset gate applies after the
    recurrent matmul and the bias has an input row and a recurrent row."""

    gates = 3

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid",
                 reset_after=True, **kwargs):
        kwargs.pop("implementation", None)
        super().__init__(units, activation=activation, **kwargs)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.reset_after = reset_after

    def _bias_shape(self):
        return (2, 3 * self.units) if self.reset_after else (3 * self.units,)

    def step(self, x, states):
        h_prev = states[0]
        bias = self.bias.value() if self.use_bias else None
        x_part = tf.matmul(x, self.kernel.value())
        if bias is not None:
            x_part = x_part + (bias[0] if self.reset_after else bias)
        x_z, x_r, x_h = tf.split(x_part, 3, axis=1)
        u = self.recurrent_kernel.value()
        if self.reset_after:
            inner = tf.matmul(h_prev, u)
            if bias is not None:
                inner = inner + bias[1]
            r_z, r_r, r_h = tf.split(inner, 3, axis=1)
            z = self.recurrent_activation(x_z + r_z)
            r = self.recurrent_activation(x_r + r_r)
            hh = self.activation(x_h + r * r_h)
        else:
            u_z, u_r, u_h = tf.split(u, 3, axis=1)
            z = self.recurrent_activation(x_z + tf.matmul(h_prev, u_z))
            r = self.recurrent_activation(x_r + tf.matmul(h_prev, u_r))
            hh = self.activation(x_h + tf.matmul(r * h_prev, u_h))
        h = z * h_prev + (1.0 - z) * hh
        return h, [h]

    def get_config(self):
        return {**super().get_config(),
                "recurrent_activation": activations.serialize(self.recurrent_activation),
                "reset_after": self.reset_after, "implementation": 2}


@tf_export("keras.layers.RNN")
class RNN(Layer):
    def __init__(self, cell, return_sequences=False, return_state=False, go_backwards=False,
                 stateful=False, unroll=False, time_major=False, **kwargs):
        if stateful or time_major:
            raise NotImplementedError("stateful and time_major recurrent layers are not "
                                      "supported.")
        super().__init__(**kwargs)
        self.cell = cell
        self.return_sequences, self.return_state = return_sequences, return_state
        self.go_backwards = go_backwards
        self.stateful, self.unroll, self.time_major = False, unroll, False
        self.supports_masking = True
        self.input_spec = InputSpec(ndim=3)

    def build(self, input_shape):
        dims = tf.TensorShape(input_shape).as_list()
        with tf.name_scope(self.cell.name):
            self.cell.build([dims[0], dims[2]])
        self.cell.built = True

    def compute_mask(self, inputs, mask=None):
        if isinstance(mask, list):
            mask = mask[0]
        output_mask = mask if self.return_sequences else None
        if self.return_state:
            return [output_mask] + [None] * len(_as_list(self.cell.state_size))
        return output_mask

    def call(self, inputs, mask=None, training=None, initial_state=None):
        steps = inputs.shape.as_list()[1]
        if steps is None:
            raise ValueError(f"Layer {self.name} needs a known number of timesteps (the loop "
                             "is unrolled into the graph); got input shape "
                             f"{tuple(inputs.shape.as_list())}. Give Input a full shape or set "
                             "Embedding's input_length.")
        batch = tf.shape(inputs)[0]
        states = list(initial_state) if initial_state is not None else \
            self.cell.initial_states(batch, inputs.dtype)
        order = range(steps - 1, -1, -1) if self.go_backwards else range(steps)
        output = tf.zeros(tf.stack([batch, self.cell.units]), dtype=inputs.dtype)
        outputs = []
        for t in order:
            candidate, new_states = self.cell.step(inputs[:, t, :], states)
            if mask is not None:
                keep = tf.cast(tf.expand_dims(mask[:, t], -1), inputs.dtype)
                candidate = keep * candidate + (1.0 - keep) * output
                new_states = [keep * n + (1.0 - keep) * s for n, s in zip(new_states, states)]
            output, states = candidate, new_states
            outputs.append(output)
        result = tf.stack(outputs, axis=1) if self.return_sequences else output
        return [result] + states if self.return_state else result

    def get_config(self):
        return {**super().get_config(), "return_sequences": self.return_sequences,
                "return_state": self.return_state, "go_backwards": self.go_backwards,
                "stateful": False, "unroll": self.unroll, "time_major": False}


def _as_list(value):
    return value if isinstance(value, list) else [value]


class _CellLayer(RNN):
    """SimpleRNN / LSTM / GRU: an RNN that makes its own cell from its arguments."""

    cell_class = None
    _RNN_ARGS = ("return_sequences", "return_state", "go_backwards", "stateful", "unroll",
                 "time_major")
    _BASE_ARGS = ("name", "trainable", "dtype", "input_shape", "batch_input_shape",
                  "batch_size", "input_dim", "weights", "activity_regularizer")

    def __init__(self, units, **kwargs):
        rnn_args = {k: kwargs.pop(k) for k in self._RNN_ARGS if k in kwargs}
        base_args = {k: kwargs.pop(k) for k in self._BASE_ARGS if k in kwargs}
        cell_name = kwargs.pop("cell_name", None)
        cell = self.cell_class(units, name=cell_name, dtype=base_args.get("dtype"), **kwargs)
        super().__init__(cell, **rnn_args, **base_args)

    def __getattr__(self, name):
        cell = self.__dict__.get("cell")
        if cell is not None and not name.startswith("_"):
            return getattr(cell, name)
        raise AttributeError(name)

    def get_config(self):
        config = self.cell.get_config()
        for key in ("name", "trainable", "dtype"):
            config.pop(key, None)
        return {**super().get_config(), **config}


@tf_export("keras.layers.SimpleRNN")
class SimpleRNN(_CellLayer):
    cell_class = SimpleRNNCell


@tf_export("keras.layers.LSTM")
class LSTM(_CellLayer):
    """With tanh and sigmoid activations, no mask and a float dtype, the whole sequence runs as
    one BlockLSTMV2 op (Keras's gate order; src/ops/nn/lstm_ops.cc), its gradient as one
    BlockLSTMGradV2 op; otherwise the cell's steps are unrolled."""

    cell_class = LSTMCell

    def _fused(self, inputs, mask):
        cell = self.cell
        return (mask is None and inputs.dtype in (tf.float32, tf.float64) and
                cell.activation is activations.tanh and
                cell.recurrent_activation is activations.sigmoid)

    def call(self, inputs, mask=None, training=None, initial_state=None):
        if not self._fused(inputs, mask):
            return super().call(inputs, mask, training, initial_state)
        cell = self.cell
        steps = inputs.shape.as_list()[1]
        if steps is None:
            return super().call(inputs, mask, training, initial_state)
        batch = tf.shape(inputs)[0]
        h0, c0 = (list(initial_state) if initial_state is not None else
                  cell.initial_states(batch, inputs.dtype))
        x = tf.transpose(inputs, [1, 0, 2])
        if self.go_backwards:
            x = tf.reverse(x, [0])
        units = cell.units
        w = tf.concat([cell.kernel.value(), cell.recurrent_kernel.value()], 0)
        b = cell.bias.value() if cell.use_bias else tf.zeros([4 * units], inputs.dtype)
        no_peepholes = tf.zeros([units], inputs.dtype)
        outputs = _ops.apply_op(
            "BlockLSTMV2", [tf.constant(steps, tf.int64), x, c0, h0, w, no_peepholes,
                            no_peepholes, no_peepholes, b],
            {"cell_clip": 0.0, "use_peephole": False}, name="BlockLSTMV2").outputs
        cs, h = outputs[1], outputs[6]
        last_h, last_c = h[steps - 1], cs[steps - 1]
        result = tf.transpose(h, [1, 0, 2]) if self.return_sequences else last_h
        return [result, last_h, last_c] if self.return_state else result


@tf_export("keras.layers.GRU")
class GRU(_CellLayer):
    cell_class = GRUCell


@tf_export("keras.layers.Bidirectional")
class Bidirectional(Layer):
    """Runs a recurrent layer forwards and a copy of it backwards, merging their outputs."""

    def __init__(self, layer, merge_mode="concat", weights=None, backward_layer=None, **kwargs):
        if merge_mode not in ("sum", "mul", "ave", "concat", None):
            raise ValueError(f"Invalid merge mode. Received: {merge_mode}. Merge mode should "
                             "be one of {'sum', 'mul', 'ave', 'concat', None}")
        super().__init__(**kwargs)
        config = layer.get_config()
        self.forward_layer = type(layer).from_config({**config,
                                                      "name": "forward_" + config["name"]})
        if backward_layer is None:
            backward_config = {**config, "name": "backward_" + config["name"],
                               "go_backwards": not config.get("go_backwards", False)}
            backward_layer = type(layer).from_config(backward_config)
        self.backward_layer = backward_layer
        self.merge_mode = merge_mode
        self.return_sequences = config.get("return_sequences", False)
        self.return_state = config.get("return_state", False)
        self._layer_config = {"class_name": type(layer).__name__, "config": config}
        self.supports_masking = True
        self.input_spec = InputSpec(ndim=3)

    def call(self, inputs, mask=None, training=None):
        forward = self.forward_layer(inputs, mask=mask) if mask is not None else \
            self.forward_layer(inputs)
        backward = self.backward_layer(inputs, mask=mask) if mask is not None else \
            self.backward_layer(inputs)
        states = []
        if self.return_state:
            forward, states = forward[0], forward[1:] + backward[1:]
            backward = backward[0]
        if self.return_sequences:
            backward = tf.reverse(backward, [1])
        if self.merge_mode == "concat":
            merged = tf.concat([forward, backward], -1)
        elif self.merge_mode == "sum":
            merged = forward + backward
        elif self.merge_mode == "ave":
            merged = (forward + backward) / 2.0
        elif self.merge_mode == "mul":
            merged = forward * backward
        else:
            merged = [forward, backward]
        if self.return_state:
            return (merged if isinstance(merged, list) else [merged]) + states
        return merged

    def compute_mask(self, inputs, mask=None):
        return mask if self.return_sequences else None

    def get_config(self):
        return {**super().get_config(), "layer": copy.deepcopy(self._layer_config),
                "merge_mode": self.merge_mode}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from flowstone.keras.layers import deserialize
        config = dict(config)
        layer = deserialize(config.pop("layer"), custom_objects=custom_objects)
        backward = config.pop("backward_layer", None)
        if backward is not None:
            backward = deserialize(backward, custom_objects=custom_objects)
        return cls(layer, backward_layer=backward, **config)


@tf_export("keras.layers.TimeDistributed")
class TimeDistributed(Layer):
    """Applies a layer to every timestep: (batch, time, ...) folded into (batch * time, ...)."""

    def __init__(self, layer, **kwargs):
        super().__init__(**kwargs)
        self.layer = layer
        self.supports_masking = True
        self.input_spec = InputSpec(min_ndim=3)

    def call(self, inputs, training=None, mask=None):
        dims = inputs.shape.as_list()
        dynamic = tf.shape(inputs)
        folded = tf.reshape(inputs, tf.concat([[-1], dynamic[2:]], 0))
        folded.set_shape([None] + dims[2:])
        out = self.layer(folded)
        out_dims = out.shape.as_list()[1:]
        steps = dims[1] if dims[1] is not None else dynamic[1]
        result = tf.reshape(out, tf.concat([tf.stack([dynamic[0], steps]), tf.shape(out)[1:]],
                                           0))
        result.set_shape([None, dims[1]] + out_dims)
        return result

    def get_config(self):
        return {**super().get_config(), "layer": {"class_name": type(self.layer).__name__,
                                                  "config": self.layer.get_config()}}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from flowstone.keras.layers import deserialize
        config = dict(config)
        return cls(deserialize(config.pop("layer"), custom_objects=custom_objects), **config)
