"""Convolution layers (Conv1D, Conv2D, Conv2DTranspose, SeparableConv2D, DepthwiseConv2D) and
the 2-D reshaping layers (ZeroPadding2D, UpSampling2D, Cropping2D).

Kernels run channels-last; a channels_first layer transposes its input and output around them.
"""

import flowstone as tf
from flowstone.keras import activations
from flowstone.keras import backend as K
from flowstone.keras import constraints, initializers, regularizers
from flowstone.keras.engine.base_layer import Layer
from flowstone.keras.engine.input_spec import InputSpec
from flowstone.util.tf_export import tf_export


def normalize_tuple(value, n, name):
    if isinstance(value, int):
        return (value,) * n
    value = tuple(value)
    if len(value) != n or not all(isinstance(v, int) for v in value):
        raise ValueError(f"The `{name}` argument must be a tuple of {n} integers. Received: "
                         f"{value}")
    return value


def normalize_padding(padding):
    padding = padding.lower()
    if padding not in ("valid", "same", "causal"):
        raise ValueError("The `padding` argument must be a list/tuple or one of \"valid\", "
                         f"\"same\" (or \"causal\", only for `Conv1D). Received: {padding}")
    return padding


def to_channels_last(x, data_format):
    if data_format != "channels_first":
        return x
    rank = x.shape.ndims
    return tf.transpose(x, [0] + list(range(2, rank)) + [1])


def to_channels_first(x, data_format):
    if data_format != "channels_first":
        return x
    rank = x.shape.ndims
    return tf.transpose(x, [0, rank - 1] + list(range(1, rank - 1)))


def _serialize(obj, module):
    return None if obj is None else module.serialize(obj)


class Conv(Layer):
    """N-D convolution over channels-last inputs, `rank` spatial dimensions."""

    rank = 2

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None,
                 dilation_rate=1, groups=1, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        self.filters = filters
        self.kernel_size = normalize_tuple(kernel_size, self.rank, "kernel_size")
        self.strides = normalize_tuple(strides, self.rank, "strides")
        self.padding = normalize_padding(padding)
        self.data_format = data_format or K.image_data_format()
        self.dilation_rate = normalize_tuple(dilation_rate, self.rank, "dilation_rate")
        if groups != 1:
            raise NotImplementedError("Grouped convolutions (groups > 1) are not supported.")
        self.groups = groups
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self.input_spec = InputSpec(min_ndim=self.rank + 2)

    def _channels(self, input_shape):
        dims = tf.TensorShape(input_shape).as_list()
        channels = dims[1] if self.data_format == "channels_first" else dims[-1]
        if channels is None:
            raise ValueError("The channel dimension of the inputs should be defined. The input "
                             f"shape received is: {tuple(dims)}, where axis "
                             f"{1 if self.data_format == 'channels_first' else -1} (0-based) is "
                             "the channel dimension, which found to be `None`.")
        return channels

    def build(self, input_shape):
        channels = self._channels(input_shape)
        axis = 1 if self.data_format == "channels_first" else -1
        self.input_spec = InputSpec(min_ndim=self.rank + 2, axes={axis: channels})
        self.kernel = self.add_weight("kernel", self.kernel_size + (channels, self.filters),
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self._build_bias(self.filters)

    def _build_bias(self, size):
        self.bias = self.add_weight("bias", (size,), initializer=self.bias_initializer,
                                    regularizer=self.bias_regularizer,
                                    constraint=self.bias_constraint) if self.use_bias else None

    def _convolve(self, x):
        padding = self.padding.upper()
        if self.rank == 1:
            if self.padding == "causal":
                left = self.dilation_rate[0] * (self.kernel_size[0] - 1)
                x = tf.pad(x, [[0, 0], [left, 0], [0, 0]])
                padding = "VALID"
            return tf.nn.conv1d(x, self.kernel.value(), stride=self.strides[0],
                                padding=padding, dilations=self.dilation_rate)
        return tf.nn.conv2d(x, self.kernel.value(), strides=(1,) + self.strides + (1,),
                            padding=padding, dilations=(1,) + self.dilation_rate + (1,))

    def call(self, inputs):
        x = to_channels_last(inputs, self.data_format)
        outputs = self._convolve(x)
        if self.use_bias:
            outputs = tf.nn.bias_add(outputs, self.bias.value())
        return to_channels_first(self.activation(outputs), self.data_format)

    def get_config(self):
        return {**super().get_config(), "filters": self.filters,
                "kernel_size": self.kernel_size, "strides": self.strides,
                "padding": self.padding, "data_format": self.data_format,
                "dilation_rate": self.dilation_rate, "groups": self.groups,
                "activation": activations.serialize(self.activation), "use_bias": self.use_bias,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer),
                "kernel_regularizer": _serialize(self.kernel_regularizer, regularizers),
                "bias_regularizer": _serialize(self.bias_regularizer, regularizers),
                "activity_regularizer": _serialize(self.activity_regularizer, regularizers),
                "kernel_constraint": _serialize(self.kernel_constraint, constraints),
                "bias_constraint": _serialize(self.bias_constraint, constraints)}


@tf_export("keras.layers.Conv1D", "keras.layers.Convolution1D")
class Conv1D(Conv):
    rank = 1


@tf_export("keras.layers.Conv2D", "keras.layers.Convolution2D")
class Conv2D(Conv):
    rank = 2


@tf_export("keras.layers.Conv2DTranspose", "keras.layers.Convolution2DTranspose")
class Conv2DTranspose(Conv2D):
    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid",
                 output_padding=None, data_format=None, dilation_rate=(1, 1), **kwargs):
        super().__init__(filters, kernel_size, strides=strides, padding=padding,
                         data_format=data_format, dilation_rate=dilation_rate, **kwargs)
        if output_padding is not None:
            raise NotImplementedError("Conv2DTranspose(output_padding=...) is not supported.")
        self.output_padding = None

    def build(self, input_shape):
        channels = self._channels(input_shape)
        axis = 1 if self.data_format == "channels_first" else -1
        self.input_spec = InputSpec(ndim=4, axes={axis: channels})
        self.kernel = self.add_weight("kernel", self.kernel_size + (self.filters, channels),
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self._build_bias(self.filters)

    def _convolve(self, x):
        dynamic = tf.shape(x)
        sizes = []
        for i in range(2):
            size = x.shape.as_list()[1 + i]
            size = dynamic[1 + i] if size is None else size
            k, s = self.kernel_size[i], self.strides[i]
            sizes.append(size * s + max(k - s, 0) if self.padding == "valid" else size * s)
        output_shape = tf.stack([dynamic[0], sizes[0], sizes[1], self.filters])
        out = tf.nn.conv2d_transpose(x, self.kernel.value(), output_shape,
                                     strides=(1,) + self.strides + (1,),
                                     padding=self.padding.upper())
        static = [None] + [s if isinstance(s, int) else None for s in sizes] + [self.filters]
        out.set_shape(static)
        return out

    def get_config(self):
        return {**super().get_config(), "output_padding": self.output_padding}


@tf_export("keras.layers.DepthwiseConv2D")
class DepthwiseConv2D(Conv2D):
    def __init__(self, kernel_size, strides=(1, 1), padding="valid", depth_multiplier=1,
                 data_format=None, dilation_rate=(1, 1), activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", bias_initializer="zeros",
                 depthwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(None, kernel_size, strides=strides, padding=padding,
                         data_format=data_format, dilation_rate=dilation_rate,
                         activation=activation, use_bias=use_bias,
                         bias_initializer=bias_initializer, bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer,
                         bias_constraint=bias_constraint, **kwargs)
        self.depth_multiplier = depth_multiplier
        self.depthwise_initializer = initializers.get(depthwise_initializer)
        self.depthwise_regularizer = regularizers.get(depthwise_regularizer)
        self.depthwise_constraint = constraints.get(depthwise_constraint)

    def build(self, input_shape):
        channels = self._channels(input_shape)
        axis = 1 if self.data_format == "channels_first" else -1
        self.input_spec = InputSpec(ndim=4, axes={axis: channels})
        self.depthwise_kernel = self.add_weight(
            "depthwise_kernel", self.kernel_size + (channels, self.depth_multiplier),
            initializer=self.depthwise_initializer, regularizer=self.depthwise_regularizer,
            constraint=self.depthwise_constraint)
        self._build_bias(channels * self.depth_multiplier)

    def _convolve(self, x):
        return tf.nn.depthwise_conv2d(x, self.depthwise_kernel.value(),
                                      strides=(1,) + self.strides + (1,),
                                      padding=self.padding.upper(),
                                      dilations=self.dilation_rate)

    def get_config(self):
        config = super().get_config()
        for key in ("filters", "kernel_initializer", "kernel_regularizer", "kernel_constraint",
                    "groups"):
            config.pop(key)
        return {**config, "depth_multiplier": self.depth_multiplier,
                "depthwise_initializer": initializers.serialize(self.depthwise_initializer),
                "depthwise_regularizer": _serialize(self.depthwise_regularizer, regularizers),
                "depthwise_constraint": _serialize(self.depthwise_constraint, constraints)}


@tf_export("keras.layers.SeparableConv2D", "keras.layers.SeparableConvolution2D")
class SeparableConv2D(Conv2D):
    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1), depth_multiplier=1, activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", pointwise_initializer="glorot_uniform",
                 bias_initializer="zeros", depthwise_regularizer=None,
                 pointwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, pointwise_constraint=None, bias_constraint=None,
                 **kwargs):
        super().__init__(filters, kernel_size, strides=strides, padding=padding,
                         data_format=data_format, dilation_rate=dilation_rate,
                         activation=activation, use_bias=use_bias,
                         bias_initializer=bias_initializer, bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer,
                         bias_constraint=bias_constraint, **kwargs)
        self.depth_multiplier = depth_multiplier
        self.depthwise_initializer = initializers.get(depthwise_initializer)
        self.pointwise_initializer = initializers.get(pointwise_initializer)
        self.depthwise_regularizer = regularizers.get(depthwise_regularizer)
        self.pointwise_regularizer = regularizers.get(pointwise_regularizer)
        self.depthwise_constraint = constraints.get(depthwise_constraint)
        self.pointwise_constraint = constraints.get(pointwise_constraint)

    def build(self, input_shape):
        channels = self._channels(input_shape)
        axis = 1 if self.data_format == "channels_first" else -1
        self.input_spec = InputSpec(ndim=4, axes={axis: channels})
        self.depthwise_kernel = self.add_weight(
            "depthwise_kernel", self.kernel_size + (channels, self.depth_multiplier),
            initializer=self.depthwise_initializer, regularizer=self.depthwise_regularizer,
            constraint=self.depthwise_constraint)
        self.pointwise_kernel = self.add_weight(
            "pointwise_kernel", (1, 1, channels * self.depth_multiplier, self.filters),
            initializer=self.pointwise_initializer, regularizer=self.pointwise_regularizer,
            constraint=self.pointwise_constraint)
        self._build_bias(self.filters)

    def _convolve(self, x):
        return tf.nn.separable_conv2d(x, self.depthwise_kernel.value(),
                                      self.pointwise_kernel.value(),
                                      strides=(1,) + self.strides + (1,),
                                      padding=self.padding.upper(),
                                      dilations=self.dilation_rate)

    def get_config(self):
        config = super().get_config()
        for key in ("kernel_initializer", "kernel_regularizer", "kernel_constraint", "groups"):
            config.pop(key)
        return {**config, "depth_multiplier": self.depth_multiplier,
                "depthwise_initializer": initializers.serialize(self.depthwise_initializer),
                "pointwise_initializer": initializers.serialize(self.pointwise_initializer),
                "depthwise_regularizer": _serialize(self.depthwise_regularizer, regularizers),
                "pointwise_regularizer": _serialize(self.pointwise_regularizer, regularizers),
                "depthwise_constraint": _serialize(self.depthwise_constraint, constraints),
                "pointwise_constraint": _serialize(self.pointwise_constraint, constraints)}


def _pairs(value, name):
    """((top, bottom), (left, right)) from an int, a pair of ints, or a pair of pairs."""
    if isinstance(value, int):
        return ((value, value), (value, value))
    value = tuple(value)
    if len(value) != 2:
        raise ValueError(f"`{name}` should have two elements. Received: {value}.")
    return tuple(normalize_tuple(v, 2, f"1st entry of {name}") if not isinstance(v, int)
                 else (v, v) for v in value)


@tf_export("keras.layers.ZeroPadding2D")
class ZeroPadding2D(Layer):
    def __init__(self, padding=(1, 1), data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.padding = _pairs(padding, "padding")
        self.data_format = data_format or K.image_data_format()
        self.input_spec = InputSpec(ndim=4)

    def call(self, inputs):
        x = to_channels_last(inputs, self.data_format)
        x = tf.pad(x, [[0, 0], list(self.padding[0]), list(self.padding[1]), [0, 0]])
        return to_channels_first(x, self.data_format)

    def get_config(self):
        return {**super().get_config(), "padding": self.padding, "data_format": self.data_format}


@tf_export("keras.layers.Cropping2D")
class Cropping2D(Layer):
    def __init__(self, cropping=((0, 0), (0, 0)), data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.cropping = _pairs(cropping, "cropping")
        self.data_format = data_format or K.image_data_format()
        self.input_spec = InputSpec(ndim=4)

    def call(self, inputs):
        x = to_channels_last(inputs, self.data_format)
        (top, bottom), (left, right) = self.cropping
        x = x[:, top:(None if bottom == 0 else -bottom), left:(None if right == 0 else -right), :]
        return to_channels_first(x, self.data_format)

    def get_config(self):
        return {**super().get_config(), "cropping": self.cropping,
                "data_format": self.data_format}


@tf_export("keras.layers.UpSampling2D")
class UpSampling2D(Layer):
    """Repeats rows and columns (nearest-neighbour upsampling)."""

    def __init__(self, size=(2, 2), data_format=None, interpolation="nearest", **kwargs):
        super().__init__(**kwargs)
        self.size = normalize_tuple(size, 2, "size")
        self.data_format = data_format or K.image_data_format()
        if interpolation != "nearest":
            raise NotImplementedError(f"UpSampling2D(interpolation={interpolation!r}): only "
                                      "'nearest' is supported.")
        self.interpolation = interpolation
        self.input_spec = InputSpec(ndim=4)

    def call(self, inputs):
        x = to_channels_last(inputs, self.data_format)
        _, height, width, channels = x.shape.as_list()
        dynamic = tf.shape(x)
        batch = dynamic[0]
        h = height if height is not None else dynamic[1]
        w = width if width is not None else dynamic[2]
        rows, cols = self.size
        x = tf.reshape(x, tf.stack([batch, h, 1, w, 1, channels]))
        x = tf.tile(x, [1, 1, rows, 1, cols, 1])
        x = tf.reshape(x, tf.stack([batch, h * rows, w * cols, channels]))
        x.set_shape([None, None if height is None else height * rows,
                     None if width is None else width * cols, channels])
        return to_channels_first(x, self.data_format)

    def get_config(self):
        return {**super().get_config(), "size": self.size, "data_format": self.data_format,
                "interpolation": self.interpolation}
