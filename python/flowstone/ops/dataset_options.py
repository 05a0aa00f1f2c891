"""tf.data.Options: the options a pipeline carries (Dataset.with_options / options()), with
TensorFlow's fields, nesting, merging and errors. Flowstone's pipelines are deterministic and run
on the session's pools whatever the options say: they are recorded and returned, as hints
TensorFlow itself may ignore."""

import logging

from flowstone.util.tf_export import export_value, tf_export

_logger = logging.getLogger(__name__)

export_value("data.INFINITE_CARDINALITY", -1)
export_value("data.UNKNOWN_CARDINALITY", -2)


class _OptionsGroup:
    """A fixed set of option fields, each None (unset) until assigned."""

    _FIELDS = ()
    _GROUPS = {}  # field -> nested group class
    _ALIASES = {}  # TensorFlow's older names -> field

    def __init__(self):
        for field in self._FIELDS:
            object.__setattr__(self, field, None)
        for field, group in self._GROUPS.items():
            object.__setattr__(self, field, group())

    def __getattr__(self, name):
        if name in self._ALIASES:
            return getattr(self, self._ALIASES[name])
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        name = self._ALIASES.get(name, name)
        if name in self._GROUPS:
            if not isinstance(value, self._GROUPS[name]):
                raise TypeError(f"{name} must be a {self._GROUPS[name].__name__}, got "
                                f"{type(value).__name__}")
        elif name not in self._FIELDS:
            raise AttributeError(f"Cannot set the property {name} on {type(self).__name__}.")
        object.__setattr__(self, name, value)

    def __eq__(self, other):
        return type(self) is type(other) and all(
            getattr(self, f) == getattr(other, f) for f in (*self._FIELDS, *self._GROUPS))

    def _merged(self, other):
        """A copy of self with the fields `other` sets, TensorFlow's warning for each change."""
        result = type(self)()
        for field in self._FIELDS:
            mine, theirs = getattr(self, field), getattr(other, field)
            if mine is not None and theirs is not None and mine != theirs:
                _logger.warning("Changing the value of option %s from %r to %r.", field, mine,
                                theirs)
            object.__setattr__(result, field, theirs if theirs is not None else mine)
        for field in self._GROUPS:
            object.__setattr__(result, field, getattr(self, field)._merged(getattr(other, field)))
        return result


@tf_export("data.ThreadingOptions", "data.experimental.ThreadingOptions")
class ThreadingOptions(_OptionsGroup):
    _FIELDS = ("max_intra_op_parallelism", "private_threadpool_size")


@tf_export("data.experimental.OptimizationOptions")
class OptimizationOptions(_OptionsGroup):
    _FIELDS = ("apply_default_optimizations", "filter_fusion", "filter_parallelization",
               "inject_prefetch", "map_and_batch_fusion", "map_and_filter_fusion", "map_fusion",
               "map_parallelization", "noop_elimination", "parallel_batch",
               "seq_interleave_prefetch", "shuffle_and_repeat_fusion")


@tf_export("data.experimental.DistributeOptions")
class DistributeOptions(_OptionsGroup):
    _FIELDS = ("auto_shard_policy", "num_devices")


@tf_export("data.experimental.AutotuneOptions")
class AutotuneOptions(_OptionsGroup):
    _FIELDS = ("enabled", "cpu_budget", "ram_budget", "autotune_algorithm")


@tf_export("data.Options")
class Options(_OptionsGroup):
    """Options of a tf.data pipeline: `options.deterministic = False`,
    `options.threading.private_threadpool_size = 4`, then `dataset.with_options(options)`."""

    _FIELDS = ("deterministic", "experimental_external_state_policy", "experimental_slack",
               "experimental_warm_start", "experimental_symbolic_checkpoint", "dataset_name",
               "framework_type")
    _GROUPS = {"threading": ThreadingOptions, "experimental_optimization": OptimizationOptions,
               "experimental_distribute": DistributeOptions, "autotune": AutotuneOptions}
    _ALIASES = {"experimental_deterministic": "deterministic",
                "experimental_threading": "threading"}

    def merge(self, options):
        """These options with those `options` sets taking precedence."""
        if not isinstance(options, Options):
            raise TypeError(f"options must be a tf.data.Options, got {type(options).__name__}")
        return self._merged(options)
