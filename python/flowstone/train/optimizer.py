"""TF1 optimizers: compute_gradients / apply_gradients / minimize with slot variables.

The update rules are C++ ops (src/ops/training_ops.cc) that update variables in place.
"""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.ops import basic_ops, gradients as _gradients, init_ops, variable_scope, variables

__all__ = [
    "Optimizer", "GradientDescentOptimizer", "MomentumOptimizer", "AdamOptimizer",
    "RMSPropOptimizer", "AdagradOptimizer", "get_or_create_global_step", "get_global_step",
    "create_global_step",
]


def _get_global_step(graph):
    steps = graph.get_collection(_ops.GraphKeys.GLOBAL_STEP)
    if len(steps) > 1:
        raise TypeError("There are multiple items in collection global_step. There should be "
                        "only one.")
    return steps[0] if steps else None


def get_global_step(graph=None):
    return _get_global_step(graph or _ops.get_default_graph())


def create_global_step(graph=None):
    graph = graph or _ops.get_default_graph()
    if _get_global_step(graph) is not None:
        raise ValueError("global_step already exists.")
    with graph.as_default(), graph.name_scope(None), graph.control_dependencies(None):
        return variable_scope.get_variable(
            "global_step", shape=[], dtype=_dtypes.int64, initializer=init_ops.Zeros(),
            trainable=False,
            collections=[_ops.GraphKeys.GLOBAL_VARIABLES, _ops.GraphKeys.GLOBAL_STEP])


def get_or_create_global_step(graph=None):
    graph = graph or _ops.get_default_graph()
    return _get_global_step(graph) or create_global_step(graph)


class Optimizer:
    """Base class: subclasses declare slots and apply one variable's update."""

    GATE_NONE = 0
    GATE_OP = 1
    GATE_GRAPH = 2

    def __init__(self, use_locking, name):
        if not name:
            raise ValueError("Must specify the optimizer name")
        self._use_locking = use_locking
        self._name = name
        self._slots = {}        # slot name -> {variable: slot variable}
        self._non_slots = {}    # name -> variable

    def get_name(self):
        return self._name

    def get_slot_names(self):
        return sorted(self._slots)

    def get_slot(self, var, name):
        return self._slots.get(name, {}).get(var)

    def variables(self):
        out = list(self._non_slots.values())
        for slots in self._slots.values():
            out.extend(slots.values())
        return out

    # --- gradients -----------------------------------------------------------------------
    def compute_gradients(self, loss, var_list=None, gate_gradients=GATE_OP,
                          aggregation_method=None, colocate_gradients_with_ops=False,
                          grad_loss=None):
        if _ops.executing_eagerly():
            return self._compute_gradients_eagerly(loss, var_list, grad_loss)
        if callable(loss):
            loss = loss()
        if var_list is None:
            var_list = variables.trainable_variables()
        var_list = list(var_list)
        if not var_list:
            raise ValueError("No variables to optimize.")
        loss = _ops.convert_to_tensor(loss)
        if not loss.dtype.is_floating:
            raise ValueError(f"Invalid type {loss.dtype.name} for {loss.name}, expected: "
                             "float32, float64.")
        grads = _gradients.gradients(loss, var_list,
                                     grad_ys=None if grad_loss is None else [grad_loss])
        return list(zip(grads, var_list))

    def _compute_gradients_eagerly(self, loss, var_list, grad_loss):
        """TensorFlow's eager form: `loss` is a function, run under a GradientTape; without a
        var_list, the trainable variables it read are the ones optimized."""
        from flowstone.ops.gradient_tape import GradientTape
        if not callable(loss):
            raise RuntimeError("`loss` passed to Optimizer.compute_gradients should be a "
                               "function when eager execution is enabled.")
        with GradientTape() as tape:
            if var_list is not None:
                tape.watch(list(var_list))
            loss_value = loss()
        if var_list is None:
            var_list = [v for v in tape.watched_variables() if v.trainable]
        var_list = list(var_list)
        if not var_list:
            raise ValueError("No variables to optimize.")
        grads = tape.gradient(loss_value, var_list, output_gradients=grad_loss)
        return list(zip(grads, var_list))

    def _apply_gradients_eagerly(self, with_grads, global_step):
        """The updates, run at once (no graph, names or control dependencies)."""
        self._create_slots([v for _, v in with_grads])
        self._prepare()
        for grad, var in with_grads:
            self._apply_dense(_ops.convert_to_tensor(grad), var)
            if var.constraint is not None:
                var.assign(var.constraint(var.read_value()), read_value=False)
        self._finish([], "")
        if global_step is not None:
            global_step.assign_add(_ops.constant(1, dtype=global_step.dtype), read_value=False)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        grads_and_vars = [(g, v) for g, v in grads_and_vars]
        if not grads_and_vars:
            raise ValueError("No variables provided.")
        with_grads = [(g, v) for g, v in grads_and_vars if g is not None]
        if not with_grads:
            raise ValueError(
                "No gradients provided for any variable, check your graph for ops that do not "
                "support gradients, between variables "
                f"{[v.name for _, v in grads_and_vars]} and loss.")
        if _ops.executing_eagerly():
            return self._apply_gradients_eagerly(with_grads, global_step)
        # The updates go to the graph being built (a tf.cond branch or a tf.function body runs
        # them only when it runs); slots are variables, made beside the variables they serve
        # (eager ones in a tf.function's trace: there, variables are made eagerly).
        first_var = with_grads[0][1]
        graph = _ops.get_default_graph()
        with (graph if first_var._eager else first_var.graph).as_default():
            self._create_slots([v for _, v in with_grads])
        with graph.as_default():
            with graph.name_scope(name or self._name) as scope:
                self._prepare()
                updates = []
                for grad, var in with_grads:
                    grad = _ops.convert_to_tensor(grad)
                    with graph.name_scope("update_" + (var._name if var._eager
                                                       else var.op.name)):
                        update = self._apply_dense(grad, var)
                        if var.constraint is not None:
                            # As in TensorFlow, a constrained variable is projected after each
                            # update; the fresh read is ordered after the update.
                            with graph.control_dependencies([update]):
                                update = var.assign(var.constraint(var.read_value()),
                                                    read_value=False)
                        updates.append(update)
                finish = self._finish(updates, scope)
                if global_step is None:
                    return finish
                with graph.control_dependencies([finish]):
                    return global_step.assign_add(
                        _ops.constant(1, dtype=global_step.dtype), name=scope.rstrip("/"),
                        read_value=False)

    def minimize(self, loss, global_step=None, var_list=None, gate_gradients=GATE_OP,
                 aggregation_method=None, colocate_gradients_with_ops=False, name=None,
                 grad_loss=None):
        grads_and_vars = self.compute_gradients(loss, var_list, gate_gradients,
                                                aggregation_method, colocate_gradients_with_ops,
                                                grad_loss)
        return self.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    # --- subclass hooks ----------------------------------------------------------------------
    def _create_slots(self, var_list):
        """Creates the slot variables the update rule needs."""

    def _prepare(self):
        """Converts hyperparameters to tensors, once per apply_gradients."""

    def _apply_dense(self, grad, var):
        raise NotImplementedError

    def _finish(self, update_ops, name_scope):
        return basic_ops.group(*update_ops, name=name_scope.rstrip("/").split("/")[-1])

    # --- helpers -----------------------------------------------------------------------------
    def _zeros_slot(self, var, slot_name, op_name, initial_value=0.0):
        slots = self._slots.setdefault(slot_name, {})
        if var in slots:
            return slots[var]
        if var._eager:
            init = init_ops.Constant(initial_value)(var.shape.as_list(), var.dtype)
            slots[var] = variables.Variable(init, trainable=False, dtype=var.dtype,
                                            name=f"{var._name}/{op_name}")
            return slots[var]
        graph = var.graph
        with graph.name_scope(None), graph.control_dependencies(None), \
                graph.colocate_with(var.handle):
            init = init_ops.Constant(initial_value)(var.shape.as_list(), var.dtype)
            slot = variables.Variable(init, trainable=False, name=f"{var.op.name}/{op_name}",
                                      dtype=var.dtype)
        slots[var] = slot
        return slot

    def _non_slot(self, name, initial_value, dtype):
        if name not in self._non_slots:
            graph = _ops.get_default_graph()
            with graph.name_scope(None), graph.control_dependencies(None):
                self._non_slots[name] = variables.Variable(initial_value, name=name,
                                                           trainable=False, dtype=dtype)
        return self._non_slots[name]

    @staticmethod
    def _scalar(value, dtype, name):
        if isinstance(value, _ops.Tensor):
            if value.dtype != dtype:
                from flowstone.ops import math_ops
                return math_ops.cast(value, dtype)
            return value
        if isinstance(value, variables.Variable):
            return Optimizer._scalar(value.value(), dtype, name)
        if callable(value):
            return Optimizer._scalar(value(), dtype, name)
        return _ops.constant(value, dtype=dtype, name=name)


class GradientDescentOptimizer(Optimizer):
    """var -= learning_rate * grad"""

    def __init__(self, learning_rate, use_locking=False, name="GradientDescent"):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate

    def _apply_dense(self, grad, var):
        lr = self._scalar(self._learning_rate, var.dtype, "learning_rate")
        return _ops.apply_op("ResourceApplyGradientDescent", [var.handle, lr, grad],
                             {"use_locking": bool(self._use_locking)}, name="ResourceApply")


class MomentumOptimizer(Optimizer):
    """accum = momentum * accum + grad; var -= learning_rate * accum (or Nesterov's form)."""

    def __init__(self, learning_rate, momentum, use_locking=False, name="Momentum",
                 use_nesterov=False):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._momentum = momentum
        self._use_nesterov = use_nesterov

    def _create_slots(self, var_list):
        for v in var_list:
            self._zeros_slot(v, "momentum", self._name)

    def _apply_dense(self, grad, var):
        accum = self.get_slot(var, "momentum")
        return _ops.apply_op("ResourceApplyMomentum", [
            var.handle, accum.handle, self._scalar(self._learning_rate, var.dtype, "lr"), grad,
            self._scalar(self._momentum, var.dtype, "momentum")],
            {"use_nesterov": bool(self._use_nesterov), "use_locking": bool(self._use_locking)},
            name="ResourceApplyMomentum")


class AdamOptimizer(Optimizer):
    """Adam (Kingma & Ba) with TensorFlow's epsilon placement: m/(sqrt(v) + epsilon)."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 use_locking=False, name="Adam"):
        super().__init__(use_locking, name)
        self._lr, self._beta1, self._beta2, self._epsilon = learning_rate, beta1, beta2, epsilon

    def _create_slots(self, var_list):
        first = min(var_list, key=lambda v: v.name)
        self._beta_dtype = first.dtype
        self._non_slot("beta1_power", self._beta1, first.dtype)
        self._non_slot("beta2_power", self._beta2, first.dtype)
        for v in var_list:
            self._zeros_slot(v, "m", self._name)
            self._zeros_slot(v, "v", self._name + "_1")

    def _apply_dense(self, grad, var):
        b1p = self._scalar(self._non_slots["beta1_power"], var.dtype, "beta1_power")
        b2p = self._scalar(self._non_slots["beta2_power"], var.dtype, "beta2_power")
        return _ops.apply_op("ResourceApplyAdam", [
            var.handle, self.get_slot(var, "m").handle, self.get_slot(var, "v").handle, b1p, b2p,
            self._scalar(self._lr, var.dtype, "learning_rate"),
            self._scalar(self._beta1, var.dtype, "beta1"),
            self._scalar(self._beta2, var.dtype, "beta2"),
            self._scalar(self._epsilon, var.dtype, "epsilon"), grad],
            {"use_locking": bool(self._use_locking)}, name="ResourceApplyAdam")

    def _finish(self, update_ops, name_scope):
        from flowstone.ops import math_ops
        graph = _ops.get_default_graph()
        b1p, b2p = self._non_slots["beta1_power"], self._non_slots["beta2_power"]
        with graph.control_dependencies(update_ops), graph.colocate_with(b1p.handle):
            update_b1 = b1p.assign(math_ops.multiply(b1p.read_value(), self._beta1),
                                   read_value=False)
            update_b2 = b2p.assign(math_ops.multiply(b2p.read_value(), self._beta2),
                                   read_value=False)
        return basic_ops.group(*update_ops, update_b1, update_b2,
                               name=name_scope.rstrip("/").split("/")[-1])


class RMSPropOptimizer(Optimizer):
    """ms = decay * ms + (1 - decay) * g^2; mom = momentum * mom + lr * g / sqrt(ms + eps);
    var -= mom (centered: ms - mg^2 in the denominator)."""

    def __init__(self, learning_rate, decay=0.9, momentum=0.0, epsilon=1e-10, use_locking=False,
                 centered=False, name="RMSProp"):
        super().__init__(use_locking, name)
        self._lr, self._decay, self._momentum = learning_rate, decay, momentum
        self._epsilon, self._centered = epsilon, centered

    def _create_slots(self, var_list):
        for v in var_list:
            self._zeros_slot(v, "rms", self._name, initial_value=1.0)
            self._zeros_slot(v, "momentum", self._name + "_1")
            if self._centered:
                self._zeros_slot(v, "mg", self._name + "_2")

    def _apply_dense(self, grad, var):
        scalars = [self._scalar(self._lr, var.dtype, "learning_rate"),
                   self._scalar(self._decay, var.dtype, "decay"),
                   self._scalar(self._momentum, var.dtype, "momentum"),
                   self._scalar(self._epsilon, var.dtype, "epsilon"), grad]
        rms, mom = self.get_slot(var, "rms"), self.get_slot(var, "momentum")
        if self._centered:
            return _ops.apply_op("ResourceApplyCenteredRMSProp", [
                var.handle, self.get_slot(var, "mg").handle, rms.handle, mom.handle] + scalars,
                name="ResourceApplyCenteredRMSProp")
        return _ops.apply_op("ResourceApplyRMSProp",
                             [var.handle, rms.handle, mom.handle] + scalars,
                             name="ResourceApplyRMSProp")


class AdagradOptimizer(Optimizer):
    """accum += g^2; var -= learning_rate * g / sqrt(accum)"""

    def __init__(self, learning_rate, initial_accumulator_value=0.1, use_locking=False,
                 name="Adagrad"):
        if initial_accumulator_value <= 0.0:
            raise ValueError(f"initial_accumulator_value must be positive: "
                             f"{initial_accumulator_value}")
        super().__init__(use_locking, name)
        self._lr = learning_rate
        self._initial = initial_accumulator_value

    def _create_slots(self, var_list):
        for v in var_list:
            self._zeros_slot(v, "accumulator", self._name, initial_value=self._initial)

    def _apply_dense(self, grad, var):
        return _ops.apply_op("ResourceApplyAdagrad", [
            var.handle, self.get_slot(var, "accumulator").handle,
            self._scalar(self._lr, var.dtype, "learning_rate"), grad],
            name="ResourceApplyAdagrad")
