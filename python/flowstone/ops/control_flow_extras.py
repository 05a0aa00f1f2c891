"""TF1's control-flow helpers beyond cond/case/while_loop: switch_case, grad_pass_through,
guarantee_const and the control-flow-v2 switches (Flowstone's control flow is always the
functional, "v2", kind)."""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.ops import basic_ops, control_flow_ops, gradients, math_ops
from flowstone.platform import tf_logging as logging
from flowstone.util.tf_export import tf_export


@tf_export("switch_case")
def switch_case(branch_index, branch_fns, default=None, name="switch_case"):
    """Runs branch_fns[branch_index] (a list, or a dict of int keys 0..n-1, of callables); an
    index out of range runs `default`, or the last branch when there is none."""
    if isinstance(branch_fns, dict):
        keys = sorted(branch_fns)
        if keys != list(range(len(keys))):
            raise ValueError(f"branch_fns keys must be the integers 0..n-1, got {keys}")
        branch_fns = [branch_fns[k] for k in keys]
    branch_fns = list(branch_fns)
    if not branch_fns:
        raise ValueError("Must provide at least one item in branch_fns")
    for fn in branch_fns + ([default] if default is not None else []):
        if not callable(fn):
            raise TypeError(f"fn for branch must be callable, got {fn!r}")
    with _ops.name_scope(name, "switch_case"):
        index = _ops.convert_to_tensor(branch_index, name="branch_index")
        if index.dtype != _dtypes.int32:
            raise TypeError(f"branch_index must be an int32 Tensor, got {index.dtype!r}")
        fallback = default if default is not None else branch_fns[-1]
        pairs = [(math_ops.equal(index, i), fn) for i, fn in enumerate(branch_fns)]
        return control_flow_ops.case(pairs, default=fallback, exclusive=True)


@tf_export("grad_pass_through")
def grad_pass_through(f):
    """Wraps f(x) so that its value is f's but its gradient with respect to x is the identity
    (x + stop_gradient(f(x) - x))."""
    def wrapped(x):
        x = _ops.convert_to_tensor(x)
        y = f(x)
        return math_ops.add(x, gradients.stop_gradient(math_ops.subtract(y, x)))
    return wrapped


@tf_export("guarantee_const")
def guarantee_const(input, name=None):  # noqa: A002 - TensorFlow's name
    """`input` itself: a promise that it is constant, which only an XLA-style compiler uses."""
    return basic_ops.identity(input, name=name or "GuaranteeConst")


@tf_export("enable_control_flow_v2")
def enable_control_flow_v2():
    """Control flow is always functional (If/While ops) here; nothing to switch."""


@tf_export("disable_control_flow_v2")
def disable_control_flow_v2():
    """TensorFlow 1's Switch/Merge control flow does not exist here: loops and conds stay
    functional, with the same results (see docs/COMPAT.md)."""
    logging.warning("disable_control_flow_v2: Flowstone has only functional control flow; "
                    "tf.cond and tf.while_loop keep building If and While ops.")


@tf_export("control_flow_v2_enabled")
def control_flow_v2_enabled():
    return True
