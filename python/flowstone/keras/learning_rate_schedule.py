"""tf.keras.optimizers.schedules: learning rates as functions of the optimizer's step.

A schedule is called with a step tensor and returns the rate as a tensor, so a Keras optimizer
made with one computes its rate inside the training step from its own `iterations` counter
(optimizers.py): no Python runs per step. The formulas and configs are tf-keras 2.x's.
"""

import math

import flowstone as tf
from flowstone.keras.utils.generic_utils import deserialize_keras_object
from flowstone.util.tf_export import tf_export


@tf_export("keras.optimizers.schedules.LearningRateSchedule")
class LearningRateSchedule:
    """Base class: subclasses define `__call__(step)` and `get_config()`."""

    def __call__(self, step):
        raise NotImplementedError(f"Learning rate schedule '{type(self).__name__}' must "
                                  "override `__call__(self, step)`.")

    def get_config(self):
        raise NotImplementedError(f"Learning rate schedule '{type(self).__name__}' must "
                                  "override `get_config()` in order to be serializable.")

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _float_step(initial_learning_rate, step):
    """The initial rate as a tensor, and the step cast to its dtype."""
    initial = tf.convert_to_tensor(initial_learning_rate, name="initial_learning_rate")
    return initial, tf.cast(step, initial.dtype)


class _StepRatioDecay(LearningRateSchedule):
    """A decay of the initial rate by the ratio p = step / decay_steps, floored when `staircase`:
    ExponentialDecay and InverseTimeDecay, which differ only in `_decayed`."""

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False,
                 name=None):
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.decay_rate = decay_rate
        self.staircase = staircase
        self.name = name

    def __call__(self, step):
        with tf.name_scope(self.name or type(self).__name__):
            initial, step = _float_step(self.initial_learning_rate, step)
            p = step / tf.cast(self.decay_steps, initial.dtype)
            if self.staircase:
                p = tf.floor(p)
            return self._decayed(initial, tf.cast(self.decay_rate, initial.dtype), p)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "decay_rate": self.decay_rate,
                "staircase": self.staircase, "name": self.name}


@tf_export("keras.optimizers.schedules.ExponentialDecay")
class ExponentialDecay(_StepRatioDecay):
    """initial_learning_rate * decay_rate ** (step / decay_steps), the exponent floored when
    `staircase`."""

    @staticmethod
    def _decayed(initial, rate, p):
        return initial * tf.pow(rate, p)


@tf_export("keras.optimizers.schedules.PiecewiseConstantDecay")
class PiecewiseConstantDecay(LearningRateSchedule):
    """values[0] while step <= boundaries[0], values[i] while boundaries[i-1] < step <=
    boundaries[i], values[-1] after the last boundary."""

    def __init__(self, boundaries, values, name=None):
        if len(boundaries) != len(values) - 1:
            raise ValueError("The length of boundaries should be 1 less than the length of "
                             f"values. Received: boundaries={boundaries} of length "
                             f"{len(boundaries)}, and values={values} of length "
                             f"{len(values)}.")
        self.boundaries = boundaries
        self.values = values
        self.name = name

    def __call__(self, step):
        with tf.name_scope(self.name or "PiecewiseConstant"):
            step = tf.convert_to_tensor(step)
            boundaries = tf.cast(tf.convert_to_tensor(list(self.boundaries)), step.dtype)
            # The interval's index is the number of boundaries the step has passed.
            passed = tf.reduce_sum(tf.cast(tf.greater(step, boundaries), tf.int32))
            return tf.gather(tf.convert_to_tensor(list(self.values)), passed)

    def get_config(self):
        return {"boundaries": self.boundaries, "values": self.values, "name": self.name}


@tf_export("keras.optimizers.schedules.PolynomialDecay")
class PolynomialDecay(LearningRateSchedule):
    """(initial - end) * (1 - step / decay_steps) ** power + end, the step held at decay_steps,
    or with `cycle` the decay stretched to the next multiple of decay_steps."""

    def __init__(self, initial_learning_rate, decay_steps, end_learning_rate=0.0001,
                 power=1.0, cycle=False, name=None):
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.end_learning_rate = end_learning_rate
        self.power = power
        self.cycle = cycle
        self.name = name

    def __call__(self, step):
        with tf.name_scope(self.name or "PolynomialDecay"):
            initial, step = _float_step(self.initial_learning_rate, step)
            end = tf.cast(self.end_learning_rate, initial.dtype)
            decay_steps = tf.cast(self.decay_steps, initial.dtype)
            if self.cycle:
                # Step 0 counts as the first cycle.
                multiplier = tf.where(tf.equal(step, 0.0), tf.ones_like(step),
                                      tf.math.ceil(step / decay_steps))
                decay_steps = decay_steps * multiplier
            else:
                step = tf.minimum(step, decay_steps)
            fraction = 1.0 - step / decay_steps
            return (initial - end) * tf.pow(fraction, tf.cast(self.power, initial.dtype)) + end

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "end_learning_rate": self.end_learning_rate,
                "power": self.power, "cycle": self.cycle, "name": self.name}


@tf_export("keras.optimizers.schedules.InverseTimeDecay")
class InverseTimeDecay(_StepRatioDecay):
    """initial_learning_rate / (1 + decay_rate * step / decay_steps), the ratio floored when
    `staircase`."""

    @staticmethod
    def _decayed(initial, rate, p):
        return initial / (1.0 + rate * p)


def _cosine(fraction, dtype):
    return 0.5 * (1.0 + tf.cos(tf.constant(math.pi, dtype) * fraction))


@tf_export("keras.optimizers.schedules.CosineDecay")
class CosineDecay(LearningRateSchedule):
    """Cosine decay from the initial rate to alpha times it over decay_steps; with a
    `warmup_target`, first a linear rise from the initial rate to it over warmup_steps, then
    the decay from the target."""

    def __init__(self, initial_learning_rate, decay_steps, alpha=0.0, name=None,
                 warmup_target=None, warmup_steps=0):
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.alpha = alpha
        self.name = name
        self.warmup_steps = warmup_steps
        self.warmup_target = warmup_target

    def _decay(self, step, decay_steps, start):
        decayed = (1.0 - self.alpha) * _cosine(step / decay_steps, start.dtype) + self.alpha
        return start * decayed

    def __call__(self, step):
        with tf.name_scope(self.name or "CosineDecay"):
            initial, step = _float_step(self.initial_learning_rate, step)
            decay_steps = tf.cast(self.decay_steps, initial.dtype)
            if self.warmup_target is None:
                return self._decay(tf.minimum(step, decay_steps), decay_steps, initial)
            target = tf.cast(self.warmup_target, initial.dtype)
            warmup_steps = tf.cast(self.warmup_steps, initial.dtype)
            step = tf.minimum(step, decay_steps + warmup_steps)
            warming = (target - initial) * (step / warmup_steps) + initial
            decaying = self._decay(step - warmup_steps, decay_steps, target)
            return tf.where(tf.less(step, warmup_steps), warming, decaying)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "alpha": self.alpha, "name": self.name,
                "warmup_target": self.warmup_target, "warmup_steps": self.warmup_steps}


@tf_export("keras.optimizers.schedules.CosineDecayRestarts")
class CosineDecayRestarts(LearningRateSchedule):
    """Cosine decay restarted after each period (SGDR): period i lasts first_decay_steps *
    t_mul**i steps and starts from initial_learning_rate * m_mul**i."""

    def __init__(self, initial_learning_rate, first_decay_steps, t_mul=2.0, m_mul=1.0,
                 alpha=0.0, name=None):
        self.initial_learning_rate = initial_learning_rate
        self.first_decay_steps = first_decay_steps
        self._t_mul = t_mul
        self._m_mul = m_mul
        self.alpha = alpha
        self.name = name

    def __call__(self, step):
        with tf.name_scope(self.name or "SGDRDecay"):
            initial, step = _float_step(self.initial_learning_rate, step)
            dtype = initial.dtype
            t_mul = tf.cast(self._t_mul, dtype)
            fraction = step / tf.cast(self.first_decay_steps, dtype)
            if self._t_mul == 1.0:
                restart = tf.floor(fraction)
                fraction = fraction - restart
            else:
                # Periods grow geometrically: the restart index solves a geometric sum.
                restart = tf.floor(tf.math.log(1.0 - fraction * (1.0 - t_mul)) /
                                   tf.math.log(t_mul))
                done = (1.0 - tf.pow(t_mul, restart)) / (1.0 - t_mul)
                fraction = (fraction - done) / tf.pow(t_mul, restart)
            scale = tf.pow(tf.cast(self._m_mul, dtype), restart)
            decayed = (1.0 - self.alpha) * scale * _cosine(fraction, dtype) + self.alpha
            return initial * decayed

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "first_decay_steps": self.first_decay_steps, "t_mul": self._t_mul,
                "m_mul": self._m_mul, "alpha": self.alpha, "name": self.name}


_SCHEDULES = {cls.__name__: cls for cls in (
    ExponentialDecay, PiecewiseConstantDecay, PolynomialDecay, InverseTimeDecay, CosineDecay,
    CosineDecayRestarts)}


@tf_export("keras.optimizers.schedules.serialize")
def serialize(learning_rate_schedule):
    """tf-keras 2.13+'s form, which older readers also take (they ignore the extra keys)."""
    return {"module": "keras.optimizers.schedules",
            "class_name": type(learning_rate_schedule).__name__,
            "config": learning_rate_schedule.get_config(), "registered_name": None}


@tf_export("keras.optimizers.schedules.deserialize")
def deserialize(config, custom_objects=None):
    return deserialize_keras_object(config, _SCHEDULES, custom_objects,
                                    printable_module_name="decay")
