"""tf.contrib.framework's variable helpers: model variables, variables by scope and name,
the variables to restore, and restoring them from a checkpoint."""

from flowstone.contrib.framework.arg_scope import add_arg_scope
from flowstone.framework import ops as _ops
from flowstone.ops import variable_scope as _vs
from flowstone.train import optimizer as _optimizer
from flowstone.train import saver as _saver

GraphKeys = _ops.GraphKeys
get_global_step = _optimizer.get_global_step
create_global_step = _optimizer.create_global_step
get_or_create_global_step = _optimizer.get_or_create_global_step


@add_arg_scope
def variable(name, shape=None, dtype=None, initializer=None, regularizer=None, trainable=True,
             collections=None, caching_device=None, device=None, partitioner=None,
             custom_getter=None, use_resource=None):
    """tf.get_variable with `collections` (default tf.GraphKeys.GLOBAL_VARIABLES) and an
    optional `device`."""
    collections = list(dict.fromkeys(collections or [GraphKeys.GLOBAL_VARIABLES]))
    with _ops.device(device or ""):
        return _vs.get_variable(name, shape=shape, dtype=dtype, initializer=initializer,
                                regularizer=regularizer, trainable=trainable,
                                collections=collections, caching_device=caching_device,
                                partitioner=partitioner, custom_getter=custom_getter,
                                use_resource=use_resource)


@add_arg_scope
def model_variable(name, shape=None, dtype=None, initializer=None, regularizer=None,
                   trainable=True, collections=None, caching_device=None, device=None,
                   partitioner=None, custom_getter=None, use_resource=None):
    """A variable that is also in tf.GraphKeys.MODEL_VARIABLES (what a model is made of, as
    opposed to optimizer slots and counters)."""
    collections = list(collections or []) + [GraphKeys.GLOBAL_VARIABLES,
                                             GraphKeys.MODEL_VARIABLES]
    return variable(name, shape=shape, dtype=dtype, initializer=initializer,
                    regularizer=regularizer, trainable=trainable, collections=collections,
                    caching_device=caching_device, device=device, partitioner=partitioner,
                    custom_getter=custom_getter, use_resource=use_resource)


def model_variable_collections(variables_collections, name):
    """The collections of model variable `name` of a contrib layer: the layer's
    `variables_collections` (a list, or a dict by variable name) plus GLOBAL_VARIABLES and
    MODEL_VARIABLES."""
    if isinstance(variables_collections, dict):
        extra = variables_collections.get(name) or []
    else:
        extra = variables_collections or []
    return list(dict.fromkeys(list(extra) + [GraphKeys.GLOBAL_VARIABLES,
                                            GraphKeys.MODEL_VARIABLES]))


def get_variables(scope=None, suffix=None, collection=GraphKeys.GLOBAL_VARIABLES):
    """The variables of `collection` whose names start with `scope` (a string or a
    VariableScope) and, when given, contain `suffix` after it."""
    if isinstance(scope, _vs.VariableScope):
        scope = scope.name
    if suffix is not None:
        scope = (scope or "") + ".*" + suffix
    return _ops.get_collection(collection, scope)


def get_model_variables(scope=None, suffix=None):
    return get_variables(scope, suffix, GraphKeys.MODEL_VARIABLES)


def get_local_variables(scope=None, suffix=None):
    return get_variables(scope, suffix, GraphKeys.LOCAL_VARIABLES)


def get_trainable_variables(scope=None, suffix=None):
    return get_variables(scope, suffix, GraphKeys.TRAINABLE_VARIABLES)


def get_variables_by_name(given_name, scope=None):
    """The variables whose names contain `given_name` (below `scope`)."""
    return get_variables(scope=scope, suffix=given_name)


def get_variables_by_suffix(suffix, scope=None):
    return get_variables(scope=scope, suffix=suffix)


def get_unique_variable(var_op_name):
    """The one variable whose op is named `var_op_name`."""
    candidates = get_variables(scope=var_op_name)
    if not candidates:
        raise ValueError(f"Couldn't find variable {var_op_name}")
    for candidate in candidates:
        if candidate.op.name == var_op_name:
            return candidate
    raise ValueError(f"Variable {var_op_name} does not uniquely identify a variable")


def _scopes(argument, name):
    if argument is not None and not isinstance(argument, (list, tuple)):
        raise TypeError(f"{name} is provided but is not a list or a tuple.")
    return argument


def get_variables_to_restore(include=None, exclude=None):
    """The global variables below the scopes in `include` (all when None), less those below
    the scopes in `exclude`: the var_list of a Saver restoring part of a model."""
    include = _scopes(include, "include")
    exclude = _scopes(exclude, "exclude") or []
    if include is None:
        candidates = get_variables()
    else:
        candidates = [v for scope in include for v in get_variables(scope)]
    excluded = {id(v) for scope in exclude for v in get_variables(scope)}
    return [v for v in candidates if id(v) not in excluded]


def assign_from_checkpoint_fn(model_path, var_list, ignore_missing_vars=False,
                              reshape_variables=False):
    """A function of a session that restores `var_list` (a list, or a dict of checkpoint names
    to variables) from the checkpoint `model_path`. With ignore_missing_vars, variables the
    checkpoint lacks are left out (None when none is left)."""
    if not var_list:
        raise ValueError("var_list cannot be empty")
    if ignore_missing_vars:
        reader = _saver.NewCheckpointReader(model_path)
        if isinstance(var_list, dict):
            var_list = {name: v for name, v in var_list.items() if reader.has_tensor(name)}
        else:
            var_list = [v for v in var_list if reader.has_tensor(v.op.name)]
        if not var_list:
            from flowstone.platform import tf_logging
            tf_logging.warning("No Variables to restore")
            return None
    saver = _saver.Saver(var_list, reshape=reshape_variables)

    def callback(session):
        saver.restore(session, model_path)

    return callback
