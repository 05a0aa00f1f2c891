"""tf.conv2d_backprop_filter_v2 and tf.conv2d_backprop_input_v2: TensorFlow's raw-op forms of the
convolution gradients that take the filter (or input) tensor itself, of which only the shape is
used, where conv2d_backprop_* take that shape. They build the same gradient ops."""

from flowstone.framework import ops as _ops
from flowstone.ops import array_ops as _array
from flowstone.ops import conv_ops as _conv
from flowstone.util.tf_export import tf_export


def _padding_attrs(padding, explicit_paddings):
    """The raw ops' padding: a string, with explicit_paddings (8 ints) when it is EXPLICIT."""
    if padding == "EXPLICIT":
        flat = [int(p) for p in explicit_paddings]
        if len(flat) != 8:
            raise ValueError(f"explicit_paddings must have 8 values (a [before, after] pair per "
                             f"dimension) when padding is EXPLICIT, got {explicit_paddings!r}")
        return [flat[i:i + 2] for i in range(0, 8, 2)]
    if explicit_paddings:
        raise ValueError(f"explicit_paddings must be empty unless padding is EXPLICIT, got "
                         f"padding={padding!r}")
    return padding


@tf_export("conv2d_backprop_filter_v2")
def conv2d_backprop_filter_v2(input, filter, out_backprop, strides, padding,  # noqa: A002
                              use_cudnn_on_gpu=True, explicit_paddings=[],  # noqa: B006
                              data_format="NHWC", dilations=[1, 1, 1, 1],  # noqa: B006
                              name=None):
    """The gradient of conv2d with respect to a filter shaped like `filter`."""
    with _ops.name_scope(name, "Conv2DBackpropFilterV2", [input, filter, out_backprop]) as scope:
        filter = _ops.convert_to_tensor(filter, name="filter")  # noqa: A001
        return _conv.conv2d_backprop_filter(
            input, _array.shape(filter), out_backprop, strides,
            _padding_attrs(padding, explicit_paddings), use_cudnn_on_gpu, data_format,
            dilations, name=scope)


@tf_export("conv2d_backprop_input_v2")
def conv2d_backprop_input_v2(input, filter, out_backprop, strides, padding,  # noqa: A002
                             use_cudnn_on_gpu=True, explicit_paddings=[],  # noqa: B006
                             data_format="NHWC", dilations=[1, 1, 1, 1], name=None):  # noqa: B006
    """The gradient of conv2d with respect to an input shaped like `input`."""
    with _ops.name_scope(name, "Conv2DBackpropInputV2", [input, filter, out_backprop]) as scope:
        input = _ops.convert_to_tensor(input, name="input")  # noqa: A001
        return _conv.conv2d_backprop_input(
            _array.shape(input), filter, out_backprop, strides,
            _padding_attrs(padding, explicit_paddings), use_cudnn_on_gpu, data_format,
            dilations, name=scope)
