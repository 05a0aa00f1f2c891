"""Learning-rate schedules as graph ops of the global step."""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops

__all__ = ["exponential_decay", "piecewise_constant", "inverse_time_decay", "polynomial_decay"]


def _float_step(global_step, dtype):
    from flowstone.ops import math_ops
    if global_step is None:
        raise ValueError("global_step is required for a decay schedule.")
    return math_ops.cast(_ops.convert_to_tensor(global_step), dtype)


def exponential_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                      name=None):
    """learning_rate * decay_rate ** (global_step / decay_steps), floored when staircase."""
    from flowstone.ops import math_ops
    with _ops.name_scope(name, "ExponentialDecay"):
        lr = _ops.convert_to_tensor(learning_rate, dtype=_dtypes.float32)
        p = math_ops.divide(_float_step(global_step, lr.dtype),
                            _ops.constant(float(decay_steps), dtype=lr.dtype))
        if staircase:
            p = math_ops.floor(p)
        return math_ops.multiply(lr, math_ops.pow(_ops.constant(float(decay_rate)), p))


def inverse_time_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                       name=None):
    """learning_rate / (1 + decay_rate * global_step / decay_steps)."""
    from flowstone.ops import math_ops
    with _ops.name_scope(name, "InverseTimeDecay"):
        lr = _ops.convert_to_tensor(learning_rate, dtype=_dtypes.float32)
        p = math_ops.divide(_float_step(global_step, lr.dtype), float(decay_steps))
        if staircase:
            p = math_ops.floor(p)
        return math_ops.divide(lr, math_ops.add(1.0, math_ops.multiply(float(decay_rate), p)))


def polynomial_decay(learning_rate, global_step, decay_steps, end_learning_rate=0.0001,
                     power=1.0, cycle=False, name=None):
    """(lr - end) * (1 - min(step, decay_steps) / decay_steps) ** power + end; with `cycle`,
    decay_steps grows to the first multiple of itself at or above the step instead."""
    from flowstone.ops import math_ops
    with _ops.name_scope(name, "PolynomialDecay"):
        lr = _ops.convert_to_tensor(learning_rate, dtype=_dtypes.float32)
        step = _float_step(global_step, lr.dtype)
        steps = _ops.constant(float(decay_steps), dtype=lr.dtype)
        if cycle:
            # At step 0 ceil gives 0 periods; TensorFlow keeps the first one.
            periods = math_ops.maximum(math_ops.ceil(math_ops.divide(step, steps)), 1.0)
            steps = math_ops.multiply(steps, periods)
        else:
            step = math_ops.minimum(step, steps)
        frac = math_ops.subtract(1.0, math_ops.divide(step, steps))
        return math_ops.add(math_ops.multiply(math_ops.subtract(lr, end_learning_rate),
                                              math_ops.pow(frac, float(power))),
                            end_learning_rate)


def piecewise_constant(x, boundaries, values, name=None):
    """values[0] while x <= boundaries[0], values[1] while x <= boundaries[1], ... values[-1]."""
    from flowstone.ops import math_ops
    if len(values) != len(boundaries) + 1:
        raise ValueError("The length of values should be one more than the length of "
                         f"boundaries ({len(values)} values, {len(boundaries)} boundaries).")
    with _ops.name_scope(name, "PiecewiseConstant"):
        x = _ops.convert_to_tensor(x)
        dtype = _ops.convert_to_tensor(values[0]).dtype
        result = _ops.constant(values[-1], dtype=dtype)
        for boundary, value in reversed(list(zip(boundaries, values[:-1]))):
            below = math_ops.less_equal(x, _ops.constant(boundary, dtype=x.dtype))
            result = math_ops.where(below, _ops.constant(value, dtype=dtype), result)
        return result
