"""Pooling layers: max and average pooling in 1-D and 2-D, and their global forms."""

import flowstone as tf
from flowstone.keras import backend as K
from flowstone.keras.engine.base_layer import Layer
from flowstone.keras.engine.input_spec import InputSpec
from flowstone.keras.layers.convolutional import (normalize_padding, normalize_tuple,
                                                  to_channels_first, to_channels_last)
from flowstone.util.tf_export import tf_export


class Pooling(Layer):
    rank = 2
    op = "max"

    def __init__(self, pool_size=2, strides=None, padding="valid", data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.pool_size = normalize_tuple(pool_size, self.rank, "pool_size")
        self.strides = normalize_tuple(strides if strides is not None else pool_size,
                                       self.rank, "strides")
        self.padding = normalize_padding(padding)
        self.data_format = data_format or K.image_data_format()
        self.input_spec = InputSpec(ndim=self.rank + 2)

    def call(self, inputs):
        x = to_channels_last(inputs, self.data_format)
        if self.rank == 1:
            x = tf.expand_dims(x, 1)
            ksize, strides = [1, 1, self.pool_size[0], 1], [1, 1, self.strides[0], 1]
        else:
            ksize, strides = [1, *self.pool_size, 1], [1, *self.strides, 1]
        pool = tf.nn.max_pool if self.op == "max" else tf.nn.avg_pool
        out = pool(x, ksize, strides, self.padding.upper())
        if self.rank == 1:
            out = tf.squeeze(out, [1])
        return to_channels_first(out, self.data_format)

    def get_config(self):
        return {**super().get_config(), "pool_size": self.pool_size, "padding": self.padding,
                "strides": self.strides, "data_format": self.data_format}


def _pool_class(name, rank, op, default_pool):
    def __init__(self, pool_size=default_pool, strides=None, padding="valid", data_format=None,
                 **kwargs):
        Pooling.__init__(self, pool_size, strides, padding, data_format, **kwargs)

    cls = type(name, (Pooling,), {"rank": rank, "op": op, "__init__": __init__,
                                  "__module__": __name__})
    aliases = [name, name.replace("Pooling", "Pool")]
    return tf_export(*[f"keras.layers.{a}" for a in aliases])(cls)


MaxPooling1D = _pool_class("MaxPooling1D", 1, "max", 2)
AveragePooling1D = _pool_class("AveragePooling1D", 1, "avg", 2)
MaxPooling2D = _pool_class("MaxPooling2D", 2, "max", (2, 2))
AveragePooling2D = _pool_class("AveragePooling2D", 2, "avg", (2, 2))


class GlobalPooling(Layer):
    rank = 2
    op = "avg"

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(**kwargs)
        self.data_format = data_format or K.image_data_format()
        self.keepdims = keepdims
        self.input_spec = InputSpec(ndim=self.rank + 2)

    def call(self, inputs):
        axes = list(range(1, self.rank + 1)) if self.data_format == "channels_last" else \
            list(range(2, self.rank + 2))
        reduce = tf.reduce_mean if self.op == "avg" else tf.reduce_max
        return reduce(inputs, axis=axes, keepdims=self.keepdims)

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format,
                "keepdims": self.keepdims}


def _global_class(name, rank, op):
    cls = type(name, (GlobalPooling,), {"rank": rank, "op": op, "__module__": __name__})
    aliases = [name, name.replace("Pooling", "Pool")]
    return tf_export(*[f"keras.layers.{a}" for a in aliases])(cls)


GlobalAveragePooling1D = _global_class("GlobalAveragePooling1D", 1, "avg")
GlobalMaxPooling1D = _global_class("GlobalMaxPooling1D", 1, "max")
GlobalAveragePooling2D = _global_class("GlobalAveragePooling2D", 2, "avg")
GlobalMaxPooling2D = _global_class("GlobalMaxPooling2D", 2, "max")
