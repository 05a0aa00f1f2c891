"""tf.quantization.fake_quant_*: quantize to num_bits levels and back, for quantization-aware
training (the C++ ops in src/ops/math/fake_quant_ops.cc, with their gradient ops)."""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.util.tf_export import tf_export


def _float(x, name):
    return _ops.convert_to_tensor(x, dtype=_dtypes.float32, name=name)


def _attrs(num_bits, narrow_range, **extra):
    return dict(num_bits=int(num_bits), narrow_range=bool(narrow_range), **extra)


@tf_export("quantization.fake_quant_with_min_max_args", "fake_quant_with_min_max_args")
def fake_quant_with_min_max_args(inputs, min=-6, max=6,  # noqa: A002 - TensorFlow's names
                                 num_bits=8, narrow_range=False, name=None):
    """inputs quantized over [min, max] (nudged so that 0 is a level) and back to float."""
    return _ops.apply_op("FakeQuantWithMinMaxArgs", [_float(inputs, "inputs")],
                         _attrs(num_bits, narrow_range, min=float(min), max=float(max)),
                         name=name or "FakeQuantWithMinMaxArgs").outputs[0]


@tf_export("quantization.fake_quant_with_min_max_args_gradient",
           "fake_quant_with_min_max_args_gradient")
def fake_quant_with_min_max_args_gradient(gradients, inputs, min=-6, max=6,  # noqa: A002
                                          num_bits=8, narrow_range=False, name=None):
    """The gradient of fake_quant_with_min_max_args: gradients inside the range, 0 outside."""
    return _ops.apply_op("FakeQuantWithMinMaxArgsGradient",
                         [_float(gradients, "gradients"), _float(inputs, "inputs")],
                         _attrs(num_bits, narrow_range, min=float(min), max=float(max)),
                         name=name or "FakeQuantWithMinMaxArgsGradient").outputs[0]


@tf_export("quantization.fake_quant_with_min_max_vars", "fake_quant_with_min_max_vars")
def fake_quant_with_min_max_vars(inputs, min, max, num_bits=8, narrow_range=False,  # noqa: A002
                                 name=None):
    """inputs quantized over [min, max] (scalar tensors, often variables) and back."""
    return _ops.apply_op("FakeQuantWithMinMaxVars",
                         [_float(inputs, "inputs"), _float(min, "min"), _float(max, "max")],
                         _attrs(num_bits, narrow_range),
                         name=name or "FakeQuantWithMinMaxVars").outputs[0]


@tf_export("quantization.fake_quant_with_min_max_vars_gradient",
           "fake_quant_with_min_max_vars_gradient")
def fake_quant_with_min_max_vars_gradient(gradients, inputs, min, max,  # noqa: A002
                                          num_bits=8, narrow_range=False, name=None):
    """The gradients of fake_quant_with_min_max_vars for inputs, min and max."""
    return tuple(_ops.apply_op("FakeQuantWithMinMaxVarsGradient",
                               [_float(gradients, "gradients"), _float(inputs, "inputs"),
                                _float(min, "min"), _float(max, "max")],
                               _attrs(num_bits, narrow_range),
                               name=name or "FakeQuantWithMinMaxVarsGradient").outputs)


@tf_export("quantization.fake_quant_with_min_max_vars_per_channel",
           "fake_quant_with_min_max_vars_per_channel")
def fake_quant_with_min_max_vars_per_channel(inputs, min, max, num_bits=8,  # noqa: A002
                                             narrow_range=False, name=None):
    """inputs quantized over one [min[c], max[c]] per channel c of the last dimension."""
    return _ops.apply_op("FakeQuantWithMinMaxVarsPerChannel",
                         [_float(inputs, "inputs"), _float(min, "min"), _float(max, "max")],
                         _attrs(num_bits, narrow_range),
                         name=name or "FakeQuantWithMinMaxVarsPerChannel").outputs[0]


@tf_export("quantization.fake_quant_with_min_max_vars_per_channel_gradient",
           "fake_quant_with_min_max_vars_per_channel_gradient")
def fake_quant_with_min_max_vars_per_channel_gradient(gradients, inputs, min, max,  # noqa: A002
                                                      num_bits=8, narrow_range=False, name=None):
    """The gradients of fake_quant_with_min_max_vars_per_channel for inputs, min and max."""
    return tuple(_ops.apply_op("FakeQuantWithMinMaxVarsPerChannelGradient",
                               [_float(gradients, "gradients"), _float(inputs, "inputs"),
                                _float(min, "min"), _float(max, "max")],
                               _attrs(num_bits, narrow_range),
                               name=name or "FakeQuantWithMinMaxVarsPerChannelGradient").outputs)
