"""tf.layers for the convolutions beyond conv2d: conv1d, conv3d, separable_conv2d,
conv2d_transpose, and 1-D and 3-D pooling. Like tf.layers.conv2d (flowstone/layers.py), each
creates its variables with tf.get_variable under a variable scope named after the layer."""

from flowstone import layers as _layers
from flowstone.framework import ops as _ops
from flowstone.ops import array_ops, conv3d_ops, conv_ops, conv_variants, init_ops, variable_scope
from flowstone.util.tf_export import tf_export


def _tuple(value, n, name):
    """An int or an n-tuple of ints as a list of n ints."""
    if isinstance(value, int):
        return [value] * n
    value = [int(v) for v in value]
    if len(value) != n:
        raise ValueError(f"The `{name}` argument must be a tuple of {n} integers. Received: "
                         f"{value}")
    return value


def _channels_first(data_format):
    if data_format in ("channels_last", None):
        return False
    if data_format == "channels_first":
        return True
    raise ValueError(f"The `data_format` argument must be one of \"channels_first\", "
                     f"\"channels_last\". Received: {data_format}")


def _input_channels(inputs, rank, channels_first, layer):
    inputs = _ops.convert_to_tensor(inputs)
    if inputs.shape.rank != rank:
        raise ValueError(f"Input 0 of layer {layer} is incompatible with the layer: expected "
                         f"ndim={rank}, found ndim={inputs.shape.rank}. Full shape received: "
                         f"{inputs.shape}")
    channels = inputs.shape[1 if channels_first else rank - 1]
    if channels is None:
        raise ValueError("The channel dimension of the inputs should be defined. Found `None`.")
    return inputs, channels


@tf_export("layers.conv1d")
def conv1d(inputs, filters, kernel_size, strides=1, padding="valid", data_format="channels_last",
           dilation_rate=1, activation=None, use_bias=True, kernel_initializer=None,
           bias_initializer=init_ops.Zeros(), kernel_regularizer=None, bias_regularizer=None,
           activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
           trainable=True, name=None, reuse=None):
    """A 1-D convolution layer with a [width, in, filters] kernel and a bias."""
    with _layers._layer_scope(name, "conv1d", reuse):
        return build_conv1d(inputs, filters, kernel_size, strides, padding, data_format,
                            dilation_rate, activation, use_bias, kernel_initializer,
                            bias_initializer, kernel_regularizer, bias_regularizer,
                            activity_regularizer, kernel_constraint, bias_constraint,
                            trainable)[0]


def build_conv1d(inputs, filters, kernel_size, strides=1, padding="valid",
                 data_format="channels_last", dilation_rate=1, activation=None, use_bias=True,
                 kernel_initializer=None, bias_initializer=init_ops.Zeros(),
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, trainable=True):
    """The conv1d layer in the current variable scope: (outputs, kernel, bias);
    tf.layers.Conv1D builds through here too."""
    cf = _channels_first(data_format)
    inputs, channels = _input_channels(inputs, 3, cf, "conv1d")
    (k,) = _tuple(kernel_size, 1, "kernel_size")
    kernel, bias = _layers._kernel_and_bias(
        [k, channels, filters], filters, inputs.dtype, use_bias, trainable,
        kernel_initializer, kernel_regularizer, kernel_constraint, bias_initializer,
        bias_regularizer, bias_constraint)
    out = conv_variants.conv1d(inputs, kernel, _tuple(strides, 1, "strides"),
                               _layers._padding(padding), data_format="NCW" if cf else "NWC",
                               dilations=_tuple(dilation_rate, 1, "dilation_rate"))
    return (_layers._add_bias_and_activate(out, bias, activation, activity_regularizer,
                                           "NCHW" if cf else "NHWC"), kernel, bias)


@tf_export("layers.conv3d")
def conv3d(inputs, filters, kernel_size, strides=(1, 1, 1), padding="valid",
           data_format="channels_last", dilation_rate=(1, 1, 1), activation=None, use_bias=True,
           kernel_initializer=None, bias_initializer=init_ops.Zeros(), kernel_regularizer=None,
           bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
           bias_constraint=None, trainable=True, name=None, reuse=None):
    """A 3-D convolution layer with a [planes, rows, cols, in, filters] kernel and a bias."""
    with _layers._layer_scope(name, "conv3d", reuse):
        return build_conv3d(inputs, filters, kernel_size, strides, padding, data_format,
                            dilation_rate, activation, use_bias, kernel_initializer,
                            bias_initializer, kernel_regularizer, bias_regularizer,
                            activity_regularizer, kernel_constraint, bias_constraint,
                            trainable)[0]


def _five(values, channels_first):
    """A 3-D window's strides or dilations as the 5 of an NDHWC or NCDHW op."""
    return [1, 1] + values if channels_first else [1] + values + [1]


def build_conv3d(inputs, filters, kernel_size, strides=(1, 1, 1), padding="valid",
                 data_format="channels_last", dilation_rate=(1, 1, 1), activation=None,
                 use_bias=True, kernel_initializer=None, bias_initializer=init_ops.Zeros(),
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, trainable=True):
    """The conv3d layer in the current variable scope: (outputs, kernel, bias);
    tf.layers.Conv3D builds through here too."""
    cf = _channels_first(data_format)
    inputs, channels = _input_channels(inputs, 5, cf, "conv3d")
    kernel_dims = _tuple(kernel_size, 3, "kernel_size")
    kernel, bias = _layers._kernel_and_bias(
        kernel_dims + [channels, filters], filters, inputs.dtype, use_bias, trainable,
        kernel_initializer, kernel_regularizer, kernel_constraint, bias_initializer,
        bias_regularizer, bias_constraint)
    out = conv3d_ops.conv3d(inputs, kernel, _five(_tuple(strides, 3, "strides"), cf),
                            _layers._padding(padding), data_format="NCDHW" if cf else "NDHWC",
                            dilations=_five(_tuple(dilation_rate, 3, "dilation_rate"), cf))
    return (_layers._add_bias_and_activate(out, bias, activation, activity_regularizer,
                                           "NCHW" if cf else "NHWC"), kernel, bias)


@tf_export("layers.conv3d_transpose")
def conv3d_transpose(inputs, filters, kernel_size, strides=(1, 1, 1), padding="valid",
                     data_format="channels_last", activation=None, use_bias=True,
                     kernel_initializer=None, bias_initializer=init_ops.Zeros(),
                     kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                     kernel_constraint=None, bias_constraint=None, trainable=True, name=None,
                     reuse=None):
    """A transposed 3-D convolution layer with a [kd, kh, kw, filters, in] kernel and a bias."""
    with _layers._layer_scope(name, "conv3d_transpose", reuse):
        return build_conv3d_transpose(inputs, filters, kernel_size, strides, padding,
                                      data_format, activation, use_bias, kernel_initializer,
                                      bias_initializer, kernel_regularizer, bias_regularizer,
                                      activity_regularizer, kernel_constraint, bias_constraint,
                                      trainable)[0]


def build_conv3d_transpose(inputs, filters, kernel_size, strides=(1, 1, 1), padding="valid",
                           data_format="channels_last", activation=None, use_bias=True,
                           kernel_initializer=None, bias_initializer=init_ops.Zeros(),
                           kernel_regularizer=None, bias_regularizer=None,
                           activity_regularizer=None, kernel_constraint=None,
                           bias_constraint=None, trainable=True):
    """The conv3d_transpose layer in the current variable scope: (outputs, kernel, bias);
    tf.layers.Conv3DTranspose builds through here too."""
    from flowstone.ops import math_ops
    cf = _channels_first(data_format)
    inputs, channels = _input_channels(inputs, 5, cf, "conv3d_transpose")
    kernel_dims = _tuple(kernel_size, 3, "kernel_size")
    stride_dims = _tuple(strides, 3, "strides")
    pad = _layers._padding(padding)
    kernel, bias = _layers._kernel_and_bias(
        kernel_dims + [filters, channels], filters, inputs.dtype, use_bias, trainable,
        kernel_initializer, kernel_regularizer, kernel_constraint, bias_initializer,
        bias_regularizer, bias_constraint)
    shape = array_ops.shape(inputs)
    first = 2 if cf else 1
    sizes = []
    for axis, k, s in zip(range(first, first + 3), kernel_dims, stride_dims):
        static = inputs.shape[axis]
        if static is not None:
            sizes.append(_transposed_length(static, k, pad, s))
        else:
            length = math_ops.multiply(shape[axis], s)
            sizes.append(length + max(k - s, 0) if pad == "VALID" else length)
    out_shape = ([shape[0], filters] + sizes) if cf else ([shape[0]] + sizes + [filters])
    out = conv3d_ops.conv3d_transpose(inputs, kernel, array_ops.stack(out_shape),
                                      _five(stride_dims, cf), padding=pad,
                                      data_format="NCDHW" if cf else "NDHWC")
    return (_layers._add_bias_and_activate(out, bias, activation, activity_regularizer,
                                           "NCHW" if cf else "NHWC"), kernel, bias)


@tf_export("layers.separable_conv1d")
def separable_conv1d(inputs, filters, kernel_size, strides=1, padding="valid",
                     data_format="channels_last", dilation_rate=1, depth_multiplier=1,
                     activation=None, use_bias=True, depthwise_initializer=None,
                     pointwise_initializer=None, bias_initializer=init_ops.Zeros(),
                     depthwise_regularizer=None, pointwise_regularizer=None,
                     bias_regularizer=None, activity_regularizer=None, depthwise_constraint=None,
                     pointwise_constraint=None, bias_constraint=None, trainable=True, name=None,
                     reuse=None):
    """A depthwise 1-D convolution ([k, in, depth_multiplier] "depthwise_kernel") followed by
    a pointwise one ([1, in * depth_multiplier, filters] "pointwise_kernel") and a bias."""
    with _layers._layer_scope(name, "separable_conv1d", reuse):
        return build_separable_conv1d(
            inputs, filters, kernel_size, strides, padding, data_format, dilation_rate,
            depth_multiplier, activation, use_bias, depthwise_initializer,
            pointwise_initializer, bias_initializer, depthwise_regularizer,
            pointwise_regularizer, bias_regularizer, activity_regularizer, depthwise_constraint,
            pointwise_constraint, bias_constraint, trainable)[0]


def build_separable_conv1d(inputs, filters, kernel_size, strides=1, padding="valid",
                           data_format="channels_last", dilation_rate=1, depth_multiplier=1,
                           activation=None, use_bias=True, depthwise_initializer=None,
                           pointwise_initializer=None, bias_initializer=init_ops.Zeros(),
                           depthwise_regularizer=None, pointwise_regularizer=None,
                           bias_regularizer=None, activity_regularizer=None,
                           depthwise_constraint=None, pointwise_constraint=None,
                           bias_constraint=None, trainable=True):
    """The separable_conv1d layer in the current variable scope: (outputs, depthwise kernel,
    pointwise kernel, bias). Runs as a separable 2-D convolution over a height of 1, as
    TensorFlow does."""
    cf = _channels_first(data_format)
    inputs, channels = _input_channels(inputs, 3, cf, "separable_conv1d")
    (k,) = _tuple(kernel_size, 1, "kernel_size")
    (stride,) = _tuple(strides, 1, "strides")
    (rate,) = _tuple(dilation_rate, 1, "dilation_rate")

    def variable(name, shape, initializer, regularizer, constraint):
        return variable_scope.get_variable(name, shape, dtype=inputs.dtype,
                                           initializer=initializer, regularizer=regularizer,
                                           trainable=trainable, constraint=constraint)

    depthwise = variable("depthwise_kernel", [k, channels, depth_multiplier],
                         depthwise_initializer, depthwise_regularizer, depthwise_constraint)
    pointwise = variable("pointwise_kernel", [1, channels * depth_multiplier, filters],
                         pointwise_initializer, pointwise_regularizer, pointwise_constraint)
    bias = variable("bias", [filters], bias_initializer, bias_regularizer,
                    bias_constraint) if use_bias else None
    fmt = "NCHW" if cf else "NHWC"
    spatial = 2 if cf else 1
    out = conv_variants.separable_conv2d(
        array_ops.expand_dims(inputs, spatial), array_ops.expand_dims(depthwise, 0),
        # The stride repeats over the height of 1 (depthwise convolutions want equal strides).
        array_ops.expand_dims(pointwise, 0), [1, 1, stride, stride] if cf else [1, stride, stride, 1],
        _layers._padding(padding), rate=[1, rate], data_format=fmt)
    out = array_ops.squeeze(out, [spatial])
    return (_layers._add_bias_and_activate(out, bias, activation, activity_regularizer, fmt),
            depthwise, pointwise, bias)


@tf_export("layers.separable_conv2d")
def separable_conv2d(inputs, filters, kernel_size, strides=(1, 1), padding="valid",
                     data_format="channels_last", dilation_rate=(1, 1), depth_multiplier=1,
                     activation=None, use_bias=True, depthwise_initializer=None,
                     pointwise_initializer=None, bias_initializer=init_ops.Zeros(),
                     depthwise_regularizer=None, pointwise_regularizer=None,
                     bias_regularizer=None, activity_regularizer=None, depthwise_constraint=None,
                     pointwise_constraint=None, bias_constraint=None, trainable=True, name=None,
                     reuse=None):
    """A depthwise convolution ([kh, kw, in, depth_multiplier] "depthwise_kernel") followed by
    a 1x1 convolution ([1, 1, in * depth_multiplier, filters] "pointwise_kernel") and a bias."""
    with _layers._layer_scope(name, "separable_conv2d", reuse):
        return build_separable_conv2d(
            inputs, filters, kernel_size, strides, padding, data_format, dilation_rate,
            depth_multiplier, activation, use_bias, depthwise_initializer,
            pointwise_initializer, bias_initializer, depthwise_regularizer,
            pointwise_regularizer, bias_regularizer, activity_regularizer, depthwise_constraint,
            pointwise_constraint, bias_constraint, trainable)[0]


SEPARABLE_NAMES = ("depthwise_kernel", "pointwise_kernel", "bias")
SEPARABLE_CONTRIB_NAMES = ("depthwise_weights", "pointwise_weights", "biases")


def build_separable_conv2d(inputs, filters, kernel_size, strides=(1, 1), padding="valid",
                           data_format="channels_last", dilation_rate=(1, 1),
                           depth_multiplier=1, activation=None, use_bias=True,
                           depthwise_initializer=None, pointwise_initializer=None,
                           bias_initializer=init_ops.Zeros(), depthwise_regularizer=None,
                           pointwise_regularizer=None, bias_regularizer=None,
                           activity_regularizer=None, depthwise_constraint=None,
                           pointwise_constraint=None, bias_constraint=None, trainable=True,
                           names=SEPARABLE_NAMES, collections=None):
    """The separable_conv2d layer in the current variable scope: (outputs, depthwise kernel,
    pointwise kernel, bias); tf.layers.SeparableConv2D and tf.contrib.layers.separable_conv2d
    build through here too."""
    cf = _channels_first(data_format)
    inputs, channels = _input_channels(inputs, 4, cf, "separable_conv2d")
    kh, kw = _tuple(kernel_size, 2, "kernel_size")
    collections = collections or {}

    def variable(name, shape, initializer, regularizer, constraint):
        return variable_scope.get_variable(name, shape, dtype=inputs.dtype,
                                           initializer=initializer, regularizer=regularizer,
                                           trainable=trainable, constraint=constraint,
                                           collections=collections.get(name))

    depthwise = variable(names[0], [kh, kw, channels, depth_multiplier], depthwise_initializer,
                         depthwise_regularizer, depthwise_constraint)
    pointwise = variable(names[1], [1, 1, channels * depth_multiplier, filters],
                         pointwise_initializer, pointwise_regularizer, pointwise_constraint)
    bias = variable(names[2], [filters], bias_initializer, bias_regularizer,
                    bias_constraint) if use_bias else None
    fmt = "NCHW" if cf else "NHWC"
    out = conv_variants.separable_conv2d(inputs, depthwise, pointwise,
                                         _tuple(strides, 2, "strides"),
                                         _layers._padding(padding),
                                         rate=_tuple(dilation_rate, 2, "dilation_rate"),
                                         data_format=fmt)
    return (_layers._add_bias_and_activate(out, bias, activation, activity_regularizer, fmt),
            depthwise, pointwise, bias)


def _transposed_length(length, kernel, padding, stride):
    """Keras's deconv_output_length: the input length that convolving down gives `length`."""
    if padding == "VALID":
        return length * stride + max(kernel - stride, 0)
    return length * stride


@tf_export("layers.conv2d_transpose")
def conv2d_transpose(inputs, filters, kernel_size, strides=(1, 1), padding="valid",
                     data_format="channels_last", activation=None, use_bias=True,
                     kernel_initializer=None, bias_initializer=init_ops.Zeros(),
                     kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                     kernel_constraint=None, bias_constraint=None, trainable=True, name=None,
                     reuse=None):
    """A transposed 2-D convolution layer with a [kh, kw, filters, in] kernel and a bias."""
    with _layers._layer_scope(name, "conv2d_transpose", reuse):
        return build_conv2d_transpose(inputs, filters, kernel_size, strides, padding,
                                      data_format, activation, use_bias, kernel_initializer,
                                      bias_initializer, kernel_regularizer, bias_regularizer,
                                      activity_regularizer, kernel_constraint, bias_constraint,
                                      trainable)[0]


def build_conv2d_transpose(inputs, filters, kernel_size, strides=(1, 1), padding="valid",
                           data_format="channels_last", activation=None, use_bias=True,
                           kernel_initializer=None, bias_initializer=init_ops.Zeros(),
                           kernel_regularizer=None, bias_regularizer=None,
                           activity_regularizer=None, kernel_constraint=None,
                           bias_constraint=None, trainable=True, names=_layers.LAYERS_NAMES,
                           collections=None):
    """The conv2d_transpose layer in the current variable scope: (outputs, kernel, bias);
    tf.layers.Conv2DTranspose and tf.contrib.layers.conv2d_transpose build through here too."""
    from flowstone.ops import math_ops
    cf = _channels_first(data_format)
    inputs, channels = _input_channels(inputs, 4, cf, "conv2d_transpose")
    kh, kw = _tuple(kernel_size, 2, "kernel_size")
    sh, sw = _tuple(strides, 2, "strides")
    pad = _layers._padding(padding)
    kernel, bias = _layers._kernel_and_bias(
        [kh, kw, filters, channels], filters, inputs.dtype, use_bias, trainable,
        kernel_initializer, kernel_regularizer, kernel_constraint, bias_initializer,
        bias_regularizer, bias_constraint, names, collections)
    shape = array_ops.shape(inputs)
    h_axis, w_axis = (2, 3) if cf else (1, 2)
    sizes = []
    for axis, k, s in ((h_axis, kh, sh), (w_axis, kw, sw)):
        static = inputs.shape[axis]
        if static is not None:
            sizes.append(_transposed_length(static, k, pad, s))
        else:
            length = math_ops.multiply(shape[axis], s)
            sizes.append(length + max(k - s, 0) if pad == "VALID" else length)
    out_shape = ([shape[0], filters] + sizes) if cf else ([shape[0]] + sizes + [filters])
    fmt = "NCHW" if cf else "NHWC"
    out = conv_ops.conv2d_transpose(inputs, kernel, array_ops.stack(out_shape),
                                    [1, 1, sh, sw] if cf else [1, sh, sw, 1], padding=pad,
                                    data_format=fmt)
    return (_layers._add_bias_and_activate(out, bias, activation, activity_regularizer, fmt),
            kernel, bias)


def _pool3d(fn, inputs, pool_size, strides, padding, data_format, name, default_name):
    cf = _channels_first(data_format)
    with _ops.name_scope(name, default_name):
        return fn(inputs, _tuple(pool_size, 3, "pool_size"), _tuple(strides, 3, "strides"),
                  _layers._padding(padding), data_format="NCDHW" if cf else "NDHWC")


@tf_export("layers.max_pooling3d")
def max_pooling3d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                  name=None):
    """Max over pool_size windows of the three spatial axes."""
    return _pool3d(conv3d_ops.max_pool3d, inputs, pool_size, strides, padding, data_format, name,
                   "max_pooling3d")


@tf_export("layers.average_pooling3d")
def average_pooling3d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                      name=None):
    """Mean over pool_size windows of the three spatial axes (padding does not count)."""
    return _pool3d(conv3d_ops.avg_pool3d, inputs, pool_size, strides, padding, data_format, name,
                   "average_pooling3d")


def _pool1d(fn, inputs, pool_size, strides, padding, data_format, name, default_name):
    """1-D pooling as 2-D pooling over a height of 1."""
    cf = _channels_first(data_format)
    (k,) = _tuple(pool_size, 1, "pool_size")
    (s,) = _tuple(strides, 1, "strides")
    with _ops.name_scope(name, default_name):
        x = array_ops.expand_dims(_ops.convert_to_tensor(inputs), 2 if cf else 1)
        ksize, stride = ([1, 1, 1, k], [1, 1, 1, s]) if cf else ([1, 1, k, 1], [1, 1, s, 1])
        y = fn(x, ksize, stride, _layers._padding(padding), data_format="NCHW" if cf else "NHWC")
        return array_ops.squeeze(y, [2 if cf else 1])


@tf_export("layers.max_pooling1d")
def max_pooling1d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                  name=None):
    """Max over pool_size windows of the one spatial axis."""
    return _pool1d(conv_ops.max_pool, inputs, pool_size, strides, padding, data_format, name,
                   "max_pooling1d")


@tf_export("layers.average_pooling1d")
def average_pooling1d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                      name=None):
    """Mean over pool_size windows of the one spatial axis (padding does not count)."""
    return _pool1d(conv_ops.avg_pool, inputs, pool_size, strides, padding, data_format, name,
                   "average_pooling1d")
