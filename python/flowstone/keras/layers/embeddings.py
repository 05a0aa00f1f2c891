"""Embedding: integer ids to dense vectors, with an optional mask for id 0 (padding)."""

import flowstone as tf
from flowstone.keras import constraints, initializers, regularizers
from flowstone.keras.engine.base_layer import Layer
from flowstone.util.tf_export import tf_export


def _serialize(obj, module):
    return None if obj is None else module.serialize(obj)


@tf_export("keras.layers.Embedding")
class Embedding(Layer):
    def __init__(self, input_dim, output_dim, embeddings_initializer="uniform",
                 embeddings_regularizer=None, activity_regularizer=None,
                 embeddings_constraint=None, mask_zero=False, input_length=None, **kwargs):
        if "input_shape" not in kwargs and input_length is not None:
            kwargs["input_shape"] = (input_length,) if isinstance(input_length, int) \
                else tuple(input_length)
        if input_dim <= 0 or output_dim <= 0:
            raise ValueError("Both `input_dim` and `output_dim` should be positive, Received "
                             f"input_dim = {input_dim} and output_dim = {output_dim}")
        kwargs.setdefault("dtype", "float32")
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        self.input_dim, self.output_dim = int(input_dim), int(output_dim)
        self.embeddings_initializer = initializers.get(embeddings_initializer)
        self.embeddings_regularizer = regularizers.get(embeddings_regularizer)
        self.embeddings_constraint = constraints.get(embeddings_constraint)
        self.mask_zero = mask_zero
        self.supports_masking = mask_zero
        self.input_length = input_length

    def build(self, input_shape):
        self.embeddings = self.add_weight("embeddings", (self.input_dim, self.output_dim),
                                          initializer=self.embeddings_initializer,
                                          regularizer=self.embeddings_regularizer,
                                          constraint=self.embeddings_constraint)

    def compute_mask(self, inputs, mask=None):
        if not self.mask_zero:
            return None
        return tf.not_equal(inputs, tf.cast(0, inputs.dtype))

    def call(self, inputs):
        ids = inputs if inputs.dtype in (tf.int32, tf.int64) else tf.cast(inputs, tf.int32)
        return tf.nn.embedding_lookup(self.embeddings.value(), ids)

    def get_config(self):
        return {**super().get_config(), "input_dim": self.input_dim,
                "output_dim": self.output_dim,
                "embeddings_initializer": initializers.serialize(self.embeddings_initializer),
                "embeddings_regularizer": _serialize(self.embeddings_regularizer, regularizers),
                "activity_regularizer": _serialize(self.activity_regularizer, regularizers),
                "embeddings_constraint": _serialize(self.embeddings_constraint, constraints),
                "mask_zero": self.mask_zero, "input_length": self.input_length}
