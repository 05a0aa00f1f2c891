"""tf.contrib.layers.optimize_loss: a training op from a loss in one call (optimizer by name,
class or instance, learning-rate variable and decay, gradient noise, multipliers and
clipping)."""

import numbers

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.ops import (array_ops, basic_ops, clip_ops, init_ops, random_ops,
                           variable_scope)
from flowstone.framework.indexed_slices import IndexedSlices
from flowstone.summary import summary_ops
from flowstone.train import optimizer as _optimizer
from flowstone.train import proximal_optimizers as _proximal

OPTIMIZER_CLS_NAMES = {
    "Adagrad": _optimizer.AdagradOptimizer,
    "Adam": _optimizer.AdamOptimizer,
    "Ftrl": _proximal.FtrlOptimizer,
    "Momentum": _optimizer.MomentumOptimizer,  # needs `momentum`: pass an instance instead
    "RMSProp": _optimizer.RMSPropOptimizer,
    "SGD": _optimizer.GradientDescentOptimizer,
}

OPTIMIZER_SUMMARIES = ["learning_rate", "loss", "gradients", "gradient_norm",
                       "global_gradient_norm"]


def _make_optimizer(optimizer, lr):
    if isinstance(optimizer, str):
        if lr is None:
            raise ValueError("Learning rate is None, but should be specified if optimizer is "
                             f"string ({optimizer}).")
        if optimizer not in OPTIMIZER_CLS_NAMES:
            raise ValueError(f"Optimizer name should be one of [{', '.join(OPTIMIZER_CLS_NAMES)}"
                             f"], you provided {optimizer}.")
        return OPTIMIZER_CLS_NAMES[optimizer](learning_rate=lr)
    if isinstance(optimizer, type) and issubclass(optimizer, _optimizer.Optimizer):
        if lr is None:
            raise ValueError("Learning rate is None, but should be specified if optimizer is "
                             f"class ({optimizer}).")
        return optimizer(learning_rate=lr)
    if isinstance(optimizer, _optimizer.Optimizer):
        return optimizer
    if callable(optimizer):
        made = optimizer(lr) if lr is not None else optimizer()
        if not isinstance(made, _optimizer.Optimizer):
            raise ValueError("Unrecognized optimizer: function should return subclass of "
                             f"Optimizer. Got {made}.")
        return made
    raise ValueError("Unrecognized optimizer: should be string, subclass of Optimizer, "
                     "instance of subclass of Optimizer or function with one argument. Got "
                     f"{optimizer}.")


def _add_scaled_noise(gradients, scale):
    noisy = []
    for grad, var in gradients:
        if grad is None:
            noisy.append((None, var))
            continue
        values = grad.values if isinstance(grad, IndexedSlices) else grad
        noise = random_ops.truncated_normal(array_ops.shape(values)) * scale
        noisy.append((values + noise, var))
    return noisy


def _multiply_gradients(gradients, multipliers):
    out = []
    for grad, var in gradients:
        key = var if var in multipliers else var.op.name
        if grad is not None and key in multipliers:
            scale = basic_ops.constant(multipliers[key], dtype=grad.dtype)
            grad = (IndexedSlices(grad.values * scale, grad.indices, grad.dense_shape)
                    if isinstance(grad, IndexedSlices) else grad * scale)
        out.append((grad, var))
    return out


def optimize_loss(loss, global_step, learning_rate, optimizer, gradient_noise_scale=None,
                  gradient_multipliers=None, clip_gradients=None, learning_rate_decay_fn=None,
                  update_ops=None, variables=None, name=None, summaries=None,
                  colocate_gradients_with_ops=False, increment_global_step=True):
    """The loss, after one optimizer step on `variables` (default: the trainable ones) has
    run (and the update ops, default tf.GraphKeys.UPDATE_OPS, before it).

    optimizer: a name of OPTIMIZER_CLS_NAMES, an Optimizer subclass or instance, or a function
    of the learning rate returning one. learning_rate: a float (kept in the variable
    OptimizeLoss/learning_rate) or a scalar tensor. clip_gradients: a float (clip by global
    norm) or a function of the (gradient, variable) list."""
    loss = _ops.convert_to_tensor(loss)
    if global_step is None:
        global_step = _optimizer.get_global_step()
    if global_step is None and increment_global_step:
        raise ValueError("global_step is required for optimize_loss (create one with "
                         "tf.train.get_or_create_global_step(), or pass "
                         "increment_global_step=False).")
    with variable_scope.variable_scope(name, "OptimizeLoss", [loss, global_step]):
        if update_ops is None:
            update_ops = set(_ops.get_collection(_ops.GraphKeys.UPDATE_OPS))
        if update_ops:
            with _ops.control_dependencies(list(update_ops)):
                loss = basic_ops.identity(loss)
        lr = None
        if learning_rate is not None:
            if isinstance(learning_rate, _ops.Tensor) and learning_rate.shape.rank == 0:
                lr = learning_rate
            elif isinstance(learning_rate, numbers.Real):
                if learning_rate < 0.0:
                    raise ValueError(f"Invalid learning_rate {learning_rate}.")
                lr = variable_scope.get_variable(
                    "learning_rate", [], trainable=False, dtype=_dtypes.float32,
                    initializer=init_ops.constant_initializer(learning_rate))
            else:
                raise ValueError("Learning rate should be 0d Tensor or float. Got "
                                 f"{learning_rate} of type {type(learning_rate)}")
        if learning_rate_decay_fn is not None:
            if global_step is None:
                raise ValueError("global_step is required for learning_rate_decay_fn.")
            lr = learning_rate_decay_fn(lr, global_step)
        summaries = OPTIMIZER_SUMMARIES if summaries is None else summaries
        if lr is not None and "learning_rate" in summaries:
            summary_ops.scalar("learning_rate", lr)
        if "loss" in summaries:
            summary_ops.scalar("loss", loss)
        opt = _make_optimizer(optimizer, lr)
        if variables is None:
            variables = _ops.get_collection(_ops.GraphKeys.TRAINABLE_VARIABLES)
        gradients = opt.compute_gradients(
            loss, variables, colocate_gradients_with_ops=colocate_gradients_with_ops)
        if gradient_noise_scale is not None:
            gradients = _add_scaled_noise(gradients, gradient_noise_scale)
        if gradient_multipliers is not None:
            gradients = _multiply_gradients(gradients, gradient_multipliers)
            if not gradients:
                raise ValueError("Empty list of (gradient, var) pairs encountered. This is "
                                 "most likely to be caused by an improper value of "
                                 "gradient_multipliers.")
        if "global_gradient_norm" in summaries or "gradient_norm" in summaries:
            summary_ops.scalar("global_norm/gradient_norm",
                               clip_ops.global_norm([g for g, _ in gradients if g is not None]))
        if clip_gradients is not None:
            if isinstance(clip_gradients, numbers.Real):
                grads, variables_ = zip(*gradients)
                clipped, norm = clip_ops.clip_by_global_norm(list(grads), clip_gradients)
                gradients = list(zip(clipped, variables_))
                if "global_gradient_norm" in summaries or "gradient_norm" in summaries:
                    summary_ops.scalar("global_norm/clipped_gradient_norm", norm)
            elif callable(clip_gradients):
                gradients = clip_gradients(gradients)
            else:
                raise ValueError(f"Unknown type {type(clip_gradients)} for clip_gradients")
        for gradient, variable in gradients:
            if gradient is None:
                continue
            values = gradient.values if isinstance(gradient, IndexedSlices) else gradient
            var_name = variable.name.replace(":", "_")
            if "gradients" in summaries:
                summary_ops.histogram("gradients/" + var_name, values)
            if "gradient_norm" in summaries:
                summary_ops.scalar("gradient_norm/" + var_name, clip_ops.global_norm([values]))
        train = opt.apply_gradients(
            gradients, global_step=global_step if increment_global_step else None,
            name="train")
        with _ops.control_dependencies([train]):
            return basic_ops.identity(loss)


