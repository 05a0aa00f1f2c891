"""tf.train.AdadeltaOptimizer (Zeiler, 2012) on the ResourceApplyAdadelta op."""

from flowstone.framework import ops as _ops
from flowstone.train.optimizer import Optimizer
from flowstone.util.tf_export import tf_export


@tf_export("train.AdadeltaOptimizer")
class AdadeltaOptimizer(Optimizer):
    """accum = rho * accum + (1 - rho) * g^2;
    update = sqrt(accum_update + epsilon) / sqrt(accum + epsilon) * g;
    accum_update = rho * accum_update + (1 - rho) * update^2; var -= learning_rate * update."""

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-8, use_locking=False,
                 name="Adadelta"):
        super().__init__(use_locking, name)
        self._lr, self._rho, self._epsilon = learning_rate, rho, epsilon

    def _create_slots(self, var_list):
        for v in var_list:
            self._zeros_slot(v, "accum", self._name)
            self._zeros_slot(v, "accum_update", self._name + "_1")

    def _apply_dense(self, grad, var):
        return _ops.apply_op("ResourceApplyAdadelta", [
            var.handle, self.get_slot(var, "accum").handle,
            self.get_slot(var, "accum_update").handle,
            self._scalar(self._lr, var.dtype, "lr"), self._scalar(self._rho, var.dtype, "rho"),
            self._scalar(self._epsilon, var.dtype, "epsilon"), grad],
            {"use_locking": bool(self._use_locking)}, name="ResourceApplyAdadelta")
