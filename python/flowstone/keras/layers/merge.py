"""Merging layers: Add, Subtract, Multiply, Average, Maximum, Minimum, Concatenate, Dot."""

import functools

import flowstone as tf
from flowstone.keras.engine.base_layer import Layer
from flowstone.util.tf_export import tf_export


class _Merge(Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def _check_inputs(self, inputs):
        if not isinstance(inputs, (list, tuple)) or len(inputs) < 2:
            raise ValueError("A merge layer should be called on a list of inputs. Received: "
                             f"inputs={inputs} (not a list of tensors)")

    def build(self, input_shape):
        if not isinstance(input_shape, (list, tuple)):
            raise ValueError("A merge layer should be called on a list of inputs. Received: "
                             f"input_shape={input_shape} (not a list of shapes)")
        if len(input_shape) < 1:
            raise ValueError("A merge layer should be called on a list of at least 1 input. "
                             f"Got {len(input_shape)} inputs. Full input_shape received: "
                             f"{input_shape}")
        shapes = [tuple(tf.TensorShape(s).as_list()[1:]) for s in input_shape]
        if self._same_shapes and len(set(s for s in shapes if None not in s)) > 1:
            raise ValueError("Inputs have incompatible shapes. Received shapes "
                             f"{shapes[0]} and {shapes[1]}")

    _same_shapes = True

    def call(self, inputs):
        self._check_inputs(inputs)
        return self._merge(list(inputs))

    def compute_mask(self, inputs, mask=None):
        if mask is None or all(m is None for m in mask):
            return None
        masks = [tf.expand_dims(m, 0) for m in mask if m is not None]
        return tf.reduce_all(tf.concat(masks, 0), axis=0)


def _merge_class(name, merge):
    cls = type(name, (_Merge,), {"_merge": staticmethod(merge), "__module__": __name__})
    return tf_export(f"keras.layers.{name}")(cls)


Add = _merge_class("Add", lambda xs: functools.reduce(tf.add, xs))
Multiply = _merge_class("Multiply", lambda xs: functools.reduce(tf.multiply, xs))
Average = _merge_class("Average", lambda xs: functools.reduce(tf.add, xs) / float(len(xs)))
Maximum = _merge_class("Maximum", lambda xs: functools.reduce(tf.maximum, xs))
Minimum = _merge_class("Minimum", lambda xs: functools.reduce(tf.minimum, xs))


@tf_export("keras.layers.Subtract")
class Subtract(_Merge):
    def _merge(self, inputs):
        if len(inputs) != 2:
            raise ValueError("A `Subtract` layer should be called on exactly 2 inputs. "
                             f"Received: inputs={inputs}")
        return inputs[0] - inputs[1]


@tf_export("keras.layers.Concatenate")
class Concatenate(_Merge):
    _same_shapes = False

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis

    def build(self, input_shape):
        super().build(input_shape)
        shapes = [tf.TensorShape(s).as_list() for s in input_shape]
        rank = len(shapes[0])
        axis = self.axis % rank
        reduced = {tuple(d for i, d in enumerate(s) if i != axis and i != 0) for s in shapes
                   if len(s) == rank and None not in s[1:]}
        if len(reduced) > 1 or any(len(s) != rank for s in shapes):
            raise ValueError("A `Concatenate` layer requires inputs with matching shapes except "
                             f"for the concatenation axis. Received: input_shape={input_shape}")

    def _merge(self, inputs):
        return tf.concat(inputs, axis=self.axis)

    def compute_mask(self, inputs, mask=None):
        if mask is None or all(m is None for m in mask):
            return None
        return super().compute_mask(inputs, mask)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}


@tf_export("keras.layers.Dot")
class Dot(_Merge):
    """Dot products between samples of two tensors along `axes` (optionally normalized,
    i.e. cosine proximity)."""

    _same_shapes = False

    def __init__(self, axes, normalize=False, **kwargs):
        super().__init__(**kwargs)
        self.axes = axes
        self.normalize = normalize

    def _merge(self, inputs):
        if len(inputs) != 2:
            raise ValueError("A `Dot` layer should be called on exactly 2 inputs. Received: "
                             f"inputs={inputs}")
        x, y = inputs
        axes = [self.axes, self.axes] if isinstance(self.axes, int) else list(self.axes)
        axes = [a % t.shape.ndims for a, t in zip(axes, (x, y))]
        if self.normalize:
            x = tf.nn.l2_normalize(x, axis=axes[0])
            y = tf.nn.l2_normalize(y, axis=axes[1])
        if x.shape.ndims == 2 and y.shape.ndims == 2:
            return tf.reduce_sum(x * y, axis=1, keepdims=True)
        out = tf.matmul(x, y, transpose_a=axes[0] == 1, transpose_b=axes[1] == 2)
        return out

    def get_config(self):
        return {**super().get_config(), "axes": self.axes, "normalize": self.normalize}


def _functional(cls):
    def merge(inputs, **kwargs):
        return cls(**kwargs)(inputs)
    return merge


add = tf_export("keras.layers.add")(_functional(Add))
multiply = tf_export("keras.layers.multiply")(_functional(Multiply))
average = tf_export("keras.layers.average")(_functional(Average))
maximum = tf_export("keras.layers.maximum")(_functional(Maximum))
minimum = tf_export("keras.layers.minimum")(_functional(Minimum))
subtract = tf_export("keras.layers.subtract")(_functional(Subtract))


@tf_export("keras.layers.concatenate")
def concatenate(inputs, axis=-1, **kwargs):
    return Concatenate(axis=axis, **kwargs)(inputs)


@tf_export("keras.layers.dot")
def dot(inputs, axes, normalize=False, **kwargs):
    return Dot(axes=axes, normalize=normalize, **kwargs)(inputs)
