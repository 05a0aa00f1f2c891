"""Activation layers: ReLU, LeakyReLU, PReLU, ELU, Softmax."""

import flowstone as tf
from flowstone.keras import activations
from flowstone.keras import constraints, initializers, regularizers
from flowstone.keras.engine.base_layer import Layer
from flowstone.keras.engine.input_spec import InputSpec
from flowstone.util.tf_export import tf_export


@tf_export("keras.layers.LeakyReLU")
class LeakyReLU(Layer):
    def __init__(self, alpha=0.3, **kwargs):
        super().__init__(**kwargs)
        if alpha is None:
            raise ValueError("The alpha value of a Leaky ReLU layer cannot be None. Expecting "
                             f"a float. Received: {alpha}")
        self.supports_masking = True
        self.alpha = float(alpha)

    def call(self, inputs):
        return tf.nn.leaky_relu(inputs, alpha=self.alpha)

    def get_config(self):
        return {**super().get_config(), "alpha": self.alpha}


@tf_export("keras.layers.ReLU")
class ReLU(Layer):
    def __init__(self, max_value=None, negative_slope=0.0, threshold=0.0, **kwargs):
        super().__init__(**kwargs)
        if max_value is not None and max_value < 0.0:
            raise ValueError("max_value of a ReLU layer cannot be a negative value. Received: "
                             f"{max_value}")
        self.supports_masking = True
        self.max_value, self.negative_slope, self.threshold = max_value, negative_slope, threshold

    def call(self, inputs):
        return activations.relu(inputs, alpha=self.negative_slope, max_value=self.max_value,
                                threshold=self.threshold)

    def get_config(self):
        return {**super().get_config(), "max_value": self.max_value,
                "negative_slope": self.negative_slope, "threshold": self.threshold}


@tf_export("keras.layers.ELU")
class ELU(Layer):
    def __init__(self, alpha=1.0, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True
        self.alpha = float(alpha)

    def call(self, inputs):
        return activations.elu(inputs, self.alpha)

    def get_config(self):
        return {**super().get_config(), "alpha": self.alpha}


@tf_export("keras.layers.Softmax")
class Softmax(Layer):
    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True
        self.axis = axis

    def call(self, inputs, mask=None):
        if mask is not None:
            inputs = inputs + (1.0 - tf.cast(mask, inputs.dtype)) * -1e9
        return tf.nn.softmax(inputs, axis=self.axis)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}


@tf_export("keras.layers.PReLU")
class PReLU(Layer):
    """max(0, x) + alpha * min(0, x), with a learned alpha per unit (shared over
    `shared_axes`)."""

    def __init__(self, alpha_initializer="zeros", alpha_regularizer=None,
                 alpha_constraint=None, shared_axes=None, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True
        self.alpha_initializer = initializers.get(alpha_initializer)
        self.alpha_regularizer = regularizers.get(alpha_regularizer)
        self.alpha_constraint = constraints.get(alpha_constraint)
        if shared_axes is not None and not isinstance(shared_axes, (list, tuple)):
            shared_axes = [shared_axes]
        self.shared_axes = None if shared_axes is None else list(shared_axes)

    def build(self, input_shape):
        dims = tf.TensorShape(input_shape).as_list()
        shape = list(dims[1:])
        for axis in self.shared_axes or []:
            shape[axis - 1] = 1
        self.alpha = self.add_weight("alpha", shape, initializer=self.alpha_initializer,
                                     regularizer=self.alpha_regularizer,
                                     constraint=self.alpha_constraint)
        axes = {i: dims[i] for i in range(1, len(dims))
                if i not in (self.shared_axes or []) and dims[i] is not None}
        self.input_spec = InputSpec(ndim=len(dims), axes=axes)

    def call(self, inputs):
        return tf.nn.relu(inputs) - self.alpha.value() * tf.nn.relu(-inputs)

    def get_config(self):
        return {**super().get_config(),
                "alpha_initializer": initializers.serialize(self.alpha_initializer),
                "alpha_regularizer": None if self.alpha_regularizer is None
                else regularizers.serialize(self.alpha_regularizer),
                "alpha_constraint": None if self.alpha_constraint is None
                else constraints.serialize(self.alpha_constraint),
                "shared_axes": self.shared_axes}
