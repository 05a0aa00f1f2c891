"""tf.nn's rank-generic convolution and pooling entry points and their 1-D forms: convolution,
conv_transpose, conv1d_transpose, atrous_conv2d_transpose, max_pool_v2, avg_pool_v2,
max_pool1d, avg_pool1d, and the depthwise backprop names. Each dispatches to the 1-, 2- or 3-D
ops by the rank of its arguments."""

from flowstone.framework import ops as _ops
from flowstone.ops import array_ops, conv3d_ops, conv_ops, conv_variants
from flowstone.ops.conv_ops import _convert, _lookup, _sizes
from flowstone.util.tf_export import export_value, tf_export

export_value("nn.depthwise_conv2d_backprop_input",
             conv_ops.depthwise_conv2d_native_backprop_input)
export_value("nn.depthwise_conv2d_backprop_filter",
             conv_ops.depthwise_conv2d_native_backprop_filter)


def _spatial_dims(tensor, name, offset=2):
    """The number of spatial dimensions of `tensor` (its rank less `offset`), which must be
    1, 2 or 3."""
    rank = tensor.shape.rank
    if rank is None:
        raise ValueError(f"The rank of `{name}` must be known to choose between the 1-, 2- and "
                         "3-D ops")
    n = rank - offset
    if n not in (1, 2, 3):
        raise ValueError(f"`{name}` must have rank 3, 4 or 5 (1 to 3 spatial dimensions). "
                         f"Received: {name}.shape={tensor.shape}")
    return n


def _full(values, n, channels_first, name):
    """An int or n ints as the n + 2 entries of the data format (batch and channel 1)."""
    if values is None:
        values = [1] * n
    elif not hasattr(values, "__len__"):
        values = [values] * n
    values = [int(v) for v in values]
    if len(values) == n + 2:
        return values
    if len(values) == 1:
        values = values * n
    if len(values) != n:
        raise ValueError(f"{name} should be of length 1, {n} or {n + 2}. Received: "
                         f"{name}={values} of length {len(values)}")
    return [1, 1] + values if channels_first else [1] + values + [1]


def _channels_first(data_format):
    return data_format is not None and data_format.startswith("NC")


@tf_export("nn.convolution")
def convolution(input, filter=None, padding=None, strides=None,  # noqa: A002
                dilation_rate=None, name=None, data_format=None, filters=None, dilations=None):
    """N-D convolution (N = 1, 2 or 3 from the filter's rank) with strides and dilations per
    spatial dimension."""
    filter = _lookup("filters", filters, "filter", filter)  # noqa: A001
    dilation_rate = _lookup("dilations", dilations, "dilation_rate", dilation_rate)
    with _ops.name_scope(name, "convolution") as scope:
        x = _convert(input, "input")
        f = _convert(filter, "filter", like=x)
        n = _spatial_dims(f, "filter")
        cf = _channels_first(data_format)
        if n == 1:
            return conv_variants.conv1d(x, f, strides if strides is not None else 1, padding,
                                        data_format=data_format, dilations=dilation_rate)
        s = _full(strides, n, cf, "strides")
        d = _full(dilation_rate, n, cf, "dilation_rate")
        if n == 2:
            attrs = conv_ops._window_attrs(s, padding, data_format or "NHWC", d)
            attrs["use_cudnn_on_gpu"] = True
            return _ops.apply_op("Conv2D", [x, f], attrs, name=scope.rstrip("/"),
                                 exact_name=True).outputs[0]
        return conv3d_ops.conv3d(x, f, s, padding, data_format=data_format or "NDHWC",
                                 dilations=d, name=scope.rstrip("/"))


@tf_export("nn.conv1d_transpose")
def conv1d_transpose(input, filters, output_shape, strides, padding="SAME",  # noqa: A002
                     data_format="NWC", dilations=None, name=None):
    """The transpose of conv1d: maps `input` to a tensor of `output_shape`; `filters` is
    [width, output_channels, in_channels]."""
    with _ops.name_scope(name, "conv1d_transpose") as scope:
        if data_format not in ("NWC", "NCW", None):
            raise ValueError(f"`data_format` must be 'NWC' or 'NCW'. Received: "
                             f"data_format={data_format}")
        cf = data_format == "NCW"
        axis = 2 if cf else 1
        x = array_ops.expand_dims(_convert(input, "input"), axis)
        f = array_ops.expand_dims(_convert(filters, "filters", like=x), 0)
        if isinstance(output_shape, _ops.Tensor):
            shape = array_ops.concat([output_shape[:axis], [1], output_shape[axis:]], 0)
        else:
            shape = list(output_shape)
            shape.insert(axis, 1)
        shape = _sizes(shape, "output_shape")
        strides = [1] + _full(strides, 1, cf, "strides")
        dilations = [1] + _full(dilations, 1, cf, "dilations")
        attrs = conv_ops._window_attrs(strides, padding, "NCHW" if cf else "NHWC", dilations)
        y = _ops.apply_op("Conv2DBackpropInput", [shape, f, x], attrs).outputs[0]
        return array_ops.squeeze(y, [axis], name=scope.rstrip("/"))


@tf_export("nn.conv_transpose")
def conv_transpose(input, filters, output_shape, strides, padding="SAME",  # noqa: A002
                   data_format=None, dilations=None, name=None):
    """The transpose of the 1-, 2- or 3-D convolution (from `filters`' rank)."""
    with _ops.name_scope(name, "conv_transpose") as scope:
        f = _convert(filters, "filters")
        n = _spatial_dims(f, "filters")
        cf = _channels_first(data_format)
        if n == 1:
            return conv1d_transpose(input, f, output_shape, strides, padding,
                                    data_format=data_format or "NWC", dilations=dilations,
                                    name=scope)
        s = _full(strides, n, cf, "strides")
        d = _full(dilations, n, cf, "dilations")
        if n == 2:
            return conv_ops.conv2d_transpose(input, f, output_shape, s, padding,
                                             data_format=data_format or "NHWC", name=scope,
                                             dilations=d)
        return conv3d_ops.conv3d_transpose(input, f, output_shape, s, padding,
                                           data_format=data_format or "NDHWC", name=scope,
                                           dilations=d)


@tf_export("nn.atrous_conv2d_transpose")
def atrous_conv2d_transpose(value, filters, output_shape, rate, padding, name=None):
    """The transpose of atrous_conv2d: Conv2DBackpropInput with dilations [1, rate, rate, 1]
    (`filters` is [rows, cols, output_channels, in_channels])."""
    if rate < 1:
        raise ValueError(f"`rate` cannot be less than one. Received: rate={rate}")
    if padding not in ("SAME", "VALID"):
        raise ValueError(f"padding must be either VALID or SAME. Received: padding={padding}")
    with _ops.name_scope(name, "atrous_conv2d_transpose") as scope:
        return conv_ops.conv2d_transpose(value, filters, output_shape, [1, 1, 1, 1], padding,
                                         name=scope, dilations=[1, int(rate), int(rate), 1])


def _pool1d(op, input, ksize, strides, padding, data_format, name):  # noqa: A002
    if data_format not in ("NWC", "NCW"):
        raise ValueError(f"`data_format` must be 'NWC' or 'NCW'. Received: "
                         f"data_format={data_format}")
    cf = data_format == "NCW"
    axis = 2 if cf else 1
    with _ops.name_scope(name, f"{op}1d"):
        x = array_ops.expand_dims(_convert(input, "input"), axis)
        ksize = [1] + _full(ksize, 1, cf, "ksize")
        strides = [1] + _full(strides, 1, cf, "strides")
        pool = conv_ops.max_pool if op == "MaxPool" else conv_ops.avg_pool
        y = pool(x, ksize, strides, padding, data_format="NCHW" if cf else "NHWC")
        return array_ops.squeeze(y, [axis])


@tf_export("nn.max_pool1d")
def max_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):  # noqa: A002
    """Max pooling over windows of the one spatial dimension of a 3-D tensor."""
    return _pool1d("MaxPool", input, ksize, strides, padding, data_format, name)


@tf_export("nn.avg_pool1d")
def avg_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):  # noqa: A002
    """Average pooling over windows of the one spatial dimension of a 3-D tensor."""
    return _pool1d("AvgPool", input, ksize, strides, padding, data_format, name)


def _pool_nd(op, input, ksize, strides, padding, data_format, name):  # noqa: A002
    x = _convert(input, "input")
    n = _spatial_dims(x, "input")
    if n == 1:
        return _pool1d(op, x, ksize, strides, padding, data_format or "NWC", name)
    if n == 2:
        cf = _channels_first(data_format)
        pool = conv_ops.max_pool if op == "MaxPool" else conv_ops.avg_pool
        return pool(x, _full(ksize, 2, cf, "ksize"), _full(strides, 2, cf, "strides"), padding,
                    data_format=data_format or "NHWC", name=name)
    pool = conv3d_ops.max_pool3d if op == "MaxPool" else conv3d_ops.avg_pool3d
    return pool(x, ksize, strides, padding, data_format=data_format or "NDHWC", name=name)


@tf_export("nn.max_pool_v2")
def max_pool_v2(input, ksize, strides, padding, data_format=None, name=None):  # noqa: A002
    """Max pooling over the 1, 2 or 3 spatial dimensions of `input` (from its rank)."""
    return _pool_nd("MaxPool", input, ksize, strides, padding, data_format, name)


@tf_export("nn.avg_pool_v2")
def avg_pool_v2(input, ksize, strides, padding, data_format=None, name=None):  # noqa: A002
    """Average pooling over the 1, 2 or 3 spatial dimensions of `input` (from its rank)."""
    return _pool_nd("AvgPool", input, ksize, strides, padding, data_format, name)
