"""tf.train.ExponentialMovingAverage: shadow variables that follow other variables or tensors."""

from flowstone.framework import ops as _ops
from flowstone.ops import math_ops, variables
from flowstone.util.tf_export import tf_export


@tf_export("train.ExponentialMovingAverage")
class ExponentialMovingAverage:
    """apply(var_list) creates a shadow variable per item and returns an op that moves each
    shadow towards its item: shadow -= (1 - decay) * (shadow - value). With `num_updates`, the
    decay used is min(decay, (1 + num_updates) / (10 + num_updates))."""

    def __init__(self, decay, num_updates=None, zero_debias=False,
                 name="ExponentialMovingAverage"):
        if zero_debias:
            raise NotImplementedError(
                "ExponentialMovingAverage(zero_debias=True) is not supported: averages start "
                "from the variables' initial values (see docs/COMPAT.md)")
        self._decay = decay
        self._num_updates = num_updates
        self._zero_debias = zero_debias
        self._name = name
        self._averages = {}

    @property
    def name(self):
        return self._name

    def apply(self, var_list=None):
        """Creates the shadow variables of `var_list` (default: the trainable variables) and
        returns the op that updates them all."""
        graph = _ops.get_default_graph()
        if var_list is None:
            var_list = variables.trainable_variables()
        var_list = list(var_list)
        for item in var_list:
            if not item.dtype.base_dtype.is_floating:
                raise TypeError("The variables must be half, float, or double: "
                                f"{item.name}")
            if item in self._averages:
                raise ValueError(f"Moving average already computed for: {item.name}")
            self._averages[item] = self._create_shadow(graph, item)
            if isinstance(item, variables.Variable):
                graph.add_to_collection(_ops.GraphKeys.MOVING_AVERAGE_VARIABLES, item)
        with graph.name_scope(self._name) as scope:
            decay = _ops.convert_to_tensor(self._decay, name="decay")
            if self._num_updates is not None:
                num_updates = math_ops.cast(_ops.convert_to_tensor(self._num_updates),
                                            decay.dtype, name="num_updates")
                decay = math_ops.minimum(decay, math_ops.divide(
                    math_ops.add(1.0, num_updates), math_ops.add(10.0, num_updates)))
            updates = []
            for item in var_list:
                shadow = self._averages[item]
                value = item.read_value() if isinstance(item, variables.Variable) else item
                step = math_ops.multiply(
                    math_ops.subtract(1.0, math_ops.cast(decay, shadow.dtype)),
                    math_ops.subtract(shadow.read_value(), value))
                updates.append(shadow.assign_sub(step, read_value=False))
            with graph.control_dependencies(updates):
                # Named after the scope itself, as TensorFlow names it.
                return _ops.apply_op("NoOp", [], name=scope.rstrip("/"), exact_name=True)

    def _create_shadow(self, graph, item):
        """A non-trainable variable named '<item>/<name>', starting at the variable's initial
        value (or at zeros for a tensor)."""
        base = item.op.name
        with graph.name_scope(None), graph.control_dependencies(None):
            if isinstance(item, variables.Variable):
                initial = item.initialized_value()
            else:
                from flowstone.ops import array_ops
                initial = array_ops.zeros_like(item)
            return variables.Variable(initial, trainable=False, name=f"{base}/{self._name}",
                                      dtype=item.dtype.base_dtype)

    def average(self, var):
        """The shadow variable of `var`, or None."""
        return self._averages.get(var)

    def average_name(self, var):
        """The name the shadow of `var` has (or would have): '<var op name>/<name>'."""
        if var in self._averages:
            return self._averages[var].op.name
        return f"{var.op.name}/{self._name}"

    def variables_to_restore(self, moving_avg_variables=None):
        """{name: variable} for a Saver that loads the averages into the variables: each averaged
        variable under its shadow's name, every other global variable under its own."""
        if moving_avg_variables is None:
            moving_avg_variables = (variables.trainable_variables() +
                                    _ops.get_collection(_ops.GraphKeys.MOVING_AVERAGE_VARIABLES))
        averaged = {v for v in moving_avg_variables}
        shadows = {s for s in self._averages.values()}
        restore = {}
        for v in variables.global_variables():
            if v in shadows:
                continue
            restore[self.average_name(v) if v in averaged else v.op.name] = v
        return restore


def assign_moving_average(variable, value, decay, zero_debias=True, name=None):
    """variable -= (variable - value) * (1 - decay); returns the updated value. TensorFlow's
    helper (not in its public API) that TF1 libraries such as tf_slim's batch_norm call."""
    if zero_debias:
        raise NotImplementedError(
            "assign_moving_average(zero_debias=True) is not supported: averages start from "
            "the variables' initial values (see docs/COMPAT.md)")
    with _ops.name_scope(name, "AssignMovingAvg", [variable, value, decay]):
        dtype = variable.dtype.base_dtype
        decay = math_ops.cast(_ops.convert_to_tensor(decay), dtype)
        delta = math_ops.multiply(
            math_ops.subtract(variable.read_value(), _ops.convert_to_tensor(value, dtype=dtype)),
            math_ops.subtract(_ops.convert_to_tensor(1.0, dtype=dtype), decay))
        return variable.assign_sub(delta)
