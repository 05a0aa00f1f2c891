"""tf.train.warm_start and tf.train.VocabInfo: a new model's variables initialized from another
model's checkpoint, renamed, and with vocabulary-indexed rows (or columns) remapped from the old
vocabulary to the new one. tf.estimator.WarmStartSettings applies the same function."""

import collections
import re

import numpy as np

from flowstone.framework import ops as _ops
from flowstone.platform import tf_logging as logging
from flowstone.train import saver as _saver
from flowstone.util.tf_export import tf_export


@tf_export("train.VocabInfo")
class VocabInfo(collections.namedtuple("VocabInfo", [
        "new_vocab", "new_vocab_size", "num_oov_buckets", "old_vocab", "old_vocab_size",
        "backup_initializer", "axis"])):
    """How a vocabulary-indexed variable maps from an old vocabulary file to a new one: row (axis
    0) or column (axis 1) i of the new variable takes the old one's row or column of the same
    word; words the old vocabulary lacks and the `num_oov_buckets` extra rows take the
    `backup_initializer`'s values (zeros by default)."""

    def __new__(cls, new_vocab, new_vocab_size, num_oov_buckets, old_vocab, old_vocab_size=-1,
                backup_initializer=None, axis=0):
        if axis not in (0, 1):
            raise ValueError(f"The only supported values for the axis argument are 0 and 1.  "
                             f"Provided axis: {axis}")
        return super().__new__(cls, new_vocab, new_vocab_size, num_oov_buckets, old_vocab,
                               old_vocab_size, backup_initializer, axis)


def _read_vocab(path, size):
    with open(path, "rb") as f:
        words = [line.rstrip(b"\r\n") for line in f]
    return words if size is None or size < 0 else words[:size]


def _variables_to_warm_start(vars_to_warm_start):
    """TensorFlow's selection: a regex over the trainable variables, a list of regexes over the
    global variables, a list of variables, or None (no variables but the vocab-remapped ones)."""
    if vars_to_warm_start is None:
        return []
    if isinstance(vars_to_warm_start, str):
        return _ops.get_collection(_ops.GraphKeys.TRAINABLE_VARIABLES, scope=vars_to_warm_start)
    if isinstance(vars_to_warm_start, (list, tuple)):
        if all(isinstance(v, str) for v in vars_to_warm_start):
            chosen = []
            for pattern in vars_to_warm_start:
                for var in _ops.get_collection(_ops.GraphKeys.GLOBAL_VARIABLES, scope=pattern):
                    if var not in chosen:
                        chosen.append(var)
            return chosen
        if all(hasattr(v, "op") for v in vars_to_warm_start):
            return list(vars_to_warm_start)
    raise ValueError("vars_to_warm_start must be a string, a list of strings or a list of "
                     f"Variables, or None; got {vars_to_warm_start!r}")


def _remapped_initial_value(var, old_value, vocab_info):
    """The graph value of `var` with rows (columns) moved from old to new vocabulary ids."""
    axis = vocab_info.axis
    new_vocab = _read_vocab(vocab_info.new_vocab, vocab_info.new_vocab_size)
    old_vocab = _read_vocab(vocab_info.old_vocab, vocab_info.old_vocab_size)
    old_ids = {word: i for i, word in enumerate(old_vocab)}
    shape = var.shape.as_list()
    expected = len(new_vocab) + vocab_info.num_oov_buckets
    if shape[axis] != expected:
        raise ValueError(f"Variable {var.op.name} has {shape[axis]} entries along axis {axis}, "
                         f"but the new vocabulary {vocab_info.new_vocab} has {len(new_vocab)} "
                         f"words and {vocab_info.num_oov_buckets} OOV buckets ({expected}).")
    if old_value.shape[axis] < len(old_vocab):
        raise ValueError(f"Tensor for {var.op.name} in the checkpoint has "
                         f"{old_value.shape[axis]} entries along axis {axis}, fewer than the "
                         f"old vocabulary's {len(old_vocab)} words.")
    source = np.array([old_ids.get(word, -1) for word in new_vocab]
                      + [-1] * vocab_info.num_oov_buckets, np.int64)
    other = [d for i, d in enumerate(shape) if i != axis]
    if other != [d for i, d in enumerate(old_value.shape) if i != axis]:
        raise ValueError(f"Variable {var.op.name} of shape {shape} cannot take the rows of the "
                         f"checkpoint's tensor of shape {list(old_value.shape)}.")
    from flowstone.ops import init_ops, math_ops
    found = np.take(old_value, np.maximum(source, 0), axis=axis)
    keep_shape = [1, 1]
    keep_shape[axis] = len(source)
    keep = np.reshape(source >= 0, keep_shape) if len(shape) == 2 else (source >= 0)
    initializer = vocab_info.backup_initializer or init_ops.Zeros()
    backup = initializer(shape, dtype=var.dtype.base_dtype)
    return math_ops.where_v2(_ops.constant(keep), _ops.constant(found, dtype=var.dtype),
                              backup)


def _set_initial_value(var, value, ckpt, key):
    graph = var.graph
    with graph.as_default(), _ops.init_scope(), graph.name_scope(var.op.name + "/"):
        with graph.name_scope("warm_start"):
            initial = _ops.convert_to_tensor(value, dtype=var.dtype.base_dtype, name="value")
        var._initializer_op = _ops.apply_op("AssignVariableOp", [var.handle, initial],
                                            {"dtype": var.dtype.base_dtype},
                                            name="warm_start_initializer")
        var._initial_value = initial
    logging.debug("Warm-starting %s from %s in %s", var.op.name, key, ckpt)


@tf_export("train.warm_start")
def warm_start(ckpt_to_initialize_from, vars_to_warm_start=".*", var_name_to_vocab_info=None,
               var_name_to_prev_var_name=None):
    """Replaces the initializers of the chosen variables (and of those in
    `var_name_to_vocab_info`) so that initializing them loads the checkpoint's values, under the
    previous names `var_name_to_prev_var_name` gives, remapped by vocabulary where asked."""
    vocab_infos = dict(var_name_to_vocab_info or {})
    prev_names = dict(var_name_to_prev_var_name or {})
    reader = _saver.load_checkpoint(ckpt_to_initialize_from)
    ckpt = str(ckpt_to_initialize_from)
    chosen = _variables_to_warm_start(vars_to_warm_start)
    by_name = {v.op.name: v for v in _ops.get_collection(_ops.GraphKeys.GLOBAL_VARIABLES)}
    for name in vocab_infos:
        if name in by_name and by_name[name] not in chosen:
            chosen.append(by_name[name])
    used_vocab, used_prev = set(), set()
    for var in chosen:
        name = var.op.name
        key = prev_names.get(name, name)
        if name in prev_names:
            used_prev.add(name)
        if not reader.has_tensor(key):
            raise ValueError(f"Tensor {key} (for variable {name}) is not found in "
                             f"{ckpt} checkpoint")
        old_value = reader.get_tensor(key)
        if name in vocab_infos:
            used_vocab.add(name)
            _set_initial_value(var, _remapped_initial_value(var, old_value, vocab_infos[name]),
                               ckpt, key)
            continue
        if not var.shape.is_compatible_with(old_value.shape):
            raise ValueError(f"Shape of variable {name} ({var.shape}) doesn't match with shape "
                             f"of tensor {key} ({list(old_value.shape)}) from checkpoint reader.")
        _set_initial_value(var, old_value, ckpt, key)
    unused_vocab = sorted(set(vocab_infos) - used_vocab)
    if unused_vocab:
        raise ValueError(f"You provided the following variables in var_name_to_vocab_info that "
                         f"were not used: {unused_vocab}.  Perhaps you misspelled them?  Here "
                         f"is the list of viable variable names: {sorted(by_name)}")
    unused_prev = sorted(set(prev_names) - used_prev)
    if unused_prev:
        raise ValueError(f"You provided the following variables in var_name_to_prev_var_name "
                         f"that were not used: {unused_prev}.  Perhaps you misspelled them?  "
                         f"Here is the list of viable variable names: {sorted(by_name)}")
    logging.info("Warm-started %d variables from %s.", len(chosen), ckpt)
