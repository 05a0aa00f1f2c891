"""tf.keras.regularizers: weight penalties added to a layer's losses."""

import flowstone as tf
from flowstone.keras.utils.generic_utils import deserialize_keras_object
from flowstone.util.tf_export import tf_export


@tf_export("keras.regularizers.Regularizer")
class Regularizer:
    def __call__(self, x):
        return 0.0

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


@tf_export("keras.regularizers.L1L2")
class L1L2(Regularizer):
    """l1 * sum(|x|) + l2 * sum(x^2)."""

    def __init__(self, l1=0.0, l2=0.0):
        self.l1, self.l2 = float(l1), float(l2)

    def __call__(self, x):
        total = tf.constant(0.0, dtype=x.dtype)
        if self.l1:
            total = total + self.l1 * tf.reduce_sum(tf.abs(x))
        if self.l2:
            total = total + self.l2 * tf.reduce_sum(tf.square(x))
        return total

    def get_config(self):
        return {"l1": self.l1, "l2": self.l2}


@tf_export("keras.regularizers.L1", "keras.regularizers.l1")
class L1(L1L2):
    def __init__(self, l1=0.01, **kwargs):
        super().__init__(l1=kwargs.pop("l", l1))

    def get_config(self):
        return {"l1": self.l1}


@tf_export("keras.regularizers.L2", "keras.regularizers.l2")
class L2(L1L2):
    def __init__(self, l2=0.01, **kwargs):
        super().__init__(l2=kwargs.pop("l", l2))

    def get_config(self):
        return {"l2": self.l2}


@tf_export("keras.regularizers.l1_l2")
def l1_l2(l1=0.01, l2=0.01):
    return L1L2(l1=l1, l2=l2)


_BY_NAME = {"L1L2": L1L2, "L1": L1, "L2": L2, "l1": L1, "l2": L2, "l1_l2": l1_l2}


@tf_export("keras.regularizers.serialize")
def serialize(regularizer):
    return {"class_name": type(regularizer).__name__, "config": regularizer.get_config()}


@tf_export("keras.regularizers.deserialize")
def deserialize(config, custom_objects=None):
    return deserialize_keras_object(config, _BY_NAME, custom_objects,
                                    printable_module_name="regularizer")


@tf_export("keras.regularizers.get")
def get(identifier):
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        found = deserialize(identifier)
        return found() if isinstance(found, type) or found is l1_l2 else found
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret regularizer identifier: {identifier!r}")
