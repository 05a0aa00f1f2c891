"""The optimizers with L1/L2 proximal steps: proximal gradient descent, proximal Adagrad,
Adagrad dual averaging and FTRL-proximal, on their ResourceApply* ops
(src/ops/training/update_rule_ops.cc)."""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.train.optimizer import Optimizer
from flowstone.util.tf_export import tf_export


def _check_non_negative(**values):
    for name, value in values.items():
        if value < 0.0:
            raise ValueError(f"{name} {value} must be greater than or equal to 0.0")


class _L1L2Optimizer(Optimizer):
    """Holds the learning rate and the L1/L2 regularization strengths the proximal rules take."""

    def __init__(self, learning_rate, l1, l2, use_locking, name):
        super().__init__(use_locking, name)
        self._lr, self._l1, self._l2 = learning_rate, l1, l2

    def _hyper(self, var):
        return [self._scalar(self._lr, var.dtype, "learning_rate"),
                self._scalar(self._l1, var.dtype, "l1_regularization_strength"),
                self._scalar(self._l2, var.dtype, "l2_regularization_strength")]


@tf_export("train.ProximalGradientDescentOptimizer")
class ProximalGradientDescentOptimizer(_L1L2Optimizer):
    """prox = var - lr * g; var = sign(prox) * max(|prox| - lr * l1, 0) / (1 + lr * l2)."""

    def __init__(self, learning_rate, l1_regularization_strength=0.0,
                 l2_regularization_strength=0.0, use_locking=False,
                 name="ProximalGradientDescent"):
        super().__init__(learning_rate, l1_regularization_strength, l2_regularization_strength,
                         use_locking, name)

    def _apply_dense(self, grad, var):
        return _ops.apply_op("ResourceApplyProximalGradientDescent",
                             [var.handle] + self._hyper(var) + [grad],
                             {"use_locking": bool(self._use_locking)},
                             name="ResourceApplyProximalGradientDescent")


@tf_export("train.ProximalAdagradOptimizer")
class ProximalAdagradOptimizer(_L1L2Optimizer):
    """accum += g^2, then the proximal gradient step with learning rate lr / sqrt(accum)."""

    def __init__(self, learning_rate, initial_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 use_locking=False, name="ProximalAdagrad"):
        if initial_accumulator_value <= 0.0:
            raise ValueError(f"initial_accumulator_value must be positive: "
                             f"{initial_accumulator_value}")
        super().__init__(learning_rate, l1_regularization_strength, l2_regularization_strength,
                         use_locking, name)
        self._initial = initial_accumulator_value

    def _create_slots(self, var_list):
        for v in var_list:
            self._zeros_slot(v, "accumulator", self._name, initial_value=self._initial)

    def _apply_dense(self, grad, var):
        return _ops.apply_op("ResourceApplyProximalAdagrad",
                             [var.handle, self.get_slot(var, "accumulator").handle] +
                             self._hyper(var) + [grad],
                             {"use_locking": bool(self._use_locking)},
                             name="ResourceApplyProximalAdagrad")


@tf_export("train.AdagradDAOptimizer")
class AdagradDAOptimizer(_L1L2Optimizer):
    """Adagrad dual averaging: the variable is recomputed from the sums of the gradients and of
    their squares at the step `global_step + 1`."""

    def __init__(self, learning_rate, global_step, initial_gradient_squared_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 use_locking=False, name="AdagradDA"):
        if initial_gradient_squared_accumulator_value <= 0.0:
            raise ValueError("initial_gradient_squared_accumulator_value must be positive: "
                             f"{initial_gradient_squared_accumulator_value}")
        super().__init__(learning_rate, l1_regularization_strength, l2_regularization_strength,
                         use_locking, name)
        self._global_step = global_step
        self._initial = initial_gradient_squared_accumulator_value

    def _create_slots(self, var_list):
        for v in var_list:
            self._zeros_slot(v, "gradient_accumulator", self._name)
            self._zeros_slot(v, "gradient_squared_accumulator", self._name + "_1",
                             initial_value=self._initial)

    def _prepare(self):
        from flowstone.ops import basic_ops, math_ops
        step = self._global_step
        step = step.read_value() if hasattr(step, "read_value") else _ops.convert_to_tensor(step)
        self._step_on_worker = math_ops.cast(
            math_ops.add(basic_ops.identity(step), _ops.constant(1, dtype=step.dtype)),
            _dtypes.int64)

    def _apply_dense(self, grad, var):
        return _ops.apply_op("ResourceApplyAdagradDA", [
            var.handle, self.get_slot(var, "gradient_accumulator").handle,
            self.get_slot(var, "gradient_squared_accumulator").handle, grad] +
            self._hyper(var) + [self._step_on_worker],
            {"use_locking": bool(self._use_locking)}, name="ResourceApplyAdagradDA")


@tf_export("train.FtrlOptimizer")
class FtrlOptimizer(_L1L2Optimizer):
    """FTRL-proximal (McMahan et al., 2013), with TensorFlow's online L2 shrinkage and `beta`
    (which adds beta / (2 * learning_rate) to the L2 strength)."""

    def __init__(self, learning_rate, learning_rate_power=-0.5, initial_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 use_locking=False, name="Ftrl", accum_name=None, linear_name=None,
                 l2_shrinkage_regularization_strength=0.0, beta=None):
        if initial_accumulator_value < 0.0:
            raise ValueError(f"initial_accumulator_value {initial_accumulator_value} must be "
                             "greater than or equal to 0.0")
        if learning_rate_power > 0.0:
            raise ValueError(f"learning_rate_power {learning_rate_power} must be less than or "
                             "equal to 0.0")
        _check_non_negative(
            l1_regularization_strength=l1_regularization_strength,
            l2_regularization_strength=l2_regularization_strength,
            l2_shrinkage_regularization_strength=l2_shrinkage_regularization_strength)
        beta = 0.0 if beta is None else beta
        adjusted_l2 = l2_regularization_strength + beta / (2.0 * learning_rate)
        super().__init__(learning_rate, l1_regularization_strength, adjusted_l2, use_locking,
                         name)
        self._lr_power = learning_rate_power
        self._initial = initial_accumulator_value
        self._shrinkage = l2_shrinkage_regularization_strength
        self._accum_name, self._linear_name = accum_name, linear_name

    def _create_slots(self, var_list):
        accum_name = self._accum_name or self._name
        linear_name = self._linear_name or self._name
        if linear_name == accum_name:
            linear_name += "_1"
        for v in var_list:
            self._zeros_slot(v, "accum", accum_name, initial_value=self._initial)
            self._zeros_slot(v, "linear", linear_name)

    def _apply_dense(self, grad, var):
        slots = [var.handle, self.get_slot(var, "accum").handle,
                 self.get_slot(var, "linear").handle, grad] + self._hyper(var)
        power = self._scalar(self._lr_power, var.dtype, "learning_rate_power")
        attrs = {"use_locking": bool(self._use_locking)}
        if self._shrinkage <= 0.0:
            return _ops.apply_op("ResourceApplyFtrl", slots + [power], attrs,
                                 name="ResourceApplyFtrl")
        shrinkage = self._scalar(self._shrinkage, var.dtype, "l2_shrinkage")
        return _ops.apply_op("ResourceApplyFtrlV2", slots + [shrinkage, power], attrs,
                             name="ResourceApplyFtrlV2")
