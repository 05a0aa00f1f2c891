"""3-D convolution and pooling: tf.nn.conv3d, conv3d_transpose, conv3d_backprop_filter_v2,
max_pool3d and avg_pool3d."""

from flowstone.framework import ops as _ops
from flowstone.ops.conv_ops import _convert, _lookup, _sizes
from flowstone.util.tf_export import tf_export


def _sequence_3d(value, data_format, name):
    """An int or a 1-, 3- or 5-list as the 5 entries of NDHWC or NCDHW (batch and channel 1)."""
    if value is None:
        value = [1]
    elif not hasattr(value, "__len__"):
        value = [value]
    value = [int(v) for v in value]
    if len(value) == 5:
        return value
    if len(value) == 1:
        value = value * 3
    elif len(value) != 3:
        raise ValueError(f"{name} should be of length 1, 3 or 5. Received: {name}={value} of "
                         f"length {len(value)}")
    return [1, 1] + value if data_format.startswith("NC") else [1] + value + [1]


def _conv_attrs(strides, padding, data_format, dilations):
    """TF1's 3-D convolutions pass strides and dilations to the op as given: 5 entries."""
    return {"strides": [int(s) for s in strides], "padding": padding,
            "data_format": data_format or "NDHWC",
            "dilations": [int(d) for d in dilations]}


@tf_export("nn.conv3d")
def conv3d(input, filter=None, strides=None, padding=None, data_format="NDHWC",  # noqa: A002
           dilations=[1, 1, 1, 1, 1], name=None, filters=None):  # noqa: B006
    """3-D convolution of a 5-D `input` with a [planes, rows, cols, in, out] filter."""
    filter = _lookup("filters", filters, "filter", filter)  # noqa: A001
    x = _convert(input, "input")
    f = _convert(filter, "filter", like=x)
    return _ops.apply_op("Conv3D", [x, f], _conv_attrs(strides, padding, data_format, dilations),
                         name=name or "Conv3D").outputs[0]


@tf_export("nn.conv3d_backprop_filter_v2", "nn.conv3d_backprop_filter")
def conv3d_backprop_filter_v2(input, filter_sizes, out_backprop, strides, padding,  # noqa: A002
                              data_format="NDHWC", dilations=[1, 1, 1, 1, 1],  # noqa: B006
                              name=None):
    """The gradient of conv3d with respect to its filter, of shape `filter_sizes`."""
    x = _convert(input, "input")
    dy = _convert(out_backprop, "out_backprop", like=x)
    return _ops.apply_op("Conv3DBackpropFilterV2", [x, _sizes(filter_sizes, "filter_sizes"), dy],
                         _conv_attrs(strides, padding, data_format, dilations),
                         name=name or "Conv3DBackpropFilterV2").outputs[0]


@tf_export("nn.conv3d_transpose")
def conv3d_transpose(value, filter=None, output_shape=None, strides=None,  # noqa: A002
                     padding="SAME", data_format="NDHWC", name=None, input=None,  # noqa: A002
                     filters=None, dilations=None):
    """The transpose of conv3d (its gradient with respect to the input): maps `value` to a
    tensor of `output_shape`; `filter` is [planes, rows, cols, output_channels, in_channels]."""
    value = _lookup("input", input, "value", value)
    filter = _lookup("filters", filters, "filter", filter)  # noqa: A001
    with _ops.name_scope(name, "conv3d_transpose") as scope:
        dy = _convert(value, "value")
        f = _convert(filter, "filter", like=dy)
        attrs = _conv_attrs(strides, padding, data_format, dilations or [1, 1, 1, 1, 1])
        return _ops.apply_op("Conv3DBackpropInputV2",
                             [_sizes(output_shape, "output_shape"), f, dy], attrs,
                             name=scope.rstrip("/"), exact_name=True).outputs[0]


def _pool3d(op_type, input, ksize, strides, padding, data_format, name):  # noqa: A002
    data_format = data_format or "NDHWC"
    if data_format not in ("NDHWC", "NCDHW"):
        raise ValueError(f"`data_format` must be 'NDHWC' or 'NCDHW'. Received: "
                         f"data_format={data_format}")
    with _ops.name_scope(name, op_type) as scope:
        attrs = {"ksize": _sequence_3d(ksize, data_format, "ksize"),
                 "strides": _sequence_3d(strides, data_format, "strides"), "padding": padding,
                 "data_format": data_format}
        return _ops.apply_op(op_type, [_convert(input, "input")], attrs, name=scope.rstrip("/"),
                             exact_name=True).outputs[0]


@tf_export("nn.max_pool3d")
def max_pool3d(input, ksize, strides, padding, data_format="NDHWC", name=None):  # noqa: A002
    """Max pooling over 3-D windows of a 5-D tensor."""
    return _pool3d("MaxPool3D", input, ksize, strides, padding, data_format, name)


@tf_export("nn.avg_pool3d")
def avg_pool3d(input, ksize, strides, padding, data_format="NDHWC", name=None):  # noqa: A002
    """Average pooling over 3-D windows of a 5-D tensor; padding is not counted."""
    return _pool3d("AvgPool3D", input, ksize, strides, padding, data_format, name)
