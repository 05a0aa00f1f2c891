"""TF1's variable utilities around tf.Variable: the aggregation and synchronization enums,
resource-variable switches, and TF1's deprecated aliases for variable lists, initializers and
scopes."""

import contextlib
import enum

from flowstone.framework import ops as _ops
from flowstone.ops import variable_scope as _variable_scope
from flowstone.ops import variables as _variables
from flowstone.util.tf_export import tf_export


@tf_export("VariableSynchronization")
class VariableSynchronization(enum.Enum):
    """When a distributed variable is synchronized (accepted by tf.get_variable; Flowstone
    variables live in one place, so every value behaves as AUTO)."""
    AUTO = 0
    NONE = 1
    ON_WRITE = 2
    ON_READ = 3


@tf_export("VariableAggregation")
class VariableAggregation(enum.Enum):
    """How updates from replicas combine (accepted by tf.get_variable; one replica here)."""
    NONE = 0
    SUM = 1
    MEAN = 2
    ONLY_FIRST_REPLICA = 3


@tf_export("resource_variables_enabled")
def resource_variables_enabled():
    """Always True: every Flowstone variable is a resource variable."""
    return True


@tf_export("enable_resource_variables")
def enable_resource_variables():
    """Resource variables are always on."""


@tf_export("disable_resource_variables")
def disable_resource_variables():
    """Accepted for TF1 programs; variables stay resource variables (see docs/COMPAT.md)."""


@tf_export("variable_creator_scope")
@contextlib.contextmanager
def variable_creator_scope(variable_creator):
    """Routes tf.Variable construction in the block through
    `variable_creator(next_creator, **kwargs)`, which may change the arguments, call
    `next_creator(**kwargs)` or return a variable of its own."""
    ctx = _ops.get_default_graph()._ctx()
    old = ctx.variable_creators
    ctx.variable_creators = old + [variable_creator]
    try:
        yield
    finally:
        ctx.variable_creators = old


@tf_export("moving_average_variables")
def moving_average_variables(scope=None):
    """The variables in MOVING_AVERAGE_VARIABLES (filled by ExponentialMovingAverage)."""
    return _ops.get_collection(_ops.GraphKeys.MOVING_AVERAGE_VARIABLES, scope)


@tf_export("all_variables")
def all_variables():
    """Deprecated TF1 name of tf.global_variables()."""
    return _variables.global_variables()


@tf_export("initialize_variables")
def initialize_variables(var_list, name="init"):
    """Deprecated TF1 name of tf.variables_initializer()."""
    return _variables.variables_initializer(var_list, name=name)


@tf_export("initialize_local_variables")
def initialize_local_variables():
    """Deprecated TF1 name of tf.local_variables_initializer()."""
    return _variables.local_variables_initializer()


@tf_export("op_scope")
def op_scope(values, name, default_name=None):
    """Deprecated TF1 form of tf.name_scope(name, default_name, values)."""
    return _ops.name_scope(name, default_name, values)


@tf_export("variable_op_scope")
def variable_op_scope(values, name_or_scope, default_name=None, initializer=None,
                      regularizer=None, caching_device=None, partitioner=None,
                      custom_getter=None, reuse=None, dtype=None, use_resource=None,
                      constraint=None):
    """Deprecated TF1 form of tf.variable_scope with `values` first."""
    return _variable_scope.variable_scope(
        name_or_scope, default_name=default_name, values=values, initializer=initializer,
        regularizer=regularizer, caching_device=caching_device, partitioner=partitioner,
        custom_getter=custom_getter, reuse=reuse, dtype=dtype, use_resource=use_resource,
        constraint=constraint)



@tf_export("fixed_size_partitioner")
def fixed_size_partitioner(num_shards, axis=0):
    """A partitioner that splits `axis` into `num_shards` parts. Flowstone accepts partitioners
    but keeps each variable whole (see docs/COMPAT.md)."""

    def partitioner(shape, **unused_args):
        partitions = [1] * len(shape)
        partitions[axis] = min(num_shards, shape[axis])
        return partitions

    return partitioner
