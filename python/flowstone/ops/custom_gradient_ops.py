"""tf.custom_gradient in graph mode: the decorated function returns its outputs and a function
of their gradients giving its inputs' gradients. The outputs pass, together with the inputs,
through one IdentityN node whose gradient is that function (registered under a fresh name with
gradient_override_map), so tf.gradients calls it instead of differentiating the body."""

import functools
import itertools

from flowstone.framework import gradient_registry
from flowstone.framework import ops as _ops
from flowstone.util import nest
from flowstone.util.tf_export import tf_export

_names = itertools.count()


@tf_export("custom_gradient")
def custom_gradient(f=None):
    """Decorator: `f(*inputs)` returns `(outputs, grad_fn)`; tf.gradients through the decorated
    call uses `grad_fn(*output_gradients)`, which returns one gradient (or None) per input."""
    if f is None:
        return custom_gradient

    @functools.wraps(f)
    def decorated(*args, **kwargs):
        from flowstone.ops import array_ops
        if kwargs:
            raise ValueError("The custom_gradient decorator currently supports keywords "
                             "arguments only when eager execution is enabled.")
        if _ops.executing_eagerly():
            raise NotImplementedError("tf.custom_gradient runs in graph mode only in Flowstone "
                                      "(inside tf.function or a tf.Graph)")
        inputs = [_ops.convert_to_tensor(a) for a in args]
        result, grad_fn = f(*inputs)
        outputs = [_ops.convert_to_tensor(t) for t in nest.flatten(result)]
        name = f"CustomGradient-{next(_names)}"

        def gradient(op, *grads):
            dys = [array_ops.zeros_like(op.outputs[i]) if g is None else g
                   for i, g in enumerate(grads[:len(outputs)])]
            dxs = grad_fn(*dys)
            dxs = list(dxs) if isinstance(dxs, (list, tuple)) else [dxs]
            if len(dxs) != len(inputs):
                raise ValueError(f"custom_gradient function expected to return {len(inputs)} "
                                 f"gradients but returned {len(dxs)} instead.")
            return [None] * len(outputs) + dxs

        gradient_registry.RegisterGradient(name)(gradient)
        with _ops.get_default_graph().gradient_override_map({"IdentityN": name}):
            node = _ops.apply_op("IdentityN", [outputs + inputs], name="IdentityN")
        return nest.pack_sequence_as(result, node.outputs[:len(outputs)])

    return decorated
