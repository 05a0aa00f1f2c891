"""BatchNormalization (batch statistics while training, moving statistics at inference) and
LayerNormalization."""

import flowstone as tf
from flowstone.keras import backend as K
from flowstone.keras import constraints, initializers, regularizers
from flowstone.keras.engine.base_layer import Layer
from flowstone.keras.engine.input_spec import InputSpec
from flowstone.util.tf_export import tf_export


def _serialize(obj, module):
    return None if obj is None else module.serialize(obj)


def _axes(axis, rank):
    axes = [axis] if isinstance(axis, int) else list(axis)
    return sorted(a % rank for a in axes)


@tf_export("keras.layers.BatchNormalization")
class BatchNormalization(Layer):
    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones",
                 moving_mean_initializer="zeros", moving_variance_initializer="ones",
                 beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                 gamma_constraint=None, synchronized=False, **kwargs):
        for ignored in ("fused", "renorm", "renorm_clipping", "renorm_momentum",
                        "virtual_batch_size", "adjustment"):
            kwargs.pop(ignored, None)
        super().__init__(**kwargs)
        self.axis = axis
        self.momentum, self.epsilon = momentum, epsilon
        self.center, self.scale = center, scale
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)
        self.moving_mean_initializer = initializers.get(moving_mean_initializer)
        self.moving_variance_initializer = initializers.get(moving_variance_initializer)
        self.beta_regularizer = regularizers.get(beta_regularizer)
        self.gamma_regularizer = regularizers.get(gamma_regularizer)
        self.beta_constraint = constraints.get(beta_constraint)
        self.gamma_constraint = constraints.get(gamma_constraint)
        self.supports_masking = True

    def build(self, input_shape):
        dims = tf.TensorShape(input_shape).as_list()
        rank = len(dims)
        self._param_axes = _axes(self.axis, rank)
        for a in self._param_axes:
            if dims[a] is None:
                raise ValueError(f"Axis {a} of input tensor should have a defined dimension but "
                                 f"the layer received an input with shape {tuple(dims)}.")
        self.input_spec = InputSpec(ndim=rank, axes={a: dims[a] for a in self._param_axes})
        shape = [dims[a] for a in self._param_axes]
        self.gamma = self.add_weight("gamma", shape, initializer=self.gamma_initializer,
                                     regularizer=self.gamma_regularizer,
                                     constraint=self.gamma_constraint) if self.scale else None
        self.beta = self.add_weight("beta", shape, initializer=self.beta_initializer,
                                    regularizer=self.beta_regularizer,
                                    constraint=self.beta_constraint) if self.center else None
        self.moving_mean = self.add_weight("moving_mean", shape,
                                           initializer=self.moving_mean_initializer,
                                           trainable=False)
        self.moving_variance = self.add_weight("moving_variance", shape,
                                               initializer=self.moving_variance_initializer,
                                               trainable=False)

    def _broadcast(self, value, rank):
        shape = [1] * rank
        for a in self._param_axes:
            shape[a] = -1
        return tf.reshape(value, shape)

    def call(self, inputs, training=None):
        if not self.trainable:
            # Keras 2: a frozen BatchNormalization always runs in inference mode.
            training = False
        rank = inputs.shape.ndims
        reduce_axes = [i for i in range(rank) if i not in self._param_axes]
        gamma = self._broadcast(self.gamma.value(), rank) if self.scale else None
        beta = self._broadcast(self.beta.value(), rank) if self.center else None

        def normalize(mean, variance):
            return tf.nn.batch_normalization(inputs, self._broadcast(mean, rank),
                                             self._broadcast(variance, rank), beta, gamma,
                                             self.epsilon)

        def inference():
            return normalize(self.moving_mean.value(), self.moving_variance.value())

        if training is False or training == 0:
            return inference()
        mean, variance = tf.nn.moments(inputs, reduce_axes)
        if rank == 4:
            # Keras's fused kernel (used for 4-D inputs) keeps the unbiased variance.
            count = tf.cast(tf.reduce_prod(tf.gather(tf.shape(inputs), reduce_axes)),
                            variance.dtype)
            moving_variance_sample = variance * count / tf.maximum(count - 1.0, 1.0)
        else:
            moving_variance_sample = variance
        decay = 1.0 - self.momentum
        with tf.name_scope("AssignMovingAvg"):
            self.add_update(self.moving_mean.assign_sub(
                (self.moving_mean.value() - mean) * decay, read_value=False))
        with tf.name_scope("AssignMovingAvg_1"):
            self.add_update(self.moving_variance.assign_sub(
                (self.moving_variance.value() - moving_variance_sample) * decay,
                read_value=False))
        if training is True or training == 1:
            return normalize(mean, variance)
        return K.in_train_phase(lambda: normalize(mean, variance), inference, training)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis, "momentum": self.momentum,
                "epsilon": self.epsilon, "center": self.center, "scale": self.scale,
                "beta_initializer": initializers.serialize(self.beta_initializer),
                "gamma_initializer": initializers.serialize(self.gamma_initializer),
                "moving_mean_initializer": initializers.serialize(self.moving_mean_initializer),
                "moving_variance_initializer":
                    initializers.serialize(self.moving_variance_initializer),
                "beta_regularizer": _serialize(self.beta_regularizer, regularizers),
                "gamma_regularizer": _serialize(self.gamma_regularizer, regularizers),
                "beta_constraint": _serialize(self.beta_constraint, constraints),
                "gamma_constraint": _serialize(self.gamma_constraint, constraints)}


@tf_export("keras.layers.LayerNormalization")
class LayerNormalization(Layer):
    def __init__(self, axis=-1, epsilon=1e-3, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones", beta_regularizer=None,
                 gamma_regularizer=None, beta_constraint=None, gamma_constraint=None,
                 **kwargs):
        super().__init__(**kwargs)
        self.axis = axis
        self.epsilon, self.center, self.scale = epsilon, center, scale
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)
        self.beta_regularizer = regularizers.get(beta_regularizer)
        self.gamma_regularizer = regularizers.get(gamma_regularizer)
        self.beta_constraint = constraints.get(beta_constraint)
        self.gamma_constraint = constraints.get(gamma_constraint)
        self.supports_masking = True

    def build(self, input_shape):
        dims = tf.TensorShape(input_shape).as_list()
        self._norm_axes = _axes(self.axis, len(dims))
        shape = [dims[a] for a in self._norm_axes]
        self.gamma = self.add_weight("gamma", shape, initializer=self.gamma_initializer,
                                     regularizer=self.gamma_regularizer,
                                     constraint=self.gamma_constraint) if self.scale else None
        self.beta = self.add_weight("beta", shape, initializer=self.beta_initializer,
                                    regularizer=self.beta_regularizer,
                                    constraint=self.beta_constraint) if self.center else None

    def call(self, inputs):
        rank = inputs.shape.ndims
        mean, variance = tf.nn.moments(inputs, self._norm_axes, keep_dims=True)
        shape = [1] * rank
        for a in self._norm_axes:
            shape[a] = inputs.shape.as_list()[a]
        gamma = tf.reshape(self.gamma.value(), shape) if self.scale else None
        beta = tf.reshape(self.beta.value(), shape) if self.center else None
        return tf.nn.batch_normalization(inputs, mean, variance, beta, gamma, self.epsilon)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis, "epsilon": self.epsilon,
                "center": self.center, "scale": self.scale,
                "beta_initializer": initializers.serialize(self.beta_initializer),
                "gamma_initializer": initializers.serialize(self.gamma_initializer),
                "beta_regularizer": _serialize(self.beta_regularizer, regularizers),
                "gamma_regularizer": _serialize(self.gamma_regularizer, regularizers),
                "beta_constraint": _serialize(self.beta_constraint, constraints),
                "gamma_constraint": _serialize(self.gamma_constraint, constraints)}
