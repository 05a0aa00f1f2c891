"""Preprocessing layers over numbers: Rescaling and Normalization (with `adapt`)."""

import numpy as np

import flowstone as tf
from flowstone.keras import backend as K
from flowstone.keras.engine import data_adapter
from flowstone.keras.engine.base_layer import Layer
from flowstone.util.tf_export import tf_export


def _listify(value):
    return value.tolist() if isinstance(value, np.ndarray) else value


@tf_export("keras.layers.Rescaling", "keras.layers.experimental.preprocessing.Rescaling")
class Rescaling(Layer):
    """inputs * scale + offset, in the layer's dtype."""

    def __init__(self, scale, offset=0.0, **kwargs):
        super().__init__(**kwargs)
        self.scale = scale
        self.offset = offset

    def call(self, inputs):
        dtype = tf.as_dtype(self._dtype)
        inputs = tf.cast(inputs, dtype)
        return (inputs * tf.cast(self.scale, dtype)) + tf.cast(self.offset, dtype)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "scale": _listify(self.scale),
                "offset": _listify(self.offset)}


@tf_export("keras.layers.Normalization",
           "keras.layers.experimental.preprocessing.Normalization")
class Normalization(Layer):
    """(inputs - mean) / max(sqrt(variance), epsilon), per index of the kept `axis`; `invert`
    maps back. The statistics come from `mean=`/`variance=` or from `adapt(data)`, which
    stores them in the non-trainable weights mean, variance and count (tf-keras's three, so
    weight lists and parameter counts agree)."""

    def __init__(self, axis=-1, mean=None, variance=None, invert=False, **kwargs):
        super().__init__(**kwargs)
        if axis is None:
            axis = ()
        elif isinstance(axis, int):
            axis = (axis,)
        self.axis = tuple(axis)
        if isinstance(mean, tf.Variable) or isinstance(variance, tf.Variable):
            which = "mean" if isinstance(mean, tf.Variable) else "variance"
            raise ValueError(f"Normalization does not support passing a Variable for the "
                             f"`{which}` init arg.")
        if (mean is not None) != (variance is not None):
            raise ValueError("When setting values directly, both `mean` and `variance` must be "
                             f"set. Got mean: {mean} and variance: {variance}")
        self.input_mean = mean
        self.input_variance = variance
        self.invert = invert

    def build(self, input_shape):
        dims = tf.TensorShape(input_shape).as_list()
        ndim = len(dims)
        if any(a < -ndim or a >= ndim for a in self.axis):
            raise ValueError("All `axis` values must be in the range [-ndim, ndim). "
                             f"Found ndim: `{ndim}`, axis: {self.axis}")
        self._keep_axis = sorted(a % ndim for a in self.axis)
        for a in self._keep_axis:
            if dims[a] is None:
                raise ValueError(f"All `axis` values to be kept must have known shape. Got "
                                 f"axis: {self.axis}, input shape: {dims}, with unknown axis "
                                 f"at index: {a}")
        self._reduce_axis = [a for a in range(ndim) if a not in self._keep_axis]
        self._broadcast_shape = [dims[a] if a in self._keep_axis else 1 for a in range(ndim)]
        stats_shape = [dims[a] for a in self._keep_axis]
        if self.input_mean is None:
            self.adapt_mean = self.add_weight("mean", stats_shape, initializer="zeros",
                                              trainable=False)
            self.adapt_variance = self.add_weight("variance", stats_shape, initializer="ones",
                                                  trainable=False)
            self.count = self.add_weight("count", (), dtype=tf.int64, initializer="zeros",
                                         trainable=False)
        self.built = True

    def _statistics(self):
        """The mean and variance, shaped to broadcast against the inputs."""
        if self.input_mean is not None:
            shape = self._broadcast_shape
            stats_shape = [shape[a] for a in self._keep_axis]
            mean = np.asarray(self.input_mean) * np.ones(stats_shape)
            variance = np.asarray(self.input_variance) * np.ones(stats_shape)
            return (tf.constant(mean.reshape(shape), self._dtype),
                    tf.constant(variance.reshape(shape), self._dtype))
        return (tf.reshape(self.adapt_mean.value(), self._broadcast_shape),
                tf.reshape(self.adapt_variance.value(), self._broadcast_shape))

    def call(self, inputs):
        inputs = tf.cast(inputs, self._dtype)
        mean, variance = self._statistics()
        spread = tf.maximum(tf.sqrt(variance), K.epsilon())
        if self.invert:
            return mean + inputs * spread
        return (inputs - mean) / spread

    def compute_output_shape(self, input_shape):
        return input_shape

    def adapt(self, data, batch_size=None, steps=None):
        """Sets mean, variance and count from all of `data` (an array, or a finite
        tf.data.Dataset of arrays) at once: the population statistics over the axes not kept."""
        if self.input_mean is not None:
            raise ValueError("Cannot `adapt` a Normalization layer that is initialized with "
                             f"static `mean` and `variance`, you passed mean "
                             f"{self.input_mean} and variance {self.input_variance}.")
        data = _gather_data(data)
        if not self.built:
            graph = K.get_graph()
            with graph.as_default(), tf.name_scope(self._name):
                self.build(data.shape)
        if data.ndim != len(self._broadcast_shape):
            raise ValueError(f"Normalization {self.name} was built for inputs of rank "
                             f"{len(self._broadcast_shape)}, but `adapt` got data of shape "
                             f"{data.shape}.")
        axes = tuple(self._reduce_axis)
        mean = data.mean(axis=axes) if axes else data
        variance = data.var(axis=axes) if axes else np.zeros_like(data)
        count = int(np.prod([data.shape[a] for a in axes])) if axes else 1
        K.batch_set_value([(self.adapt_mean, mean), (self.adapt_variance, variance),
                           (self.count, np.int64(count))])

    def get_config(self):
        return {**super().get_config(), "axis": self.axis, "invert": self.invert,
                "mean": _listify(self.input_mean), "variance": _listify(self.input_variance)}


def _gather_data(data):
    """`data` as one float64 array: arrays and lists as they are, datasets concatenated."""
    if data_adapter.is_dataset(data):
        reader, batches = data_adapter.DatasetBatches(data), []
        batch = reader.next()
        while batch is not None:
            batches.append(np.asarray(batch))
            batch = reader.next()
        if not batches:
            raise ValueError("Normalization.adapt got an empty dataset.")
        return np.concatenate(batches, axis=0).astype(np.float64)
    if isinstance(data, tf.Tensor):
        data = K.get_value(data)
    return np.asarray(data, dtype=np.float64)
