"""tf.estimator.WarmStartSettings: a new model's trainable variables initialized from another
model's checkpoint."""

import os

import flowstone as tf
from flowstone.util.tf_export import export_value, tf_export

# tf.estimator.VocabInfo is tf.train.VocabInfo, as in TensorFlow.
export_value("estimator.VocabInfo", tf.train.VocabInfo)


@tf_export("estimator.WarmStartSettings")
class WarmStartSettings:
    """Where a new model's variables start from: tf.train.warm_start's arguments, applied when
    the Estimator builds its training graph without a checkpoint of its own."""

    def __init__(self, ckpt_to_initialize_from, vars_to_warm_start=".*",
                 var_name_to_vocab_info=None, var_name_to_prev_var_name=None):
        self.ckpt_to_initialize_from = os.fspath(ckpt_to_initialize_from)
        self.vars_to_warm_start = vars_to_warm_start
        self.var_name_to_vocab_info = dict(var_name_to_vocab_info or {})
        self.var_name_to_prev_var_name = dict(var_name_to_prev_var_name or {})

    def apply(self):
        """Replaces the initializers of the default graph's chosen variables."""
        tf.train.warm_start(self.ckpt_to_initialize_from, self.vars_to_warm_start,
                            self.var_name_to_vocab_info, self.var_name_to_prev_var_name)


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
