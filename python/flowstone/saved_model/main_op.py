"""tf.saved_model.main_op: the op a SavedModel runs after loading its variables (local
variables and tables initialized), and that op after a restore op."""

from flowstone.framework import ops as _ops
from flowstone.ops import basic_ops, variables
from flowstone.ops.lookup_initializers import tables_initializer
from flowstone.util.tf_export import tf_export


@tf_export("saved_model.main_op.main_op")
def main_op():
    """One op initializing the local variables and the tables."""
    return basic_ops.group(variables.local_variables_initializer(), tables_initializer())


@tf_export("saved_model.main_op.main_op_with_restore", "saved_model.main_op_with_restore")
def main_op_with_restore(restore_op_name):
    """main_op(), then the restore op `restore_op_name` (a Saver's restore op, or its name)."""
    if isinstance(restore_op_name, str):
        restore_op_name = _ops.get_default_graph().as_graph_element(restore_op_name)
    with _ops.control_dependencies([main_op()]):
        return basic_ops.group(restore_op_name)
