"""TF1's tf.layers classes for 1-D and 3-D data: Conv1D, Conv3D, Conv3DTranspose, SeparableConv1D
and the 1-D and 3-D pooling layers, built through the same `build_*` functions as their
functional forms (ops/conv_layers.py)."""

from flowstone.framework import input_spec as _input_spec  # noqa: F401 - tf.layers.InputSpec
from flowstone.ops import conv_layers, init_ops
from flowstone.ops.layer_classes import Layer, _Conv
from flowstone.util.tf_export import tf_export


class _ConvND(_Conv):
    _build = None

    def call(self, inputs):
        return self._built(type(self)._build(
            inputs, self.filters, self.kernel_size, self.strides, self.padding,
            self.data_format, self.dilation_rate, self.activation, self.use_bias,
            self.kernel_initializer, self.bias_initializer, self.kernel_regularizer,
            self.bias_regularizer, self.activity_regularizer, self.kernel_constraint,
            self.bias_constraint, self.trainable))


@tf_export("layers.Conv1D")
class Conv1D(_ConvND):
    """A 1-D convolution layer, as tf.layers.conv1d."""
    _build = staticmethod(conv_layers.build_conv1d)

    def __init__(self, filters, kernel_size, strides=1, padding="valid",
                 data_format="channels_last", dilation_rate=1, **kwargs):
        super().__init__(filters, kernel_size, strides, padding, data_format, dilation_rate,
                         **kwargs)


@tf_export("layers.Conv3D")
class Conv3D(_ConvND):
    """A 3-D convolution layer, as tf.layers.conv3d."""
    _build = staticmethod(conv_layers.build_conv3d)

    def __init__(self, filters, kernel_size, strides=(1, 1, 1), padding="valid",
                 data_format="channels_last", dilation_rate=(1, 1, 1), **kwargs):
        super().__init__(filters, kernel_size, strides, padding, data_format, dilation_rate,
                         **kwargs)


@tf_export("layers.Conv3DTranspose")
class Conv3DTranspose(_Conv):
    """A transposed 3-D convolution layer, as tf.layers.conv3d_transpose."""

    def __init__(self, filters, kernel_size, strides=(1, 1, 1), padding="valid",
                 data_format="channels_last", activation=None, use_bias=True,
                 kernel_initializer=None, bias_initializer=init_ops.Zeros(), **kwargs):
        super().__init__(filters, kernel_size, strides, padding, data_format, (1, 1, 1),
                         activation, use_bias, kernel_initializer, bias_initializer, **kwargs)

    def call(self, inputs):
        return self._built(conv_layers.build_conv3d_transpose(
            inputs, self.filters, self.kernel_size, self.strides, self.padding,
            self.data_format, self.activation, self.use_bias, self.kernel_initializer,
            self.bias_initializer, self.kernel_regularizer, self.bias_regularizer,
            self.activity_regularizer, self.kernel_constraint, self.bias_constraint,
            self.trainable))


@tf_export("layers.SeparableConv1D")
class SeparableConv1D(_Conv):
    """A depthwise then pointwise 1-D convolution layer, as tf.layers.separable_conv1d."""

    def __init__(self, filters, kernel_size, strides=1, padding="valid",
                 data_format="channels_last", dilation_rate=1, depth_multiplier=1,
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
         self.bias) = conv_layers.build_separable_conv1d(
            inputs, self.filters, self.kernel_size, self.strides, self.padding,
            self.data_format, self.dilation_rate, self.depth_multiplier, self.activation,
            self.use_bias, self.depthwise_initializer, self.pointwise_initializer,
            self.bias_initializer, self.depthwise_regularizer, self.pointwise_regularizer,
            self.bias_regularizer, self.activity_regularizer, self.depthwise_constraint,
            self.pointwise_constraint, self.bias_constraint, self.trainable)
        for variable in (self.depthwise_kernel, self.pointwise_kernel, self.bias):
            self._track(variable, True)
        return outputs


class _Pooling(Layer):
    _function = None

    def __init__(self, pool_size, strides, padding="valid", data_format="channels_last",
                 name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.pool_size, self.strides = pool_size, strides
        self.padding, self.data_format = padding, data_format

    def call(self, inputs):
        return type(self)._function(inputs, self.pool_size, self.strides, self.padding,
                                    self.data_format)


@tf_export("layers.MaxPooling1D")
class MaxPooling1D(_Pooling):
    """Max pooling over the one spatial axis, as tf.layers.max_pooling1d."""
    _function = staticmethod(conv_layers.max_pooling1d)


@tf_export("layers.AveragePooling1D")
class AveragePooling1D(_Pooling):
    """Average pooling over the one spatial axis, as tf.layers.average_pooling1d."""
    _function = staticmethod(conv_layers.average_pooling1d)


@tf_export("layers.MaxPooling3D")
class MaxPooling3D(_Pooling):
    """Max pooling over the three spatial axes, as tf.layers.max_pooling3d."""
    _function = staticmethod(conv_layers.max_pooling3d)


@tf_export("layers.AveragePooling3D")
class AveragePooling3D(_Pooling):
    """Average pooling over the three spatial axes, as tf.layers.average_pooling3d."""
    _function = staticmethod(conv_layers.average_pooling3d)
