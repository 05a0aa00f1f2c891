"""tf.custom_gradient: the decorated function returns its outputs and a function of their
gradients giving its inputs' gradients.

In graph mode the outputs pass, together with the inputs, through one IdentityN node whose
gradient is that function (registered under a fresh name with gradient_override_map), so
tf.gradients calls it instead of differentiating the body. Executing eagerly, the body runs with
the tapes paused and the outputs pass through one EagerCustomGradient op, which the tapes record;
its gradient op calls the gradient function (src/ops/script/custom_gradient_ops.cc), found by a
token that the recording tapes hold until they are used up, reset or deleted."""

import collections
import functools
import itertools
import threading

from flowstone.framework import gradient_registry
from flowstone.framework import ops as _ops
from flowstone.util import nest
from flowstone.util.tf_export import tf_export

_names = itertools.count()

# How many tapes hold each eager gradient function's token (script_ops registers the function).
_holders = collections.Counter()
_holders_lock = threading.Lock()


def _release(token):
    from flowstone.ops import script_ops
    with _holders_lock:
        _holders[token] -= 1
        if _holders[token] > 0:
            return
        del _holders[token]
    script_ops.unregister(token)


def _eager_call(f, args):
    """The decorated `f` called on `args` while executing eagerly."""
    from flowstone.ops import basic_ops, gradient_tape, script_ops
    inputs = [_ops.convert_to_tensor(a) for a in args]
    tapes = gradient_tape.recording_tapes()
    if not tapes:
        return f(*inputs)[0]  # nothing records this call: its gradient function is not needed
    with gradient_tape.paused(tapes):
        result, grad_fn = f(*inputs)
    outputs = [_ops.convert_to_tensor(t) for t in nest.flatten(result)]

    def gradient(*dys):
        dxs = grad_fn(*dys)
        dxs = list(dxs) if isinstance(dxs, (list, tuple)) else [dxs]
        if len(dxs) != len(inputs):
            raise ValueError(f"custom_gradient function expected to return {len(inputs)} "
                             f"gradients but returned {len(dxs)} instead.")
        from flowstone.ops import array_ops
        return [array_ops.zeros_like(x) if g is None else g for g, x in zip(dxs, inputs)]

    token = script_ops.register_eager_function(gradient, [x.dtype for x in inputs])
    with _holders_lock:
        _holders[token] += len(tapes)
    for tape in tapes:
        tape._hold_custom_gradient(token, _release)
    node = _ops.apply_op("EagerCustomGradient", [basic_ops.constant(token), inputs, outputs],
                         {"Tin": [x.dtype for x in inputs], "Tout": [y.dtype for y in outputs]},
                         name="EagerCustomGradient")
    return nest.pack_sequence_as(result, list(node.outputs))


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
            return _eager_call(f, args)
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
