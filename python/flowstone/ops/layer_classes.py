"""TF1's tf.layers classes (tf.layers.Dense, Conv2D, BatchNormalization, ...): objects that
build the functional layers of flowstone/layers.py in a variable scope of their own, create their
variables on the first call and share them on later ones. Each class builds through the same
`build_*` function as its functional form, so the two cannot drift apart.

A layer made with `_scope=<VariableScope>` (as tf_slim and tf.contrib.layers make them) builds in
that scope, with its ops under the scope's original name scope, as TensorFlow's do."""

from flowstone import layers as _layers
from flowstone.framework import ops as _ops
from flowstone.framework.tensor_shape import TensorShape
from flowstone.ops import conv_layers, init_ops, variable_scope
from flowstone.util.naming import to_snake_case
from flowstone.util.tf_export import tf_export

# Keyword arguments TensorFlow's base layer accepts beside its own.
_BASE_KWARGS = {"input_shape", "batch_input_shape", "batch_size", "weights",
                "activity_regularizer", "autocast", "dynamic", "_scope", "_reuse"}


@tf_export("layers.Layer")
class Layer:
    """The base of TF1's layers: `layer(inputs)` (or `layer.apply(inputs)`) opens the layer's
    variable scope, calls `build(input_shape)` once and then `call(inputs)`. A subclass creates
    its weights in `build` with `add_weight`."""

    def __init__(self, trainable=True, name=None, dtype=None, **kwargs):
        unknown = set(kwargs) - _BASE_KWARGS
        if unknown:
            raise TypeError(f"Keyword argument not understood: {sorted(unknown)[0]}")
        self.trainable = trainable
        self._name = name
        self.dtype = None if dtype is None else _dtypes().as_dtype(dtype)
        self.activity_regularizer = kwargs.get("activity_regularizer")
        self._scope = kwargs.get("_scope")
        if isinstance(self._scope, str):
            # A name scope given as the scope (tf_slim's pooling layers): the layer's name.
            self._name, self._scope = self._scope, None
        self._reuse = kwargs.get("_reuse")
        self.built = False
        self.input_spec = None
        self._trainable_weights = []
        self._non_trainable_weights = []
        self._updates = []

    @property
    def name(self):
        if self._name is None and self._scope is not None:
            return self._scope.name
        return self._name or to_snake_case(type(self).__name__)

    @property
    def scope_name(self):
        if self._scope is None:
            raise ValueError("No name available for layer scope because the layer "
                             f"\"{self.name}\" has not been used yet. The scope name is "
                             "determined the first time the layer instance is called.")
        return self._scope.name

    def build(self, input_shape):
        self.built = True

    def call(self, inputs, **kwargs):
        return inputs

    def add_weight(self, name, shape, dtype=None, initializer=None, regularizer=None,
                   trainable=None, constraint=None, **kwargs):
        """A variable of this layer, made (or shared) with tf.get_variable in its scope."""
        trainable = self.trainable if trainable is None else (trainable and self.trainable)
        variable = variable_scope.get_variable(
            name, shape, dtype=dtype or self.dtype or _dtypes().float32,
            initializer=initializer, regularizer=regularizer, trainable=trainable,
            constraint=constraint)
        self._track(variable, trainable)
        return variable

    def _track(self, variable, trainable):
        if variable is None or any(variable is v for v in self.weights):
            return
        (self._trainable_weights if trainable else self._non_trainable_weights).append(variable)

    def _enter_scope(self):
        """The first call opens the layer's scope (or enters the one it was given); later calls
        re-enter it with reuse=True and put their ops under its name scope again."""
        if self._scope is None:
            default = to_snake_case(type(self).__name__)
            return _FirstScope(self, variable_scope.variable_scope(
                self._name, default_name=default, reuse=self._reuse))
        reuse = True if self.built else self._reuse
        return _layers.reenter_scope(self._scope, reuse=reuse)

    def __call__(self, inputs, *args, **kwargs):
        with self._enter_scope():
            if not self.built:
                inputs = _ops.convert_to_tensor(inputs) if not isinstance(
                    inputs, (list, tuple, dict)) else inputs
                self.build(getattr(inputs, "shape", None))
                self.built = True
            return self.call(inputs, *args, **kwargs)

    def apply(self, inputs, *args, **kwargs):
        """TF1's name for calling the layer."""
        return self(inputs, *args, **kwargs)

    @property
    def trainable_weights(self):
        return list(self._trainable_weights) if self.trainable else []

    @property
    def non_trainable_weights(self):
        if self.trainable:
            return list(self._non_trainable_weights)
        return self._trainable_weights + self._non_trainable_weights

    @property
    def weights(self):
        return self._trainable_weights + self._non_trainable_weights

    trainable_variables = trainable_weights
    non_trainable_variables = non_trainable_weights
    variables = weights

    @property
    def updates(self):
        return list(self._updates)

    @property
    def losses(self):
        regularization = _ops.get_collection(_ops.GraphKeys.REGULARIZATION_LOSSES)
        prefix = self.scope_name + "/" if self._scope is not None else None
        if prefix is None:
            return []
        return [loss for loss in regularization if loss.name.startswith(prefix)]


class _FirstScope:
    """Enters a layer's new variable scope and records it on the layer."""

    def __init__(self, layer, scope):
        self._layer, self._scope = layer, scope

    def __enter__(self):
        self._layer._scope = self._scope.__enter__()
        return self._layer._scope

    def __exit__(self, *exc):
        return self._scope.__exit__(*exc)


def _dtypes():
    from flowstone import dtypes
    return dtypes


@tf_export("layers.Dense")
class Dense(Layer):
    """activation(inputs @ kernel + bias), as tf.layers.dense."""

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer=None,
                 bias_initializer=init_ops.Zeros(), kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, trainable=True, name=None, **kwargs):
        super().__init__(trainable=trainable, name=name,
                         activity_regularizer=activity_regularizer, **kwargs)
        self.units = int(units)
        self.activation = activation
        self.use_bias = use_bias
        self.kernel_initializer, self.bias_initializer = kernel_initializer, bias_initializer
        self.kernel_regularizer, self.bias_regularizer = kernel_regularizer, bias_regularizer
        self.kernel_constraint, self.bias_constraint = kernel_constraint, bias_constraint
        self.kernel = self.bias = None

    def call(self, inputs):
        outputs, self.kernel, self.bias = _layers.build_dense(
            inputs, self.units, self.activation, self.use_bias, self.kernel_initializer,
            self.bias_initializer, self.kernel_regularizer, self.bias_regularizer,
            self.activity_regularizer, self.kernel_constraint, self.bias_constraint,
            self.trainable)
        self._track(self.kernel, True)
        self._track(self.bias, True)
        return outputs

    def compute_output_shape(self, input_shape):
        """The input's shape with its last dimension made `units`."""
        input_shape = TensorShape(input_shape)
        if input_shape.rank is not None and input_shape[-1] is None:
            raise ValueError(f"The innermost dimension of input_shape must be defined, but saw: "
                             f"{input_shape}")
        return input_shape[:-1].concatenate([self.units])


class _Conv(Layer):
    """What the 2-D convolution layers share: their arguments and variables."""

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid",
                 data_format="channels_last", dilation_rate=(1, 1), activation=None,
                 use_bias=True, kernel_initializer=None, bias_initializer=init_ops.Zeros(),
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, trainable=True, name=None,
                 **kwargs):
        super().__init__(trainable=trainable, name=name,
                         activity_regularizer=activity_regularizer, **kwargs)
        self.filters = int(filters)
        self.kernel_size, self.strides, self.padding = kernel_size, strides, padding
        self.data_format, self.dilation_rate = data_format, dilation_rate
        self.activation, self.use_bias = activation, use_bias
        self.kernel_initializer, self.bias_initializer = kernel_initializer, bias_initializer
        self.kernel_regularizer, self.bias_regularizer = kernel_regularizer, bias_regularizer
        self.kernel_constraint, self.bias_constraint = kernel_constraint, bias_constraint
        self.kernel = self.bias = None

    def _built(self, result):
        outputs, self.kernel, self.bias = result
        self._track(self.kernel, True)
        self._track(self.bias, True)
        return outputs


@tf_export("layers.Conv2D")
class Conv2D(_Conv):
    """A 2-D convolution layer, as tf.layers.conv2d."""

    def call(self, inputs):
        return self._built(_layers.build_conv2d(
            inputs, self.filters, self.kernel_size, self.strides, self.padding,
            self.data_format, self.dilation_rate, self.activation, self.use_bias,
            self.kernel_initializer, self.bias_initializer, self.kernel_regularizer,
            self.bias_regularizer, self.activity_regularizer, self.kernel_constraint,
            self.bias_constraint, self.trainable))


@tf_export("layers.Conv2DTranspose")
class Conv2DTranspose(_Conv):
    """A transposed 2-D convolution layer, as tf.layers.conv2d_transpose."""

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid",
                 data_format="channels_last", activation=None, use_bias=True,
                 kernel_initializer=None, bias_initializer=init_ops.Zeros(), **kwargs):
        super().__init__(filters, kernel_size, strides, padding, data_format, (1, 1),
                         activation, use_bias, kernel_initializer, bias_initializer, **kwargs)

    def call(self, inputs):
        return self._built(conv_layers.build_conv2d_transpose(
            inputs, self.filters, self.kernel_size, self.strides, self.padding,
            self.data_format, self.activation, self.use_bias, self.kernel_initializer,
            self.bias_initializer, self.kernel_regularizer, self.bias_regularizer,
            self.activity_regularizer, self.kernel_constraint, self.bias_constraint,
            self.trainable))


@tf_export("layers.SeparableConv2D")
class SeparableConv2D(_Conv):
    """A depthwise then pointwise 2-D convolution layer, as tf.layers.separable_conv2d."""

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid",
                 data_format="channels_last", dilation_rate=(1, 1), depth_multiplier=1,
                 activation=None, use_bias=True, depthwise_initializer=None,
                 pointwise_initializer=None, bias_initializer=init_ops.Zeros(),
                 depthwise_regularizer=None, pointwise_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, depthwise_constraint=None, pointwise_constraint=None,
                 bias_constraint=None, trainable=True, name=None, **kwargs):
        super().__init__(filters, kernel_size, strides, padding, data_format, dilation_rate,
                         activation, use_bias, bias_initializer=bias_initializer,
                         bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer,
                         bias_constraint=bias_constraint, trainable=trainable, name=name,
                         **kwargs)
        self.depth_multiplier = depth_multiplier
        self.depthwise_initializer = depthwise_initializer
        self.pointwise_initializer = pointwise_initializer
        self.depthwise_regularizer = depthwise_regularizer
        self.pointwise_regularizer = pointwise_regularizer
        self.depthwise_constraint = depthwise_constraint
        self.pointwise_constraint = pointwise_constraint
        self.depthwise_kernel = self.pointwise_kernel = None

    def call(self, inputs):
        (outputs, self.depthwise_kernel, self.pointwise_kernel,
         self.bias) = conv_layers.build_separable_conv2d(
            inputs, self.filters, self.kernel_size, self.strides, self.padding,
            self.data_format, self.dilation_rate, self.depth_multiplier, self.activation,
            self.use_bias, self.depthwise_initializer, self.pointwise_initializer,
            self.bias_initializer, self.depthwise_regularizer, self.pointwise_regularizer,
            self.bias_regularizer, self.activity_regularizer, self.depthwise_constraint,
            self.pointwise_constraint, self.bias_constraint, self.trainable)
        for variable in (self.depthwise_kernel, self.pointwise_kernel, self.bias):
            self._track(variable, True)
        return outputs


class _Pooling2D(Layer):
    _function = None

    def __init__(self, pool_size, strides, padding="valid", data_format="channels_last",
                 name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.pool_size, self.strides = pool_size, strides
        self.padding, self.data_format = padding, data_format

    def call(self, inputs):
        return type(self)._function(inputs, self.pool_size, self.strides, self.padding,
                                    self.data_format)


@tf_export("layers.MaxPooling2D")
class MaxPooling2D(_Pooling2D):
    """Max pooling over the spatial axes, as tf.layers.max_pooling2d."""
    _function = staticmethod(_layers.max_pooling2d)


@tf_export("layers.AveragePooling2D")
class AveragePooling2D(_Pooling2D):
    """Average pooling over the spatial axes, as tf.layers.average_pooling2d."""
    _function = staticmethod(_layers.average_pooling2d)


@tf_export("layers.Flatten")
class Flatten(Layer):
    """Reshapes [batch, ...] to [batch, prod(...)], as tf.layers.flatten."""

    def __init__(self, data_format="channels_last", **kwargs):
        super().__init__(**kwargs)
        self.data_format = data_format

    def call(self, inputs):
        return _layers.flatten(inputs, data_format=self.data_format)


@tf_export("layers.Dropout")
class Dropout(Layer):
    """Dropout when called with training=True, identity otherwise, as tf.layers.dropout."""

    def __init__(self, rate=0.5, noise_shape=None, seed=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.rate, self.noise_shape, self.seed = rate, noise_shape, seed

    def call(self, inputs, training=False):
        return _layers.dropout(inputs, self.rate, self.noise_shape, self.seed, training)


@tf_export("layers.BatchNormalization")
class BatchNormalization(Layer):
    """Batch normalization, as tf.layers.batch_normalization: the moving-average updates go to
    tf.GraphKeys.UPDATE_OPS (and `layer.updates`)."""

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                 beta_initializer=init_ops.Zeros(), gamma_initializer=init_ops.Ones(),
                 moving_mean_initializer=init_ops.Zeros(),
                 moving_variance_initializer=init_ops.Ones(), beta_regularizer=None,
                 gamma_regularizer=None, beta_constraint=None, gamma_constraint=None,
                 renorm=False, renorm_clipping=None, renorm_momentum=0.99, fused=None,
                 trainable=True, virtual_batch_size=None, adjustment=None, name=None, **kwargs):
        super().__init__(trainable=trainable, name=name, **kwargs)
        if renorm or virtual_batch_size is not None or adjustment is not None:
            raise NotImplementedError("BatchNormalization supports neither renorm, "
                                      "virtual_batch_size nor adjustment")
        self.axis, self.momentum, self.epsilon = axis, momentum, epsilon
        self.center, self.scale, self.fused = center, scale, fused
        self._initializers = (beta_initializer, gamma_initializer, moving_mean_initializer,
                              moving_variance_initializer)
        self._regularizers = (beta_regularizer, gamma_regularizer)
        self._constraints = (beta_constraint, gamma_constraint)
        self.gamma = self.beta = self.moving_mean = self.moving_variance = None

    def call(self, inputs, training=False):
        before = len(_ops.get_collection(_ops.GraphKeys.UPDATE_OPS))
        outputs, made = _layers.build_batch_normalization(
            inputs, self.axis, self.momentum, self.epsilon, self.center, self.scale,
            *self._initializers, *self._regularizers, *self._constraints, training,
            self.trainable, self.fused)
        self._updates += _ops.get_collection(_ops.GraphKeys.UPDATE_OPS)[before:]
        for name in ("gamma", "beta", "moving_mean", "moving_variance"):
            setattr(self, name, made[name])
            self._track(made[name], name in ("gamma", "beta"))
        return outputs
