"""numeric_column and bucketized_column: real-valued features, as they are or cut into
buckets."""

import numpy as np

import flowstone as tf
from flowstone.feature_column.columns import CategoricalColumn, DenseColumn, IdsAndWeights
from flowstone.util.tf_export import tf_export


class NumericColumn(DenseColumn):
    def __init__(self, key, shape, default_value, dtype, normalizer_fn):
        self.key, self.shape, self.default_value = key, shape, default_value
        self.dtype, self.normalizer_fn = dtype, normalizer_fn
        self.variable_size = int(np.prod(shape))

    name = property(lambda self: self.key)

    def value(self, cache):
        """The normalized float tensor, [batch] + shape."""
        def make():
            raw = cache.raw(self.key)
            if isinstance(raw, tf.SparseTensor):
                raise ValueError(f"The corresponding Tensor of numerical column must be a Tensor. "
                                 f"SparseTensor is not supported. key: {self.key}")
            if self.normalizer_fn is not None:
                raw = self.normalizer_fn(raw)
            return tf.cast(raw, tf.float32)
        return cache.get(self, make)

    def dense(self, cache):
        return tf.reshape(self.value(cache), [-1, self.variable_size])


@tf_export("feature_column.numeric_column")
def numeric_column(key, shape=(1,), default_value=None, dtype=tf.float32, normalizer_fn=None):
    """A real-valued feature of the given per-example shape."""
    shape = (shape,) if isinstance(shape, int) else tuple(int(d) for d in shape)
    if any(d < 1 for d in shape):
        raise ValueError(f"shape dimensions must be greater than 0. shape: {shape}, key: {key}")
    dtype = tf.as_dtype(dtype)
    if not (dtype.is_floating or dtype.is_integer):
        raise ValueError(f"dtype must be convertible to float. dtype: {dtype}, key: {key}")
    if normalizer_fn is not None and not callable(normalizer_fn):
        raise TypeError(f"normalizer_fn must be a callable. Given: {normalizer_fn}")
    return NumericColumn(key, shape, default_value, dtype, normalizer_fn)


class BucketizedColumn(DenseColumn, CategoricalColumn):
    def __init__(self, source_column, boundaries):
        self.source_column, self.boundaries = source_column, boundaries
        self.variable_size = source_column.variable_size * (len(boundaries) + 1)
        self.num_buckets = self.variable_size

    name = property(lambda self: f"{self.source_column.name}_bucketized")

    def buckets(self, cache):
        """[batch, n] int64 bucket of each element: the number of boundaries <= it."""
        def make():
            x = tf.reshape(self.source_column.value(cache), [-1, self.source_column.variable_size])
            edges = tf.constant(self.boundaries, tf.float32)
            return tf.reduce_sum(tf.cast(tf.greater_equal(x[:, :, None], edges), tf.int64), -1)
        return cache.get(self, make)

    def dense(self, cache):
        one_hot = tf.one_hot(self.buckets(cache), len(self.boundaries) + 1, dtype=tf.float32)
        return tf.reshape(one_hot, [-1, self.variable_size])

    def sparse_ids(self, cache):
        # Element i of the source gets its own range of buckets, as TensorFlow's ids do.
        buckets = self.buckets(cache)
        n = self.source_column.variable_size
        offsets = tf.range(n, dtype=tf.int64) * (len(self.boundaries) + 1)
        ids = buckets + offsets
        batch = tf.shape(ids, out_type=tf.int64)[0]
        rows = tf.reshape(tf.tile(tf.range(batch)[:, None], [1, n]), [-1])
        cols = tf.tile(tf.range(n, dtype=tf.int64), [batch])
        sparse = tf.SparseTensor(tf.stack([rows, cols], 1), tf.reshape(ids, [-1]),
                                 tf.stack([batch, tf.constant(n, tf.int64)]))
        return IdsAndWeights(sparse, None)


@tf_export("feature_column.bucketized_column")
def bucketized_column(source_column, boundaries):
    """A numeric column cut into buckets: (-inf, b0), [b0, b1), ..., [bn, inf)."""
    if not isinstance(source_column, NumericColumn):
        raise ValueError(f"source_column must be a column generated with numeric_column(). "
                         f"Given: {source_column}")
    if len(source_column.shape) > 1:
        raise ValueError(f"source_column must be one-dimensional column. Given: {source_column}")
    if (not boundaries or not isinstance(boundaries, (list, tuple)) or
            any(a >= b for a, b in zip(boundaries[:-1], boundaries[1:]))):
        raise ValueError("boundaries must be a sorted list.")
    return BucketizedColumn(source_column, tuple(float(b) for b in boundaries))
