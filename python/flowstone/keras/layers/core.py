"""Core layers: Dense, Activation, Dropout, Flatten, Reshape, Permute, RepeatVector, Lambda."""

import numpy as np

import flowstone as tf
from flowstone.keras import activations
from flowstone.keras import backend as K
from flowstone.keras import constraints, initializers, regularizers
from flowstone.keras.engine.base_layer import Layer
from flowstone.keras.engine.input_spec import InputSpec
from flowstone.util.tf_export import tf_export


def _serialize(obj, module):
    return None if obj is None else module.serialize(obj)


@tf_export("keras.layers.Dense")
class Dense(Layer):
    def __init__(self, units, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        self.units = int(units)
        if self.units <= 0:
            raise ValueError("Received an invalid value for `units`, expected a positive "
                             f"integer. Received: units={units}")
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self.input_spec = InputSpec(min_ndim=2)
        self.supports_masking = True

    def build(self, input_shape):
        last_dim = tf.TensorShape(input_shape).as_list()[-1]
        if last_dim is None:
            raise ValueError("The last dimension of the inputs to a Dense layer should be "
                             f"defined. Found None. Full input shape received: {input_shape}")
        self.input_spec = InputSpec(min_ndim=2, axes={-1: last_dim})
        self.kernel = self.add_weight("kernel", shape=[last_dim, self.units],
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.bias = self.add_weight("bias", shape=[self.units],
                                    initializer=self.bias_initializer,
                                    regularizer=self.bias_regularizer,
                                    constraint=self.bias_constraint) if self.use_bias else None
        self.built = True

    def call(self, inputs):
        if inputs.dtype.name != self._dtype:
            inputs = tf.cast(inputs, self._dtype)
        rank = inputs.shape.ndims
        if rank == 2:
            outputs = tf.matmul(inputs, self.kernel.value())
        else:
            outputs = tf.tensordot(inputs, self.kernel.value(), [[rank - 1], [0]])
        if self.use_bias:
            outputs = tf.nn.bias_add(outputs, self.bias.value())
        return self.activation(outputs)

    def get_config(self):
        return {**super().get_config(), "units": self.units,
                "activation": activations.serialize(self.activation),
                "use_bias": self.use_bias,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer),
                "kernel_regularizer": _serialize(self.kernel_regularizer, regularizers),
                "bias_regularizer": _serialize(self.bias_regularizer, regularizers),
                "activity_regularizer": _serialize(self.activity_regularizer, regularizers),
                "kernel_constraint": _serialize(self.kernel_constraint, constraints),
                "bias_constraint": _serialize(self.bias_constraint, constraints)}


@tf_export("keras.layers.Activation")
class Activation(Layer):
    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True
        self.activation = activations.get(activation)

    def call(self, inputs):
        return self.activation(inputs)

    def get_config(self):
        return {**super().get_config(), "activation": activations.serialize(self.activation)}


@tf_export("keras.layers.Dropout")
class Dropout(Layer):
    """Zeroes a fraction `rate` of the inputs while training (scaling the rest by
    1 / (1 - rate)); the identity at inference."""

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        if isinstance(rate, (int, float)) and not 0 <= rate <= 1:
            raise ValueError(f"Invalid value {rate} received for `rate`, expected a value "
                             "between 0 and 1.")
        self.rate, self.noise_shape, self.seed = rate, noise_shape, seed
        self.supports_masking = True

    def call(self, inputs, training=None):
        if self.rate == 0:
            return tf.identity(inputs)

        def dropped():
            noise_shape = self.noise_shape
            if noise_shape is not None:
                dynamic = tf.shape(inputs)
                noise_shape = tf.stack([dynamic[i] if d is None else d
                                        for i, d in enumerate(noise_shape)])
            return tf.nn.dropout(inputs, noise_shape=noise_shape, seed=self.seed,
                                 rate=self.rate)
        return K.in_train_phase(dropped, lambda: tf.identity(inputs), training=training)

    def get_config(self):
        return {**super().get_config(), "rate": self.rate, "noise_shape": self.noise_shape,
                "seed": self.seed}


@tf_export("keras.layers.Flatten")
class Flatten(Layer):
    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = data_format or K.image_data_format()
        self.input_spec = InputSpec(min_ndim=1)

    def call(self, inputs):
        if self.data_format == "channels_first" and inputs.shape.ndims > 2:
            rank = inputs.shape.ndims
            inputs = tf.transpose(inputs, [0] + list(range(2, rank)) + [1])
        dims = inputs.shape.as_list()[1:]
        if dims and None not in dims:
            return tf.reshape(inputs, [-1, int(np.prod(dims))])
        return tf.reshape(inputs, tf.stack([tf.shape(inputs)[0], -1]))

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format}


@tf_export("keras.layers.Reshape")
class Reshape(Layer):
    def __init__(self, target_shape, **kwargs):
        super().__init__(**kwargs)
        self.target_shape = tuple(target_shape)

    def call(self, inputs):
        input_dims = inputs.shape.as_list()[1:]
        target = list(self.target_shape)
        if None not in input_dims:
            known = int(np.prod([d for d in target if d != -1]))
            total = int(np.prod(input_dims))
            if (-1 in target and total % known) or (-1 not in target and known != total):
                raise ValueError(f"total size of new array must be unchanged, "
                                 f"input_shape = {input_dims}, output_shape = {target}")
        return tf.reshape(inputs, [-1] + target) if -1 not in target else \
            tf.reshape(inputs, tf.stack([tf.shape(inputs)[0]] + target))

    def get_config(self):
        return {**super().get_config(), "target_shape": self.target_shape}


@tf_export("keras.layers.Permute")
class Permute(Layer):
    def __init__(self, dims, **kwargs):
        super().__init__(**kwargs)
        self.dims = tuple(dims)
        if sorted(self.dims) != list(range(1, len(self.dims) + 1)):
            raise ValueError("Invalid permutation argument `dims` for Permute Layer. The set "
                             "of indices in `dims` must be consecutive and start from 1. "
                             f"Received dims={dims}")
        self.input_spec = InputSpec(ndim=len(self.dims) + 1)

    def call(self, inputs):
        return tf.transpose(inputs, [0] + list(self.dims))

    def get_config(self):
        return {**super().get_config(), "dims": self.dims}


@tf_export("keras.layers.RepeatVector")
class RepeatVector(Layer):
    def __init__(self, n, **kwargs):
        super().__init__(**kwargs)
        self.n = int(n)
        self.input_spec = InputSpec(ndim=2)

    def call(self, inputs):
        return tf.tile(tf.expand_dims(inputs, 1), [1, self.n, 1])

    def get_config(self):
        return {**super().get_config(), "n": self.n}


@tf_export("keras.layers.Lambda")
class Lambda(Layer):
    """Wraps an expression: `Lambda(lambda x: x ** 2)`. Its config holds the function's name
    (a named function is found again through custom_objects); Python bytecode is not saved."""

    def __init__(self, function, output_shape=None, mask=None, arguments=None, **kwargs):
        super().__init__(**kwargs)
        self.function = function
        self.arguments = arguments or {}
        self._output_shape = output_shape

    def call(self, inputs, mask=None, training=None):
        return self.function(inputs, **self.arguments)

    def get_config(self):
        name = getattr(self.function, "__name__", None)
        if name is None or name == "<lambda>":
            raise ValueError(f"Lambda layer {self.name} wraps an anonymous function, which "
                             "Flowstone cannot save (Keras would save Python bytecode). Use a "
                             "named function and pass it in custom_objects when loading.")
        return {**super().get_config(), "function": name, "function_type": "function",
                "module": getattr(self.function, "__module__", None),
                "output_shape": self._output_shape, "output_shape_type": "raw",
                "output_shape_module": None, "arguments": self.arguments}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from flowstone.keras.utils.generic_utils import deserialize_keras_object
        config = dict(config)
        function = deserialize_keras_object(config.pop("function"), {}, custom_objects,
                                            printable_module_name="function in Lambda layer")
        for key in ("function_type", "module", "output_shape_type", "output_shape_module"):
            config.pop(key, None)
        return cls(function, **config)


@tf_export("keras.layers.ActivityRegularization")
class ActivityRegularization(Layer):
    def __init__(self, l1=0.0, l2=0.0, **kwargs):
        super().__init__(activity_regularizer=regularizers.L1L2(l1=l1, l2=l2), **kwargs)
        self.supports_masking = True
        self.l1, self.l2 = l1, l2

    def get_config(self):
        return {**super().get_config(), "l1": self.l1, "l2": self.l2}


@tf_export("keras.layers.Masking")
class Masking(Layer):
    def __init__(self, mask_value=0.0, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True
        self.mask_value = mask_value

    def compute_mask(self, inputs, mask=None):
        return tf.reduce_any(tf.not_equal(inputs, self.mask_value), axis=-1)

    def call(self, inputs):
        keep = tf.reduce_any(tf.not_equal(inputs, self.mask_value), axis=-1, keepdims=True)
        return inputs * tf.cast(keep, inputs.dtype)

    def get_config(self):
        return {**super().get_config(), "mask_value": self.mask_value}
