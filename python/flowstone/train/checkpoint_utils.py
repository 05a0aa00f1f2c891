"""tf.train.init_from_checkpoint: variables whose initializers load checkpoint values."""

from flowstone.framework import ops as _ops
from flowstone.ops import variables as _variables
from flowstone.train import saver as _saver
from flowstone.util.tf_export import tf_export


def _variables_by_name():
    return {var.op.name: var for var in _variables.global_variables()}


def _assignments(reader, assignment_map):
    """[(checkpoint key, Variable)] that `assignment_map` asks for, with TensorFlow's rules: a
    key naming a tensor maps to a variable (or its name); a key ending in "/" maps a scope of the
    checkpoint onto a scope of variables ("/" alone is the root on either side)."""
    stored = reader.get_variable_to_shape_map()
    by_name = _variables_by_name()
    pairs = []
    for ckpt_name, target in assignment_map.items():
        if not ckpt_name.endswith("/"):
            if ckpt_name not in stored:
                raise ValueError(f"Tensor {ckpt_name} is not found in {reader._path} checkpoint "
                                 f"{sorted(stored)}")
            if isinstance(target, _variables.Variable):
                pairs.append((ckpt_name, target))
                continue
            if target not in by_name:
                raise ValueError(f"Tensor {target} is not found in the graph's variables.")
            pairs.append((ckpt_name, by_name[target]))
            continue
        if not isinstance(target, str) or not target.endswith("/"):
            raise ValueError(f"Assignment map with scope only name {ckpt_name} should map to "
                             f"scope only {target}. Should be 'scope/': 'other_scope/'.")
        ckpt_scope = "" if ckpt_name == "/" else ckpt_name
        var_scope = "" if target == "/" else target
        for var_name, var in sorted(by_name.items()):
            if not var_name.startswith(var_scope):
                continue
            key = ckpt_scope + var_name[len(var_scope):]
            if key in stored:
                pairs.append((key, var))
    return pairs


@tf_export("train.init_from_checkpoint")
def init_from_checkpoint(ckpt_dir_or_file, assignment_map):
    """Replaces the initializers of the mapped variables so that running them loads values from
    the checkpoint (a file prefix, or a directory's newest checkpoint). The values are read now
    and held by the graph as constants (TensorFlow reads them when the initializer runs)."""
    reader = _saver.load_checkpoint(ckpt_dir_or_file)
    for key, var in _assignments(reader, dict(assignment_map)):
        value = reader.get_tensor(key)
        if not var.shape.is_compatible_with(value.shape):
            raise ValueError(f"Shape of variable {var.op.name} ({var.shape}) doesn't match with "
                             f"shape of tensor {key} ({list(value.shape)}) from checkpoint "
                             "reader.")
        graph = var.graph
        with graph.as_default(), _ops.init_scope(), graph.name_scope(var.op.name + "/"):
            with graph.name_scope("checkpoint_initializer"):
                initial = _ops.convert_to_tensor(value, dtype=var.dtype, name="value")
            var._initializer_op = _ops.apply_op(
                "AssignVariableOp", [var.handle, initial], {"dtype": var.dtype},
                name="checkpoint_initializer")
            var._initial_value = initial
