"""tf.tables_initializer: one op running the initializers of the lookup tables built so far
(those in GraphKeys.TABLE_INITIALIZERS), and tf.is_symbolic_tensor."""

from flowstone.framework import eager as _eager
from flowstone.framework import ops as _ops
from flowstone.ops import basic_ops
from flowstone.util.tf_export import tf_export


@tf_export("tables_initializer", "initialize_all_tables", "initializers.tables_initializer")
def tables_initializer(name="init_all_tables"):
    """A group of the table initializers of the default graph, or a no_op when there are none."""
    initializers = _ops.get_collection(_ops.GraphKeys.TABLE_INITIALIZERS)
    if initializers:
        return basic_ops.group(*initializers, name=name)
    return basic_ops.no_op(name=name)


@tf_export("is_symbolic_tensor")
def is_symbolic_tensor(tensor):
    """Whether `tensor` is a graph tensor (not an eager tensor, a Python or numpy value, nor a
    variable)."""
    return isinstance(tensor, _ops.Tensor) and not isinstance(tensor, _eager.EagerTensor)
