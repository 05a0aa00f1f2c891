"""Convolution, pooling and bias ops: tf.nn.conv2d, conv2d_transpose, depthwise_conv2d,
max_pool, avg_pool, bias_add and the raw backprop ops.

These functions only normalize TensorFlow's argument conventions (an int or a 2-list for strides,
a list of pairs for explicit padding, deprecated argument names); the C++ ops check and compute.
"""

from flowstone.framework import ops as _ops

__all__ = [
    "conv2d", "conv2d_transpose", "conv2d_backprop_input", "conv2d_backprop_filter",
    "depthwise_conv2d", "depthwise_conv2d_native", "depthwise_conv2d_native_backprop_input",
    "depthwise_conv2d_native_backprop_filter", "max_pool", "max_pool2d", "avg_pool",
    "avg_pool2d", "bias_add",
]


def _lookup(new_name, new_value, old_name, old_value):
    """TensorFlow's handling of a renamed argument: either name, not both."""
    if new_value is not None and old_value is not None:
        raise ValueError(f"Cannot specify both '{new_name}' and '{old_name}'")
    return new_value if new_value is not None else old_value


def _channel_index(data_format):
    return 1 if data_format is not None and data_format.startswith("NC") else 3


def _get_sequence(value, channel_index, name):
    """Expands an int, or a list of 1, 2 or 4 ints, to the 4 entries of the data format (the
    batch and channel entries 1)."""
    if value is None:
        value = [1]
    elif not hasattr(value, "__len__"):
        value = [value]
    value = [int(v) for v in value]
    if len(value) == 4:
        return value
    if len(value) == 1:
        value = value * 2
    elif len(value) != 2:
        raise ValueError(f"{name} should be of length 1, 2 or 4. Received: {name}={value} of "
                         f"length {len(value)}")
    return [1, 1] + value if channel_index == 1 else [1] + value + [1]


def _convert_padding(padding):
    """A padding string stays as it is; a list of 4 [before, after] pairs becomes EXPLICIT."""
    if isinstance(padding, str):
        if padding == "EXPLICIT":
            raise ValueError("'EXPLICIT' is not a valid value for `padding`. To use explicit "
                             "padding, `padding` must be a list.")
        return padding, []
    if not isinstance(padding, (list, tuple)):
        raise ValueError(f"`padding` must be 'SAME', 'VALID' or a list of [before, after] pairs. "
                         f"Received: padding={padding!r}")
    explicit = []
    for i, pair in enumerate(padding):
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise ValueError("When `padding` is a list, each element of `padding` must be a "
                             f"list/tuple of size 2. Received: padding={padding} with element at "
                             f"index {i}: {pair!r}")
        explicit.extend(int(p) for p in pair)
    if len(padding) != 4:
        raise ValueError(f"When padding is a list, it must be of size 4. Received: "
                         f"padding={padding} of size {len(padding)}")
    return "EXPLICIT", explicit


def _convert(value, name, like=None):
    """A Tensor as it is; anything else converted, to the dtype of `like` when given."""
    if isinstance(value, _ops.Tensor):
        return value
    return _ops.convert_to_tensor(value, dtype=None if like is None else like.dtype, name=name)


def _window_attrs(strides, padding, data_format, dilations=None):
    data_format = data_format or "NHWC"
    channel = _channel_index(data_format)
    padding, explicit_paddings = _convert_padding(padding)
    attrs = {
        "strides": _get_sequence(strides, channel, "strides"),
        "padding": padding,
        "explicit_paddings": explicit_paddings,
        "data_format": data_format,
    }
    if dilations is not None:
        attrs["dilations"] = _get_sequence(dilations, channel, "dilations")
    return attrs


def _sizes(value, name):
    """A shape argument (input_sizes, filter_sizes, output_shape) as an int32 tensor."""
    if isinstance(value, _ops.Tensor):
        return value
    return _ops.convert_to_tensor(value, dtype="int32", name=name)


def conv2d(input, filter=None, strides=None, padding=None, use_cudnn_on_gpu=True,  # noqa: A002
           data_format="NHWC", dilations=[1, 1, 1, 1], name=None, filters=None):  # noqa: B006
    """2-D convolution of a 4-D `input` with a [rows, cols, in_channels, out_channels] filter."""
    filter = _lookup("filters", filters, "filter", filter)  # noqa: A001
    x = _convert(input, "input")
    f = _convert(filter, "filter", like=x)
    attrs = _window_attrs(strides, padding, data_format, dilations)
    attrs["use_cudnn_on_gpu"] = bool(use_cudnn_on_gpu)
    return _ops.apply_op("Conv2D", [x, f], attrs, name=name or "Conv2D").outputs[0]


def conv2d_backprop_input(input_sizes, filter=None, out_backprop=None, strides=None,  # noqa: A002
                          padding=None, use_cudnn_on_gpu=True, data_format="NHWC",
                          dilations=[1, 1, 1, 1], name=None, filters=None):  # noqa: B006
    """The gradient of conv2d with respect to its input, of shape `input_sizes`."""
    filter = _lookup("filters", filters, "filter", filter)  # noqa: A001
    dy = _convert(out_backprop, "out_backprop")
    f = _convert(filter, "filter", like=dy)
    attrs = _window_attrs(strides, padding, data_format, dilations)
    attrs["use_cudnn_on_gpu"] = bool(use_cudnn_on_gpu)
    return _ops.apply_op("Conv2DBackpropInput", [_sizes(input_sizes, "input_sizes"), f, dy],
                         attrs, name=name or "Conv2DBackpropInput").outputs[0]


def conv2d_backprop_filter(input, filter_sizes, out_backprop, strides, padding,  # noqa: A002
                           use_cudnn_on_gpu=True, data_format="NHWC", dilations=[1, 1, 1, 1],  # noqa: B006
                           name=None):
    """The gradient of conv2d with respect to its filter, of shape `filter_sizes`."""
    x = _convert(input, "input")
    dy = _convert(out_backprop, "out_backprop", like=x)
    attrs = _window_attrs(strides, padding, data_format, dilations)
    attrs["use_cudnn_on_gpu"] = bool(use_cudnn_on_gpu)
    return _ops.apply_op("Conv2DBackpropFilter", [x, _sizes(filter_sizes, "filter_sizes"), dy],
                         attrs, name=name or "Conv2DBackpropFilter").outputs[0]


def conv2d_transpose(value=None, filter=None, output_shape=None, strides=None,  # noqa: A002
                     padding="SAME", data_format="NHWC", name=None, input=None,  # noqa: A002
                     filters=None, dilations=None):
    """The transpose of conv2d (the gradient of conv2d with respect to its input): maps `value`
    to a tensor of `output_shape`. `filter` is [rows, cols, output_channels, in_channels]."""
    value = _lookup("input", input, "value", value)
    filter = _lookup("filters", filters, "filter", filter)  # noqa: A001
    with _ops.name_scope(name, "conv2d_transpose", [value, filter, output_shape]) as scope:
        dy = _convert(value, "value")
        f = _convert(filter, "filter", like=dy)
        attrs = _window_attrs(strides, padding, data_format, dilations or [1, 1, 1, 1])
        return _ops.apply_op("Conv2DBackpropInput", [_sizes(output_shape, "output_shape"), f, dy],
                             attrs, name=scope.rstrip("/"), exact_name=True).outputs[0]


def depthwise_conv2d_native(input, filter, strides, padding, data_format="NHWC",  # noqa: A002
                            dilations=[1, 1, 1, 1], name=None):  # noqa: B006
    """Convolves each input channel with its own [rows, cols, multiplier] filters."""
    x = _convert(input, "input")
    f = _convert(filter, "filter", like=x)
    return _ops.apply_op("DepthwiseConv2dNative", [x, f],
                         _window_attrs(strides, padding, data_format, dilations),
                         name=name or "DepthwiseConv2dNative").outputs[0]


def depthwise_conv2d_native_backprop_input(input_sizes, filter, out_backprop, strides,  # noqa: A002
                                           padding, data_format="NHWC", dilations=[1, 1, 1, 1],  # noqa: B006
                                           name=None):
    dy = _convert(out_backprop, "out_backprop")
    f = _convert(filter, "filter", like=dy)
    return _ops.apply_op("DepthwiseConv2dNativeBackpropInput",
                         [_sizes(input_sizes, "input_sizes"), f, dy],
                         _window_attrs(strides, padding, data_format, dilations),
                         name=name or "DepthwiseConv2dNativeBackpropInput").outputs[0]


def depthwise_conv2d_native_backprop_filter(input, filter_sizes, out_backprop, strides,  # noqa: A002
                                            padding, data_format="NHWC",
                                            dilations=[1, 1, 1, 1], name=None):  # noqa: B006
    x = _convert(input, "input")
    dy = _convert(out_backprop, "out_backprop", like=x)
    return _ops.apply_op("DepthwiseConv2dNativeBackpropFilter",
                         [x, _sizes(filter_sizes, "filter_sizes"), dy],
                         _window_attrs(strides, padding, data_format, dilations),
                         name=name or "DepthwiseConv2dNativeBackpropFilter").outputs[0]


def depthwise_conv2d(input, filter, strides, padding, rate=None, name=None,  # noqa: A002
                     data_format=None, dilations=None):
    """Depthwise 2-D convolution; `rate` (or `dilations`) is the spatial dilation, an int or a
    2-list, which the op applies directly."""
    rate = _lookup("dilations", dilations, "rate", rate)
    with _ops.name_scope(name, "depthwise", [input, filter]) as scope:
        x = _convert(input, "tensor_in")
        f = _convert(filter, "filter_in", like=x)
        attrs = _window_attrs(strides, padding, data_format, rate if rate is not None else 1)
        return _ops.apply_op("DepthwiseConv2dNative", [x, f], attrs, name=scope.rstrip("/"),
                             exact_name=True).outputs[0]


def _pool(op_type, value, ksize, strides, padding, data_format, name):
    data_format = data_format or "NHWC"
    channel = _channel_index(data_format)
    padding, explicit_paddings = _convert_padding(padding)
    attrs = {
        "ksize": _get_sequence(ksize, channel, "ksize"),
        "strides": _get_sequence(strides, channel, "strides"),
        "padding": padding,
        "data_format": data_format,
    }
    if op_type == "MaxPool":
        attrs["explicit_paddings"] = explicit_paddings
    return _ops.apply_op(op_type, [_convert(value, "input")], attrs,
                         name=name or op_type).outputs[0]


def max_pool(value, ksize, strides, padding, data_format="NHWC", name=None,
             input=None):  # noqa: A002
    """Max pooling; `ksize` and `strides` are ints or lists of 1, 2 or 4 entries."""
    value = _lookup("input", input, "value", value)
    return _pool("MaxPool", value, ksize, strides, padding, data_format, name)


def max_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    return _pool("MaxPool", input, ksize, strides, padding, data_format, name)


def avg_pool(value, ksize, strides, padding, data_format="NHWC", name=None,
             input=None):  # noqa: A002
    """Average pooling; padding does not count towards a window's average."""
    value = _lookup("input", input, "value", value)
    return _pool("AvgPool", value, ksize, strides, padding, data_format, name)


def avg_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    return _pool("AvgPool", input, ksize, strides, padding, data_format, name)


def bias_add(value, bias, data_format=None, name=None):
    """Adds a 1-D `bias` along the channel dimension of `value` (the last one unless
    data_format starts with "NC")."""
    attrs = {}
    if data_format is not None:
        if data_format.startswith("NC"):
            attrs["data_format"] = "NCHW"
        elif data_format.startswith("N") and data_format.endswith("C"):
            attrs["data_format"] = "NHWC"
        else:
            raise ValueError(f"data_format must be of the form `N...C` or `NC...`. Received: "
                             f"data_format={data_format}")
    x = _convert(value, "input")
    b = _convert(bias, "bias", like=x)
    return _ops.apply_op("BiasAdd", [x, b], attrs, name=name or "BiasAdd").outputs[0]
