"""tf.estimator.WarmStartSettings: a new model's trainable variables initialized from another
model's checkpoint."""

import os
import re

import flowstone as tf
from flowstone.util.tf_export import tf_export


@tf_export("estimator.WarmStartSettings")
class WarmStartSettings:
    """Where a new model's variables start from: the variables matching `vars_to_warm_start`
    (a regex or a list of names) take their values from `ckpt_to_initialize_from`."""

    def __init__(self, ckpt_to_initialize_from, vars_to_warm_start=".*",
                 var_name_to_vocab_info=None, var_name_to_prev_var_name=None):
        if var_name_to_vocab_info:
            raise NotImplementedError("WarmStartSettings(var_name_to_vocab_info=...) is not "
                                      "supported.")
        self.ckpt_to_initialize_from = os.fspath(ckpt_to_initialize_from)
        self.vars_to_warm_start = vars_to_warm_start
        self.var_name_to_prev_var_name = dict(var_name_to_prev_var_name or {})

    def apply(self):
        """Adds the restoring initializers to the default graph's matching variables."""
        pattern = self.vars_to_warm_start
        in_checkpoint = {name for name, _ in tf.train.list_variables(
            self.ckpt_to_initialize_from)}
        assignment = {}
        for variable in tf.trainable_variables():
            name = variable.op.name
            if isinstance(pattern, str):
                wanted = re.match(pattern, name) is not None
            else:
                wanted = name in (pattern or ())
            previous = self.var_name_to_prev_var_name.get(name, name)
            if wanted and previous in in_checkpoint:
                assignment[previous] = variable
        tf.logging.info("Warm-starting %d variables from %s.", len(assignment),
                        self.ckpt_to_initialize_from)
        if assignment:
            tf.train.init_from_checkpoint(self.ckpt_to_initialize_from, assignment)


def warm_start_settings(warm_start_from):
    """WarmStartSettings from an Estimator's warm_start_from (a path or settings), or None."""
    if warm_start_from is None:
        return None
    if isinstance(warm_start_from, WarmStartSettings):
        return warm_start_from
    if isinstance(warm_start_from, (str, bytes, os.PathLike)):
        return WarmStartSettings(os.fsdecode(warm_start_from))
    raise ValueError(f"warm_start_from must be a string or a WarmStartSettings, instead got "
                     f"{type(warm_start_from)}")
