"""The learning-rate schedules TF1 added after the first four (learning_rate.py): natural
exponential decay and the cosine family, as graph ops of the global step. Formulas and name
scopes are TensorFlow's."""

import math

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.ops import math_functions, math_ops, random_ops
from flowstone.train.learning_rate import piecewise_constant
from flowstone.util.tf_export import export_value, tf_export

export_value("train.piecewise_constant_decay", piecewise_constant)


def _schedule_inputs(learning_rate, global_step, decay_steps):
    """The learning rate as a float tensor, and the step and decay_steps in its dtype."""
    if global_step is None:
        raise ValueError("global_step is required for a decay schedule.")
    lr = _ops.convert_to_tensor(learning_rate, name="learning_rate")
    if not lr.dtype.is_floating:
        lr = math_ops.cast(lr, _dtypes.float32)
    step = math_ops.cast(_ops.convert_to_tensor(global_step), lr.dtype)
    steps = math_ops.cast(_ops.convert_to_tensor(decay_steps), lr.dtype)
    return lr, step, steps


def _scaled(lr, decayed, scope):
    """lr * decayed, named as TensorFlow names a schedule's result: after its name scope."""
    decayed = math_ops.cast(decayed, lr.dtype)
    return _ops.apply_op("Mul", [lr, decayed], name=scope.rstrip("/"), exact_name=True).outputs[0]


def _cosine(x):
    """0.5 * (1 + cos(pi * x))."""
    return math_ops.multiply(0.5, math_ops.add(1.0, math_functions.cos(
        math_ops.multiply(math.pi, x))))


@tf_export("train.natural_exp_decay")
def natural_exp_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                      name=None):
    """learning_rate * exp(-decay_rate * global_step / decay_steps), floored when staircase."""
    with _ops.name_scope(name, "ExponentialDecay") as scope:
        lr, step, steps = _schedule_inputs(learning_rate, global_step, decay_steps)
        p = math_ops.divide(step, steps)
        if staircase:
            p = math_ops.floor(p)
        rate = math_ops.cast(_ops.convert_to_tensor(decay_rate), lr.dtype)
        return _scaled(lr, math_ops.exp(math_ops.negative(math_ops.multiply(rate, p))), scope)


@tf_export("train.cosine_decay")
def cosine_decay(learning_rate, global_step, decay_steps, alpha=0.0, name=None):
    """learning_rate * ((1 - alpha) * 0.5 * (1 + cos(pi * min(step, decay_steps) / decay_steps))
    + alpha)."""
    if global_step is None:
        raise ValueError("cosine decay requires global_step")
    with _ops.name_scope(name, "CosineDecay"):
        lr, step, steps = _schedule_inputs(learning_rate, global_step, decay_steps)
        fraction = math_ops.divide(math_ops.minimum(step, steps), steps)
        decayed = math_ops.add(math_ops.multiply(1.0 - alpha, _cosine(fraction)), alpha)
        return math_ops.multiply(lr, math_ops.cast(decayed, lr.dtype))


@tf_export("train.cosine_decay_restarts")
def cosine_decay_restarts(learning_rate, global_step, first_decay_steps, t_mul=2.0, m_mul=1.0,
                          alpha=0.0, name=None):
    """Cosine decay with warm restarts (SGDR): period i lasts first_decay_steps * t_mul**i
    steps and starts from learning_rate * m_mul**i."""
    if global_step is None:
        raise ValueError("cosine decay restarts requires global_step")
    with _ops.name_scope(name, "SGDRDecay") as scope:
        lr, step, first = _schedule_inputs(learning_rate, global_step, first_decay_steps)
        completed = math_ops.divide(step, first)
        if t_mul == 1.0:
            restarts = math_ops.floor(completed)
            completed = math_ops.subtract(completed, restarts)
        else:
            restarts = math_ops.floor(math_ops.divide(
                math_ops.log(math_ops.subtract(1.0, math_ops.multiply(completed, 1.0 - t_mul))),
                math.log(t_mul)))
            t_power = math_ops.pow(_ops.constant(t_mul, dtype=lr.dtype), restarts)
            periods_done = math_ops.divide(math_ops.subtract(1.0, t_power), 1.0 - t_mul)
            completed = math_ops.divide(math_ops.subtract(completed, periods_done), t_power)
        m_fac = math_ops.pow(_ops.constant(m_mul, dtype=lr.dtype), restarts)
        cosine = math_ops.multiply(m_fac, _cosine(completed))
        return _scaled(lr, math_ops.add(math_ops.multiply(1.0 - alpha, cosine), alpha), scope)


def _linear_cosine(learning_rate, global_step, decay_steps, num_periods, alpha, beta, noise,
                   scope):
    lr, step, steps = _schedule_inputs(learning_rate, global_step, decay_steps)
    step = math_ops.minimum(step, steps)
    linear = math_ops.divide(math_ops.subtract(steps, step), steps)
    if noise is not None:
        linear = math_ops.add(linear, noise(step, lr.dtype))
    cosine = _cosine(math_ops.divide(math_ops.multiply(2.0 * num_periods, step), steps))
    decayed = math_ops.add(math_ops.multiply(math_ops.add(alpha, linear), cosine), beta)
    return _scaled(lr, decayed, scope)


@tf_export("train.linear_cosine_decay")
def linear_cosine_decay(learning_rate, global_step, decay_steps, num_periods=0.5, alpha=0.0,
                        beta=0.001, name=None):
    """learning_rate * ((alpha + linear) * cosine + beta), with linear = (decay_steps - step) /
    decay_steps and cosine = 0.5 * (1 + cos(2 pi num_periods step / decay_steps))."""
    if global_step is None:
        raise ValueError("linear cosine decay requires global_step")
    with _ops.name_scope(name, "LinearCosineDecay") as scope:
        return _linear_cosine(learning_rate, global_step, decay_steps, num_periods, alpha, beta,
                              None, scope)


@tf_export("train.noisy_linear_cosine_decay")
def noisy_linear_cosine_decay(learning_rate, global_step, decay_steps, initial_variance=1.0,
                              variance_decay=0.55, num_periods=0.5, alpha=0.0, beta=0.001,
                              name=None):
    """linear_cosine_decay with Gaussian noise of variance
    initial_variance / (1 + step) ** variance_decay added to the linear term."""
    if global_step is None:
        raise ValueError("noisy linear cosine decay requires global_step")

    def noise(step, dtype):
        variance = math_ops.divide(initial_variance, math_ops.pow(
            math_ops.add(1.0, step), _ops.constant(variance_decay, dtype=dtype)))
        return random_ops.random_normal([], stddev=math_ops.sqrt(variance), dtype=dtype)

    with _ops.name_scope(name, "NoisyLinearCosineDecay") as scope:
        return _linear_cosine(learning_rate, global_step, decay_steps, num_periods, alpha, beta,
                              noise, scope)
