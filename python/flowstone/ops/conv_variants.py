"""Convolution and pooling functions built on the 2-D and 3-D ops: tf.nn.conv1d (a 2-D
convolution over one row), atrous_conv2d (a dilated Conv2D), separable_conv2d (depthwise, then
1x1), max_pool_with_argmax and the N-D tf.nn.pool."""

import numpy as np

from flowstone import dtypes as _dtypes
from flowstone import errors as _errors
from flowstone.framework import ops as _ops
from flowstone.ops import array_ops, conv3d_ops, conv_ops
from flowstone.ops.conv_ops import (_channel_index, _convert, _get_sequence, _lookup,
                                    _window_attrs)
from flowstone.util.tf_export import tf_export


def _sequence_1d(value, channel_index, name):
    """An int or a 1- or 3-list for a 1-D convolution, as the 3 entries of NWC or NCW."""
    if value is None:
        value = [1]
    elif not hasattr(value, "__len__"):
        value = [value]
    value = [int(v) for v in value]
    if len(value) == 3:
        return value
    if len(value) != 1:
        raise ValueError(f"{name} should be of length 1, 1 or 3. Received: {name}={value} of "
                         f"length {len(value)}")
    return [1, 1] + value if channel_index == 1 else [1] + value + [1]


@tf_export("nn.conv1d")
def conv1d(value=None, filters=None, stride=None, padding=None, use_cudnn_on_gpu=None,
           data_format=None, name=None, input=None, dilations=None):  # noqa: A002
    """1-D convolution of a [batch, width, in_channels] (NWC) or [batch, in_channels, width]
    (NCW) input with a [width, in_channels, out_channels] filter, computed as a Conv2D over a
    height of 1."""
    value = _lookup("input", input, "value", value)
    with _ops.name_scope(name, "conv1d") as scope:
        if data_format is None or data_format in ("NHWC", "NWC"):
            data_format, spatial_start_dim, channel_index = "NHWC", 1, 2
        elif data_format in ("NCHW", "NCW"):
            data_format, spatial_start_dim, channel_index = "NCHW", 2, 1
        else:
            raise ValueError(f"`data_format` must be 'NWC' or 'NCW'. Received: "
                             f"data_format={data_format}")
        strides = [1] + _sequence_1d(stride, channel_index, "stride")
        dilations = [1] + _sequence_1d(dilations, channel_index, "dilations")
        x = array_ops.expand_dims(_convert(value, "value"), spatial_start_dim)
        f = array_ops.expand_dims(_convert(filters, "filters", like=x), 0)
        attrs = _window_attrs(strides, padding, data_format, dilations)
        attrs["use_cudnn_on_gpu"] = True if use_cudnn_on_gpu is None else bool(use_cudnn_on_gpu)
        result = _ops.apply_op("Conv2D", [x, f], attrs, name=scope.rstrip("/"),
                               exact_name=True).outputs[0]
        return array_ops.squeeze(result, [spatial_start_dim])


@tf_export("nn.atrous_conv2d")
def atrous_conv2d(value, filters, rate, padding, name=None):
    """2-D convolution with holes: `filters` [rows, cols, in, out] applied with `rate` - 1 zeros
    between its taps (Conv2D with dilations [1, rate, rate, 1], stride 1)."""
    rates = np.broadcast_to(rate, (2,)).astype(int)
    if np.any(rates < 1):
        raise ValueError(f"dilation_rate must be positive. Received: dilation_rate={rates}")
    with _ops.name_scope(name, "convolution") as scope:
        x = _convert(value, "input")
        f = _convert(filters, "filter", like=x)
        attrs = _window_attrs(1, padding, "NHWC", [int(r) for r in rates])
        return _ops.apply_op("Conv2D", [x, f], attrs, name=scope.rstrip("/"),
                             exact_name=True).outputs[0]


@tf_export("nn.separable_conv2d")
def separable_conv2d(input, depthwise_filter, pointwise_filter, strides, padding,  # noqa: A002
                     rate=None, name=None, data_format=None, dilations=None):
    """A depthwise convolution (each input channel with its own [rows, cols, multiplier]
    filters, at `rate`) followed by a 1x1 convolution with `pointwise_filter`
    [1, 1, in_channels * multiplier, out_channels]."""
    rate = _lookup("dilations", dilations, "rate", rate)
    with _ops.name_scope(name, "separable_conv2d") as scope:
        x = _convert(input, "tensor_in")
        depthwise = _convert(depthwise_filter, "depthwise_filter", like=x)
        pointwise = _convert(pointwise_filter, "pointwise_filter", like=x)
        shape = pointwise.shape
        if shape.rank is not None:
            if shape.rank != 4:
                raise ValueError(f"Shape must be rank 4 but is rank {shape.rank}")
            for d in (0, 1):
                if shape[d] not in (None, 1):
                    raise ValueError(f"Dimensions {shape[d]} and 1 are not compatible")
        attrs = _window_attrs(strides, padding, data_format, 1 if rate is None else rate)
        y = _ops.apply_op("DepthwiseConv2dNative", [x, depthwise], attrs,
                          name="depthwise").outputs[0]
        attrs = _window_attrs(1, "VALID", data_format, 1)
        attrs["use_cudnn_on_gpu"] = True
        return _ops.apply_op("Conv2D", [y, pointwise], attrs, name=scope.rstrip("/"),
                             exact_name=True).outputs[0]


@tf_export("nn.max_pool_with_argmax")
def max_pool_with_argmax(input, ksize, strides, padding, data_format="NHWC",  # noqa: A002
                         Targmax=None, name=None, output_dtype=None,  # noqa: N803
                         include_batch_in_index=False):
    """Max pooling of an NHWC tensor and the flattened index of each maximum:
    (y * width + x) * channels + c, or ((b * height + y) * width + x) * channels + c with
    include_batch_in_index."""
    if data_format != "NHWC":
        raise ValueError("Data formats other than 'NHWC' are not yet supported. Received: "
                         f"data_format={data_format}")
    targmax = _lookup("output_dtype", output_dtype, "Targmax", Targmax)
    targmax = _dtypes.int64 if targmax is None else _dtypes.as_dtype(targmax)
    channel = _channel_index(data_format)
    attrs = {"ksize": _get_sequence(ksize, channel, "ksize"),
             "strides": _get_sequence(strides, channel, "strides"),
             "padding": padding, "Targmax": targmax,
             "include_batch_in_index": bool(include_batch_in_index)}
    op = _ops.apply_op("MaxPoolWithArgmax", [_convert(input, "input")], attrs,
                       name=name or "MaxPoolWithArgmax")
    return op.outputs[0], op.outputs[1]


@tf_export("nn.pool")
def pool(input, window_shape, pooling_type, padding, dilation_rate=None,  # noqa: A002
         strides=None, name=None, data_format=None, dilations=None):
    """N-D ("MAX" or "AVG") pooling over the 1, 2 or 3 spatial dimensions of `input`, with the
    window and strides given per spatial dimension. Dilated windows (dilation_rate > 1) are not
    supported."""
    dilation_rate = _lookup("dilations", dilations, "dilation_rate", dilation_rate)
    with _ops.name_scope(name, f"{pooling_type.lower()}_pool") as scope:
        x = _convert(input, "input")
        n = len(window_shape)
        if n < 1 or n > 3:
            raise ValueError(f"`len(window_shape)` must be 1, 2, or 3. Received: "
                             f"window_shape={window_shape} of length {n}")
        if x.shape.rank is not None and x.shape.rank != n + 2:
            raise ValueError(f"Shape must be rank {n + 2} but is rank {x.shape.rank}")
        window = np.array([int(w) for w in window_shape])
        strides = np.array([1] * n if strides is None else [int(s) for s in strides])
        dilation = np.array([1] * n if dilation_rate is None else [int(d) for d in dilation_rate])
        if len(strides) != n or len(dilation) != n:
            raise ValueError(f"`strides` and `dilation_rate` must have {n} entries. Received: "
                             f"strides={strides.tolist()} and dilation_rate={dilation.tolist()}")
        if np.any(dilation > 1) and np.any(strides > 1):
            raise ValueError("`strides > 1` not supported in conjunction with `dilation_rate > "
                             f"1`. Received: strides={strides.tolist()} and "
                             f"dilation_rate={dilation.tolist()}")
        if padding == "SAME" and np.any(dilation > 1):
            raise ValueError("pooling with 'SAME' padding is not implemented for "
                             f"`dilation_rate` > 1. Received: padding={padding} and "
                             f"dilation_rate={dilation.tolist()}")
        if np.any(strides > window):
            raise ValueError("`strides` > `window_shape` not supported due to inconsistency "
                             f"between CPU and GPU implementations. Received: "
                             f"strides={strides.tolist()} and window_shape={window.tolist()}")
        if pooling_type not in ("MAX", "AVG"):
            raise ValueError(f"{n}-D {pooling_type} pooling is not supported.")
        if np.any(dilation > 1):
            raise _errors.UnimplementedError(
                None, None, f"tf.nn.pool with dilation_rate={dilation.tolist()} is not supported; "
                            "use dilation_rate 1 (or a dilated convolution)")
        channels_first = data_format is not None and data_format.startswith("NC")
        window, strides = window.tolist(), strides.tolist()
        if channels_first:
            ksize, stride = [1, 1] + window, [1, 1] + strides
        else:
            ksize, stride = [1] + window + [1], [1] + strides + [1]
        if n == 3:
            fn = conv3d_ops.max_pool3d if pooling_type == "MAX" else conv3d_ops.avg_pool3d
            return fn(x, ksize, stride, padding, data_format=data_format or "NDHWC", name=scope)
        fn = conv_ops.max_pool if pooling_type == "MAX" else conv_ops.avg_pool
        if n == 2:
            return fn(x, ksize, stride, padding, data_format=data_format or "NHWC")
        if data_format not in (None, "NWC", "NCW"):
            raise ValueError("data_format must be either 'NWC' or 'NCW'. Received: "
                             f"data_format={data_format}")
        # 1-D: a 2-D pooling over a height of 1.
        x = array_ops.expand_dims(x, 2 if channels_first else 1)
        y = fn(x, [1] + ksize, [1] + stride, padding,
               data_format="NCHW" if channels_first else "NHWC")
        return array_ops.squeeze(y, [2 if channels_first else 1])
