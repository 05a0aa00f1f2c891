"""tf.contrib.opt: the optimizers TF1 code takes from contrib. Decoupled weight decay
(AdamWOptimizer, MomentumWOptimizer, extend_with_decoupled_weight_decay: var -= weight_decay *
var before the base update, as TF 1.15's), NadamOptimizer (Adam with Nesterov momentum, the
ResourceApplyAdam op's use_nesterov), AddSignOptimizer and PowerSignOptimizer (their
ResourceApply ops), and LazyAdamOptimizer, which is Adam here: Flowstone's optimizers apply
every gradient densely (an IndexedSlices gradient becomes a dense one), so the lazy, rows-only
update of sparse gradients does not arise (docs/COMPAT.md)."""

import math

import flowstone as tf
from flowstone.framework import ops as _ops
from flowstone.train import optimizer as _optimizer

__all__ = ["DecoupledWeightDecayExtension", "extend_with_decoupled_weight_decay",
           "AdamWOptimizer", "MomentumWOptimizer", "NadamOptimizer", "LazyAdamOptimizer",
           "AddSignOptimizer", "PowerSignOptimizer"]


class DecoupledWeightDecayExtension:
    """A mixin for an optimizer: each update first shrinks the variable by weight_decay * var
    (Loshchilov & Hutter), only for `decay_var_list` when minimize / apply_gradients get one."""

    def __init__(self, weight_decay):
        # The optimizer's own __init__ runs beside this one (see the classes below).
        self._weight_decay = weight_decay
        self._decay_var_list = None

    def minimize(self, loss, global_step=None, var_list=None, gate_gradients=1,
                 aggregation_method=None, colocate_gradients_with_ops=False, name=None,
                 grad_loss=None, decay_var_list=None):
        self._decay_var_list = set(decay_var_list) if decay_var_list is not None else None
        return super().minimize(loss, global_step=global_step, var_list=var_list,
                                gate_gradients=gate_gradients,
                                aggregation_method=aggregation_method,
                                colocate_gradients_with_ops=colocate_gradients_with_ops,
                                name=name, grad_loss=grad_loss)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None, decay_var_list=None):
        if decay_var_list is not None:
            self._decay_var_list = set(decay_var_list)
        return super().apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def _decay(self, var):
        if self._decay_var_list is not None and var not in self._decay_var_list:
            return None
        decay = self._scalar(self._weight_decay, var.dtype, "weight_decay")
        return var.assign_sub(decay * var.read_value(), read_value=False)

    def _apply_dense(self, grad, var):
        decay = self._decay(var)
        if decay is None or _ops.executing_eagerly():
            return super()._apply_dense(grad, var)
        with _ops.control_dependencies([decay]):
            return super()._apply_dense(grad, var)


def extend_with_decoupled_weight_decay(base_optimizer):
    """An optimizer class: `base_optimizer` with decoupled weight decay; its constructor takes
    `weight_decay` first, then the base optimizer's arguments."""

    class OptimizerWithDecoupledWeightDecay(DecoupledWeightDecayExtension, base_optimizer):
        def __init__(self, weight_decay, *args, **kwargs):
            DecoupledWeightDecayExtension.__init__(self, weight_decay)
            base_optimizer.__init__(self, *args, **kwargs)

    OptimizerWithDecoupledWeightDecay.__name__ = base_optimizer.__name__ + "WithWeightDecay"
    return OptimizerWithDecoupledWeightDecay


class AdamWOptimizer(DecoupledWeightDecayExtension, tf.train.AdamOptimizer):
    """Adam with decoupled weight decay."""

    def __init__(self, weight_decay, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 use_locking=False, name="AdamW"):
        DecoupledWeightDecayExtension.__init__(self, weight_decay)
        tf.train.AdamOptimizer.__init__(self, learning_rate=learning_rate, beta1=beta1,
                                        beta2=beta2, epsilon=epsilon, use_locking=use_locking,
                                        name=name)


class MomentumWOptimizer(DecoupledWeightDecayExtension, tf.train.MomentumOptimizer):
    """Momentum with decoupled weight decay."""

    def __init__(self, weight_decay, learning_rate, momentum, use_locking=False,
                 name="MomentumW", use_nesterov=False):
        DecoupledWeightDecayExtension.__init__(self, weight_decay)
        tf.train.MomentumOptimizer.__init__(self, learning_rate, momentum,
                                            use_locking=use_locking, name=name,
                                            use_nesterov=use_nesterov)


class NadamOptimizer(tf.train.AdamOptimizer):
    """Adam with Nesterov momentum (Dozat): the update uses beta1 * m + (1 - beta1) * grad."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 use_locking=False, name="Nadam"):
        super().__init__(learning_rate, beta1, beta2, epsilon, use_locking, name)

    def _apply_dense(self, grad, var):
        b1p = self._scalar(self._non_slots["beta1_power"], var.dtype, "beta1_power")
        b2p = self._scalar(self._non_slots["beta2_power"], var.dtype, "beta2_power")
        return _ops.apply_op("ResourceApplyAdam", [
            var.handle, self.get_slot(var, "m").handle, self.get_slot(var, "v").handle, b1p, b2p,
            self._scalar(self._lr, var.dtype, "learning_rate"),
            self._scalar(self._beta1, var.dtype, "beta1"),
            self._scalar(self._beta2, var.dtype, "beta2"),
            self._scalar(self._epsilon, var.dtype, "epsilon"), grad],
            {"use_locking": bool(self._use_locking), "use_nesterov": True},
            name="ResourceApplyAdam")


class LazyAdamOptimizer(tf.train.AdamOptimizer):
    """Adam (see the module doc: gradients are applied densely in Flowstone)."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 use_locking=False, name="LazyAdam"):
        super().__init__(learning_rate, beta1, beta2, epsilon, use_locking, name)


class _SignOptimizer(_optimizer.Optimizer):
    """What AddSign and PowerSign share: a momentum slot "m" and an optional sign decay,
    sign_decay_fn(global_step), from tf.train.get_global_step."""

    def __init__(self, learning_rate, beta, sign_decay_fn, use_locking, name):
        super().__init__(use_locking, name)
        self._lr = learning_rate
        self._beta = beta
        self._sign_decay_fn = sign_decay_fn

    def _create_slots(self, var_list):
        for v in var_list:
            self._zeros_slot(v, "m", self._name)

    def _sign_decay(self, dtype):
        if self._sign_decay_fn is None:
            return _ops.constant(1.0, dtype=dtype)
        step = tf.train.get_global_step()
        if step is None:
            raise ValueError(f"{type(self).__name__} with sign_decay_fn needs a global step "
                             "(tf.train.get_or_create_global_step())")
        return tf.cast(self._sign_decay_fn(step), dtype)

    def _apply_sign(self, op_type, grad, var, shape_value):
        return _ops.apply_op(op_type, [
            var.handle, self.get_slot(var, "m").handle,
            self._scalar(self._lr, var.dtype, "learning_rate"), shape_value,
            self._sign_decay(var.dtype), self._scalar(self._beta, var.dtype, "beta"), grad],
            {"use_locking": bool(self._use_locking)}, name=op_type)


class AddSignOptimizer(_SignOptimizer):
    """var -= lr * (alpha + sign_decay * sign(g) * sign(m)) * g, m = beta * m + (1 - beta) * g
    (Bello et al.)."""

    def __init__(self, learning_rate=0.1, alpha=1.0, beta=0.9, sign_decay_fn=None,
                 use_locking=False, name="AddSignOptimizer"):
        super().__init__(learning_rate, beta, sign_decay_fn, use_locking, name)
        self._alpha = alpha

    def _apply_dense(self, grad, var):
        return self._apply_sign("ResourceApplyAddSign", grad, var,
                                self._scalar(self._alpha, var.dtype, "alpha"))


class PowerSignOptimizer(_SignOptimizer):
    """var -= lr * base ** (sign_decay * sign(g) * sign(m)) * g (Bello et al.)."""

    def __init__(self, learning_rate=0.1, base=math.e, beta=0.9, sign_decay_fn=None,
                 use_locking=False, name="PowerSignOptimizer"):
        super().__init__(learning_rate, beta, sign_decay_fn, use_locking, name)
        self._logbase = math.log(base)

    def _apply_dense(self, grad, var):
        return self._apply_sign("ResourceApplyPowerSign", grad, var,
                                self._scalar(self._logbase, var.dtype, "logbase"))
