"""TF1.x's tf.contrib.eager helpers over tf.GradientTape: implicit_gradients and
implicit_value_and_gradients (gradients with respect to the trainable variables a function
reads), gradients_function and value_and_gradients_function (with respect to its arguments)."""

from flowstone.framework import ops as _ops
from flowstone.ops import variables as _variables
from flowstone.ops.gradient_tape import GradientTape
from flowstone.util.tf_export import export_value, tf_export

export_value("contrib.eager.Variable", _variables.Variable)


@tf_export("contrib.eager.implicit_value_and_gradients")
def implicit_value_and_gradients(f):
    """A function returning f's value and [(gradient, variable)] for the trainable variables
    f read."""

    def grad_fn(*args, **kwds):
        with GradientTape() as tape:
            value = f(*args, **kwds)
        variables = [v for v in tape.watched_variables() if v.trainable]
        if not variables:
            raise ValueError("No trainable variables were accessed while the function was "
                             "being computed.")
        grads = tape.gradient(value, variables)
        return value, list(zip(grads, variables))

    return grad_fn


@tf_export("contrib.eager.implicit_gradients")
def implicit_gradients(f):
    """A function returning [(gradient, variable)] for the trainable variables f read."""

    def grad_fn(*args, **kwds):
        return implicit_value_and_gradients(f)(*args, **kwds)[1]

    return grad_fn


@tf_export("contrib.eager.value_and_gradients_function")
def val_and_grad_function(f, params=None):
    """A function returning f's value and its gradients with respect to the arguments at the
    positions `params` (all by default); a `dy` keyword weights the output."""

    def decorated(*args, **kwds):
        dy = kwds.pop("dy", None)
        if kwds:
            raise ValueError("Functions to be differentiated cannot receive keyword arguments.")
        args = [_ops.convert_to_tensor(a) for a in args]
        positions = range(len(args)) if params is None else params
        with GradientTape() as tape:
            for i in positions:
                tape.watch(args[i])
            value = f(*args)
        grads = tape.gradient(value, [args[i] for i in positions], output_gradients=dy)
        return value, grads

    return decorated


@tf_export("contrib.eager.gradients_function")
def gradients_function(f, params=None):
    """A function returning f's gradients with respect to its arguments (see
    value_and_gradients_function)."""

    def decorated(*args, **kwds):
        return val_and_grad_function(f, params)(*args, **kwds)[1]

    return decorated
