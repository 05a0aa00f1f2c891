"""TF1's names around tf.gradients: the aggregation and unconnected-gradient options, the
NoGradient alias, tf.hessians and tf.OpError at the top level."""

import enum

from flowstone import errors
from flowstone.framework import ops as _ops
from flowstone.framework.gradient_registry import NotDifferentiable
from flowstone.ops import array_ops, gradients as _gradients
from flowstone.util.tf_export import export_value, tf_export

export_value("NoGradient", NotDifferentiable)
export_value("OpError", errors.OpError)


@tf_export("AggregationMethod")
class AggregationMethod:
    """How tf.gradients sums the gradients reaching one tensor. Flowstone always adds them with
    one AddN (ADD_N); the experimental methods give the same sums."""

    ADD_N = 0
    DEFAULT = ADD_N
    EXPERIMENTAL_TREE = 1
    EXPERIMENTAL_ACCUMULATE_N = 2


@tf_export("UnconnectedGradients")
class UnconnectedGradients(str, enum.Enum):
    """What tf.gradients returns for an x that ys do not depend on: None or zeros."""

    NONE = "none"
    ZERO = "zero"


@tf_export("hessians")
def hessians(ys, xs, name="hessians", colocate_gradients_with_ops=False, gate_gradients=False,
             aggregation_method=None):
    """For each x of xs, the Hessian of sum(ys) with respect to x, of shape x.shape + x.shape.
    Each x needs a fully known static shape (its Hessian is built one row at a time)."""
    xs = xs if isinstance(xs, (list, tuple)) else [xs]
    results = []
    with _ops.name_scope(name):
        for x in xs:
            shape = x.shape
            if not shape.is_fully_defined():
                raise ValueError(f"tf.hessians needs a fully defined shape for {x.name}; got "
                                 f"{shape}")
            (grad,) = _gradients.gradients(ys, [x], aggregation_method=aggregation_method)
            if grad is None:
                results.append(None)
                continue
            flat = array_ops.reshape(grad, [-1])
            rows = []
            for i in range(shape.num_elements()):
                (row,) = _gradients.gradients(flat[i], [x],
                                              unconnected_gradients=UnconnectedGradients.ZERO)
                rows.append(row)
            results.append(array_ops.reshape(array_ops.stack(rows),
                                             shape.as_list() + shape.as_list()))
    return results
