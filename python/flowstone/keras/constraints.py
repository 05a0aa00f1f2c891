"""tf.keras.constraints: projections applied to a weight after each optimizer step."""

import flowstone as tf
from flowstone.keras import backend as K
from flowstone.keras.utils.generic_utils import deserialize_keras_object
from flowstone.util.tf_export import tf_export


@tf_export("keras.constraints.Constraint")
class Constraint:
    def __call__(self, w):
        return w

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


@tf_export("keras.constraints.MaxNorm", "keras.constraints.max_norm")
class MaxNorm(Constraint):
    def __init__(self, max_value=2, axis=0):
        self.max_value, self.axis = max_value, axis

    def __call__(self, w):
        norms = tf.sqrt(tf.reduce_sum(tf.square(w), axis=self.axis, keepdims=True))
        desired = tf.clip_by_value(norms, 0.0, self.max_value)
        return w * (desired / (K.epsilon() + norms))

    def get_config(self):
        return {"max_value": self.max_value, "axis": self.axis}


@tf_export("keras.constraints.NonNeg", "keras.constraints.non_neg")
class NonNeg(Constraint):
    def __call__(self, w):
        return w * tf.cast(tf.greater_equal(w, 0.0), w.dtype)


@tf_export("keras.constraints.UnitNorm", "keras.constraints.unit_norm")
class UnitNorm(Constraint):
    def __init__(self, axis=0):
        self.axis = axis

    def __call__(self, w):
        return w / (K.epsilon() + tf.sqrt(tf.reduce_sum(tf.square(w), axis=self.axis,
                                                        keepdims=True)))

    def get_config(self):
        return {"axis": self.axis}


@tf_export("keras.constraints.MinMaxNorm", "keras.constraints.min_max_norm")
class MinMaxNorm(Constraint):
    def __init__(self, min_value=0.0, max_value=1.0, rate=1.0, axis=0):
        self.min_value, self.max_value, self.rate, self.axis = min_value, max_value, rate, axis

    def __call__(self, w):
        norms = tf.sqrt(tf.reduce_sum(tf.square(w), axis=self.axis, keepdims=True))
        desired = (self.rate * tf.clip_by_value(norms, self.min_value, self.max_value)
                   + (1 - self.rate) * norms)
        return w * (desired / (K.epsilon() + norms))

    def get_config(self):
        return {"min_value": self.min_value, "max_value": self.max_value, "rate": self.rate,
                "axis": self.axis}


_BY_NAME = {"MaxNorm": MaxNorm, "NonNeg": NonNeg, "UnitNorm": UnitNorm,
            "MinMaxNorm": MinMaxNorm, "max_norm": MaxNorm, "non_neg": NonNeg,
            "unit_norm": UnitNorm, "min_max_norm": MinMaxNorm}


@tf_export("keras.constraints.serialize")
def serialize(constraint):
    return {"class_name": type(constraint).__name__, "config": constraint.get_config()}


@tf_export("keras.constraints.deserialize")
def deserialize(config, custom_objects=None):
    return deserialize_keras_object(config, _BY_NAME, custom_objects,
                                    printable_module_name="constraint")


@tf_export("keras.constraints.get")
def get(identifier):
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        return deserialize(identifier)()
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret constraint identifier: {identifier!r}")
