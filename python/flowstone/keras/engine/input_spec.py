"""InputSpec: what a layer accepts, checked with Keras's messages before any op is built."""

from flowstone.framework.input_spec import InputSpec
from flowstone.framework.tensor_shape import TensorShape
from flowstone.util.tf_export import export_value

export_value("keras.layers.InputSpec", InputSpec)


def _display(shape):
    return str(tuple(shape)) if shape is not None else "None"


def assert_input_compatibility(input_spec, inputs, layer_name):
    """Raises Keras's ValueError when `inputs` (tensors, or TensorShapes of data not yet fed)
    do not fit `input_spec`."""
    if not input_spec:
        return
    specs = input_spec if isinstance(input_spec, (list, tuple)) else [input_spec]
    inputs = inputs if isinstance(inputs, (list, tuple)) else [inputs]
    if len(inputs) != len(specs):
        raise ValueError(f'Layer "{layer_name}" expects {len(specs)} input(s), but it received '
                         f"{len(inputs)} input tensors. Inputs received: {inputs}")
    for index, (x, spec) in enumerate(zip(inputs, specs)):
        if spec is None:
            continue
        shape = x.as_list() if isinstance(x, TensorShape) else x.shape.as_list()
        rank = len(shape)
        prefix = f'Input {index} of layer "{layer_name}" is incompatible with the layer: '
        if spec.ndim is not None and rank != spec.ndim:
            raise ValueError(prefix + f"expected ndim={spec.ndim}, found ndim={rank}. Full "
                             f"shape received: {_display(shape)}")
        if spec.max_ndim is not None and rank > spec.max_ndim:
            raise ValueError(prefix + f"expected max_ndim={spec.max_ndim}, found ndim={rank}")
        if spec.min_ndim is not None and rank < spec.min_ndim:
            raise ValueError(prefix + f"expected min_ndim={spec.min_ndim}, found ndim={rank}. "
                             f"Full shape received: {_display(shape)}")
        for axis, value in spec.axes.items():
            if value is None or -rank > axis or axis >= rank:
                continue
            if shape[axis] not in (value, None):
                raise ValueError(prefix + f"expected axis {axis} of input shape to have value "
                                 f"{value}, but received input with shape {_display(shape)}")
        if spec.shape is not None:
            for expected, actual in zip(spec.shape, shape):
                if expected is not None and actual is not None and expected != actual:
                    raise ValueError(prefix + f"expected shape={_display(spec.shape)}, found "
                                     f"shape={_display(shape)}")
