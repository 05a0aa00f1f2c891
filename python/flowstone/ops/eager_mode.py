"""Switching eager execution on: tf.enable_eager_execution, tf.executing_eagerly and TF2's
enable_v2_behavior. Graph mode stays the default (Flowstone is TF1-first)."""

from flowstone import _C
from flowstone.framework import context as _context
from flowstone.framework import eager as _eager  # noqa: F401 - installs the eager executor
from flowstone.framework import ops as _ops
from flowstone.framework import tensor_shape as _tensor_shape
from flowstone.util.tf_export import tf_export


@tf_export("enable_eager_execution", "contrib.eager.enable_eager_execution")
def enable_eager_execution(config=None, device_policy=None, execution_mode=None):
    """Runs ops at once from now on. Must come before any graph op is built, as in TensorFlow."""
    if _context.state.enabled:
        return
    graph = _ops._global_default_graph
    if graph is not None and graph.get_operations():
        raise ValueError("tf.enable_eager_execution must be called at program startup.")
    _context.state.enabled = True


@tf_export("enable_v2_behavior")
def enable_v2_behavior():
    """TF2's behaviour, as far as Flowstone has it: eager execution and TensorShapes that index
    to ints."""
    _tensor_shape.enable_v2_tensorshape()
    enable_eager_execution()


@tf_export("disable_eager_execution")
def disable_eager_execution():
    """Back to graph mode (the default)."""
    _context.state.enabled = False


@tf_export("disable_v2_behavior")
def disable_v2_behavior():
    """Back to TF1 behaviour: graph mode, and TensorShapes that index to Dimension objects."""
    _tensor_shape.disable_v2_tensorshape()
    disable_eager_execution()


@tf_export("executing_eagerly", "contrib.eager.in_eager_mode",
           "contrib.eager.executing_eagerly")
def executing_eagerly():
    """Whether ops run at once here (False while a graph or a tf.function is being built)."""
    return _ops.executing_eagerly()


@tf_export("executing_eagerly_outside_functions")
def executing_eagerly_outside_functions():
    """Whether ops outside any tf.function being traced run eagerly (eager mode is on)."""
    return _context.state.enabled


@tf_export("contrib.eager.num_gpus")
def num_gpus():
    """How many GPUs eager ops can run on."""
    return sum(1 for _, device_type, _ in _C.eager_devices() if device_type == "GPU")


@tf_export("contrib.eager.in_graph_mode")
def in_graph_mode():
    return not _ops.executing_eagerly()


_log_device_placement = False


@tf_export("debugging.set_log_device_placement")
def set_log_device_placement(enabled):
    """Logs the device of each op run eagerly ("AddV2: (AddV2): /job:localhost/.../CPU:0" on
    stderr). Sessions log their placements with ConfigProto(log_device_placement=True)."""
    global _log_device_placement
    _log_device_placement = bool(enabled)
    _C.eager_set_log_device_placement(_log_device_placement)


@tf_export("debugging.get_log_device_placement")
def get_log_device_placement():
    """Whether set_log_device_placement turned the eager placement log on."""
    return _log_device_placement
