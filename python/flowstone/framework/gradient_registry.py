"""Gradient functions written in Python: tf.RegisterGradient and tf.NotDifferentiable.

Built-in ops have their gradients in C++. A Python gradient is used for an op created under
`Graph.gradient_override_map({"OpType": "Name"})` with `@tf.RegisterGradient("Name")`, which is
how TF1 programs give tf.py_func (or any op) a custom gradient. tf.gradients calls them back from
the C++ gradient builder (flowstone/ops/gradients.py)."""

import traceback

from flowstone.util.tf_export import tf_export

_registry = {}  # name -> (function or None, where it was registered)


@tf_export("RegisterGradient")
class RegisterGradient:
    """Decorator registering `fn(op, *grads) -> grads for op.inputs` under `op_type`:

        @tf.RegisterGradient("MySquareGrad")
        def _my_square_grad(op, grad):
            return 2.0 * op.inputs[0] * grad
    """

    def __init__(self, op_type):
        if not isinstance(op_type, str):
            raise TypeError("op_type must be a string")
        self._op_type = op_type

    def __call__(self, fn):
        _register(self._op_type, fn)
        return fn


@tf_export("NotDifferentiable", "no_gradient")
def NotDifferentiable(op_type):  # noqa: N802 - TensorFlow's name
    """Registers `op_type` as having no gradient (its inputs get None)."""
    if not isinstance(op_type, str):
        raise TypeError("op_type must be a string")
    _register(op_type, None)


def _register(name, fn):
    if name in _registry:
        raise KeyError(f"Registering two gradient with name '{name}'! (Previous registration was "
                       f"in {_registry[name][1]})")
    site = traceback.extract_stack(limit=3)[0]
    _registry[name] = (fn, f"{site.name} {site.filename}:{site.lineno}")


def lookup(name):
    """(True, fn or None) when `name` is registered, else (False, None)."""
    if name not in _registry:
        return False, None
    return True, _registry[name][0]
