"""The feature columns: what each raw feature becomes. A dense column gives a float [batch, n]
tensor (`dense`); a categorical column gives int64 ids as a [batch, k] SparseTensor, and
optionally weights (`sparse_ids`). Names, defaults, values and errors follow TensorFlow 1.15's
feature columns; tests compare them with real TensorFlow's tf.compat.v1.feature_column."""

import collections
import math

import numpy as np

import flowstone as tf
from flowstone.feature_column import sparse_util
from flowstone.util.tf_export import tf_export

IdsAndWeights = collections.namedtuple("IdsAndWeights", ["id_tensor", "weight_tensor"])


class FeatureColumn:
    """A column; subclasses are dense, categorical or both. `name` orders columns in layers and
    names their variable scopes (`var_scope_name`, where a column differs)."""

    var_scope_name = property(lambda self: self.name)

    @property
    def name(self):
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}(name={self.name!r})"


class DenseColumn(FeatureColumn):
    """A column whose value is a float [batch, variable_size] tensor."""

    variable_size = None  # the number of floats per example

    def dense(self, cache):
        raise NotImplementedError


class CategoricalColumn(FeatureColumn):
    """A column whose value is ids in [0, num_buckets) (negative ids are dropped later)."""

    num_buckets = None

    def sparse_ids(self, cache):
        raise NotImplementedError


class TransformCache:
    """The raw features and each column's transformed value, computed once per layer call."""

    def __init__(self, features):
        if not isinstance(features, dict):
            raise ValueError(f"features should be a dictionary of `Tensor`s. Given type: "
                             f"{type(features)}")
        self._features = features
        self._values = {}

    def raw(self, key):
        """The feature `key` as a tensor (a SparseTensor stays one); rank 1 becomes [batch, 1]."""
        if key not in self._features:
            raise ValueError(f"The feature {key!r} is not in the features dictionary (keys: "
                             f"{sorted(self._features)}).")
        value = self._features[key]
        if isinstance(value, tf.SparseTensor):
            return value
        value = tf.convert_to_tensor(value)
        if value.shape.ndims == 0:
            raise ValueError(f"Feature (key: {key}) cannot have rank 0. Given: {value}")
        if value.shape.ndims == 1:
            value = tf.expand_dims(value, -1)
        return value

    def get(self, column, make):
        if column not in self._values:
            self._values[column] = make()
        return self._values[column]


# --- numeric and bucketized --------------------------------------------------------------------


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


# --- categorical columns over raw features ----------------------------------------------------


def _ignore_value(dtype):
    return "" if dtype == tf.string else -1


def _check_key_dtype(key, dtype, given):
    if dtype == tf.string and given != tf.string:
        raise ValueError(f"Column dtype and SparseTensors dtype must be compatible. key: {key}, "
                         f"column dtype: {dtype}, tensor dtype: {given}")
    if dtype.is_integer and not given.is_integer:
        raise ValueError(f"Column dtype and SparseTensors dtype must be compatible. key: {key}, "
                         f"column dtype: {dtype}, tensor dtype: {given}")


class _RawCategoricalColumn(CategoricalColumn):
    """A categorical column computed from one raw feature's non-ignored values."""

    def sparse_ids(self, cache):
        def make():
            raw = cache.raw(self.key)
            _check_key_dtype(self.key, self.dtype, raw.dtype)
            sparse = sparse_util.to_sparse_dropping(raw, _ignore_value(raw.dtype))
            values = sparse.values
            if values.dtype.is_integer and values.dtype != tf.int64:
                values = tf.cast(values, tf.int64)
            return IdsAndWeights(sparse_util.with_values(sparse, self.ids_of(values)), None)
        return cache.get(self, make)

    name = property(lambda self: self.key)


def _hash_buckets(values, num_buckets):
    """TensorFlow's hash of feature values: strings by fingerprint, integers by their text."""
    if values.dtype != tf.string:
        values = tf.as_string(values)
    return tf.strings.to_hash_bucket_fast(values, num_buckets)


class HashedCategoricalColumn(_RawCategoricalColumn):
    def __init__(self, key, hash_bucket_size, dtype):
        self.key, self.hash_bucket_size, self.dtype = key, hash_bucket_size, dtype
        self.num_buckets = hash_bucket_size

    def ids_of(self, values):
        return _hash_buckets(values, self.hash_bucket_size)


@tf_export("feature_column.categorical_column_with_hash_bucket")
def categorical_column_with_hash_bucket(key, hash_bucket_size, dtype=tf.string):
    """Ids from hashing strings (or integers as text) into `hash_bucket_size` buckets."""
    if hash_bucket_size is None or hash_bucket_size < 1:
        raise ValueError(f"hash_bucket_size must be at least 1. hash_bucket_size: "
                         f"{hash_bucket_size}, key: {key}")
    dtype = tf.as_dtype(dtype)
    if dtype != tf.string and not dtype.is_integer:
        raise ValueError(f"dtype must be string or integer. dtype: {dtype}, column_name: {key}")
    return HashedCategoricalColumn(key, int(hash_bucket_size), dtype)


class VocabularyColumn(_RawCategoricalColumn):
    """Ids are positions in a vocabulary; others get `default_value` or a hashed oov bucket.
    The lookup compares with the whole vocabulary (TensorFlow uses a hash table; see
    docs/COMPAT.md)."""

    def __init__(self, key, vocabulary, dtype, default_value, num_oov_buckets):
        self.key, self.vocabulary, self.dtype = key, tuple(vocabulary), dtype
        self.default_value, self.num_oov_buckets = default_value, num_oov_buckets
        self.num_buckets = len(self.vocabulary) + num_oov_buckets

    def ids_of(self, values):
        vocab = tf.constant(list(self.vocabulary), dtype=values.dtype)
        matches = tf.equal(values[:, None], vocab[None, :])
        found = tf.reduce_any(matches, axis=1)
        position = tf.argmax(tf.cast(matches, tf.int32), axis=1, output_type=tf.int64)
        if self.num_oov_buckets:
            other = _hash_buckets(values, self.num_oov_buckets) + len(self.vocabulary)
        else:
            other = tf.fill(tf.shape(values), tf.constant(self.default_value, tf.int64))
        return tf.where(found, position, other)


def _vocabulary_column(key, vocabulary, dtype, default_value, num_oov_buckets):
    if num_oov_buckets < 0:
        raise ValueError(f"Invalid num_oov_buckets {num_oov_buckets} in {key}.")
    if default_value is not None and default_value != -1 and num_oov_buckets:
        raise ValueError(f"Can't specify both num_oov_buckets and default_value in {key}.")
    if len(set(vocabulary)) != len(vocabulary):
        raise ValueError(f"Duplicate keys in vocabulary_list {list(vocabulary)} in {key}.")
    default_value = -1 if default_value is None else default_value
    return VocabularyColumn(key, vocabulary, dtype, default_value, num_oov_buckets)


@tf_export("feature_column.categorical_column_with_vocabulary_list")
def categorical_column_with_vocabulary_list(key, vocabulary_list, dtype=None, default_value=-1,
                                            num_oov_buckets=0):
    """Ids from the position of each value in `vocabulary_list` (strings or integers)."""
    if vocabulary_list is None or len(vocabulary_list) < 1:
        raise ValueError(f"vocabulary_list {vocabulary_list} must be non-empty, column_name: {key}")
    is_text = isinstance(vocabulary_list[0], (str, bytes))
    if dtype is None:
        dtype = tf.string if is_text else tf.int64
    dtype = tf.as_dtype(dtype)
    if (dtype == tf.string) != is_text:
        raise ValueError(f"dtype {dtype} and vocabulary dtype do not match, column_name: {key}")
    if not is_text:
        vocabulary_list = [int(v) for v in vocabulary_list]
    return _vocabulary_column(key, vocabulary_list, dtype, default_value, num_oov_buckets)


@tf_export("feature_column.categorical_column_with_vocabulary_file")
def categorical_column_with_vocabulary_file(key, vocabulary_file, vocabulary_size=None,
                                            num_oov_buckets=0, default_value=None,
                                            dtype=tf.string):
    """As categorical_column_with_vocabulary_list, with one vocabulary entry per line of a file
    (its first `vocabulary_size` lines), read when the column is made."""
    if not vocabulary_file:
        raise ValueError(f"Missing vocabulary_file in {key}.")
    if vocabulary_size is not None and vocabulary_size < 1:
        raise ValueError(f"Invalid vocabulary_size in {key}.")
    with tf.io.gfile.GFile(vocabulary_file, "r") as f:
        lines = [line.rstrip("\r\n") for line in f]
    if vocabulary_size is not None:
        if vocabulary_size > len(lines):
            raise ValueError(f"Invalid vocab_size in {key}: {vocabulary_size} exceeds the "
                             f"{len(lines)} lines of {vocabulary_file}.")
        lines = lines[:vocabulary_size]
    dtype = tf.as_dtype(dtype)
    vocabulary = lines if dtype == tf.string else [int(line) for line in lines]
    return _vocabulary_column(key, vocabulary, dtype, default_value, num_oov_buckets)


class IdentityColumn(_RawCategoricalColumn):
    def __init__(self, key, num_buckets, default_value):
        self.key, self.num_buckets, self.default_value = key, num_buckets, default_value
        self.dtype = tf.int64

    def ids_of(self, values):
        in_range = tf.logical_and(tf.greater_equal(values, 0),
                                  tf.less(values, self.num_buckets))
        if self.default_value is None:
            check = tf.debugging.Assert(tf.reduce_all(in_range), [
                f"Returned id out of range [0, {self.num_buckets}) in column {self.key}; pass "
                "default_value to categorical_column_with_identity to map them", values])
            with tf.control_dependencies([check]):
                return tf.identity(values)
        return tf.where(in_range, values, tf.fill(tf.shape(values),
                                                  tf.constant(self.default_value, tf.int64)))


@tf_export("feature_column.categorical_column_with_identity")
def categorical_column_with_identity(key, num_buckets, default_value=None):
    """Integer features that are their own ids, in [0, num_buckets)."""
    if num_buckets < 1:
        raise ValueError(f"num_buckets {num_buckets} < 1, column_name {key}")
    if default_value is not None and not 0 <= default_value < num_buckets:
        raise ValueError(f"default_value {default_value} not in range [0, {num_buckets}), "
                         f"column_name {key}")
    return IdentityColumn(key, int(num_buckets), default_value)


# --- columns over other columns ---------------------------------------------------------------


class WeightedCategoricalColumn(CategoricalColumn):
    def __init__(self, categorical_column, weight_feature_key, dtype):
        self.categorical_column, self.weight_feature_key = categorical_column, weight_feature_key
        self.dtype = dtype
        self.num_buckets = categorical_column.num_buckets

    name = property(lambda self: f"{self.categorical_column.name}_weighted_by_"
                                 f"{self.weight_feature_key}")

    def sparse_ids(self, cache):
        def make():
            ids = self.categorical_column.sparse_ids(cache).id_tensor
            weights = cache.raw(self.weight_feature_key)
            if isinstance(weights, tf.SparseTensor):
                values = weights.values
            else:
                values = tf.gather_nd(weights, ids.indices)
            return IdsAndWeights(ids, sparse_util.with_values(ids, tf.cast(values, self.dtype)))
        return cache.get(self, make)


@tf_export("feature_column.weighted_categorical_column")
def weighted_categorical_column(categorical_column, weight_feature_key, dtype=tf.float32):
    """A categorical column whose ids carry the weights of feature `weight_feature_key` (at the
    same positions)."""
    dtype = tf.as_dtype(dtype)
    if not (dtype.is_floating or dtype.is_integer):
        raise ValueError(f"dtype {dtype} is not convertible to float.")
    return WeightedCategoricalColumn(categorical_column, weight_feature_key, dtype)


class CrossedColumn(CategoricalColumn):
    def __init__(self, keys, hash_bucket_size, hash_key):
        self.keys, self.hash_bucket_size, self.hash_key = keys, hash_bucket_size, hash_key
        self.num_buckets = hash_bucket_size

    def _leaf_keys(self):
        for key in self.keys:
            if isinstance(key, CrossedColumn):
                yield from key._leaf_keys()
            else:
                yield key

    @property
    def name(self):
        return "_X_".join(sorted(k if isinstance(k, str) else k.name for k in self._leaf_keys()))

    def sparse_ids(self, cache):
        def make():
            inputs = []
            for key in self._leaf_keys():
                if isinstance(key, str):
                    inputs.append(cache.raw(key))
                else:
                    inputs.append(key.sparse_ids(cache).id_tensor)
            ids = tf.sparse.cross_hashed(inputs, num_buckets=self.hash_bucket_size,
                                         hash_key=self.hash_key)
            return IdsAndWeights(ids, None)
        return cache.get(self, make)


@tf_export("feature_column.crossed_column")
def crossed_column(keys, hash_bucket_size, hash_key=None):
    """Hashed crosses of raw features (by key) and categorical columns, as TensorFlow hashes
    them (FingerprintCat64 chained from `hash_key`)."""
    if not hash_bucket_size or hash_bucket_size < 1:
        raise ValueError(f"hash_bucket_size must be > 1. hash_bucket_size: {hash_bucket_size}")
    if not keys or len(keys) < 2:
        raise ValueError(f"keys must be a list with length > 1. Given: {keys}")
    for key in keys:
        if not isinstance(key, (str, CategoricalColumn)):
            raise ValueError(f"Unsupported key type. All keys must be either string, or "
                             f"categorical column except HashedCategoricalColumn. Given: {key}")
        if isinstance(key, HashedCategoricalColumn):
            raise ValueError(f"categorical_column_with_hash_bucket is not supported for "
                             f"crossing. Hashing before crossing will increase probability of "
                             f"collision. Instead, use the feature name as a string. Given: {key}")
    return CrossedColumn(tuple(keys), int(hash_bucket_size), hash_key)


class IndicatorColumn(DenseColumn):
    def __init__(self, categorical_column):
        self.categorical_column = categorical_column
        self.variable_size = categorical_column.num_buckets

    name = property(lambda self: f"{self.categorical_column.name}_indicator")

    def dense(self, cache):
        ids, weights = self.categorical_column.sparse_ids(cache)
        hot = tf.one_hot(ids.values, self.variable_size, dtype=tf.float32)
        if weights is not None:
            hot = hot * tf.cast(weights.values, tf.float32)[:, None]
        return tf.unsorted_segment_sum(hot, ids.indices[:, 0], ids.dense_shape[0])


@tf_export("feature_column.indicator_column")
def indicator_column(categorical_column):
    """A multi-hot [batch, num_buckets] tensor of a categorical column (counts, or sums of
    weights, per id)."""
    if not isinstance(categorical_column, CategoricalColumn):
        raise ValueError(f"Unsupported input type. Input must be a CategoricalColumn. Given: "
                         f"{categorical_column}")
    return IndicatorColumn(categorical_column)


class EmbeddingColumn(DenseColumn):
    def __init__(self, categorical_column, dimension, combiner, initializer, max_norm, trainable):
        self.categorical_column, self.dimension = categorical_column, dimension
        self.combiner, self.initializer = combiner, initializer
        self.max_norm, self.trainable = max_norm, trainable
        self.variable_size = dimension

    name = property(lambda self: f"{self.categorical_column.name}_embedding")

    def table(self):
        """The [num_buckets, dimension] embedding variable, in the current variable scope."""
        return tf.get_variable("embedding_weights",
                               [self.categorical_column.num_buckets, self.dimension],
                               dtype=tf.float32, initializer=self.initializer,
                               trainable=self.trainable)

    def dense(self, cache):
        ids, weights = self.categorical_column.sparse_ids(cache)
        table = self.table()
        if self.max_norm is not None:
            table = tf.clip_by_norm(table, self.max_norm, axes=[1])
        return sparse_util.safe_embedding_lookup_sparse(table, ids, weights, self.combiner)


@tf_export("feature_column.embedding_column")
def embedding_column(categorical_column, dimension, combiner="mean", initializer=None,
                     ckpt_to_load_from=None, tensor_name_in_ckpt=None, max_norm=None,
                     trainable=True):
    """A learned [num_buckets, dimension] table; each example is its ids' rows combined by
    `combiner` ("mean", "sqrtn" or "sum")."""
    if dimension is None or dimension < 1:
        raise ValueError(f"Invalid dimension {dimension}.")
    if (ckpt_to_load_from is None) != (tensor_name_in_ckpt is None):
        raise ValueError("Must specify both `ckpt_to_load_from` and `tensor_name_in_ckpt` or "
                         "none of them.")
    if ckpt_to_load_from is not None:
        raise NotImplementedError("embedding_column(ckpt_to_load_from=...) is not supported; "
                                  "use tf.train.init_from_checkpoint after building the model.")
    if initializer is not None and not callable(initializer):
        raise ValueError(f"initializer must be callable if specified. Embedding of column_name: "
                         f"{categorical_column.name}")
    if initializer is None:
        initializer = tf.truncated_normal_initializer(mean=0.0, stddev=1 / math.sqrt(dimension))
    if combiner not in ("mean", "sqrtn", "sum"):
        raise ValueError(f"combiner must be one of 'mean', 'sqrtn' or 'sum', got {combiner!r}")
    return EmbeddingColumn(categorical_column, int(dimension), combiner, initializer, max_norm,
                           trainable)


class SharedEmbeddingColumn(EmbeddingColumn):
    """An embedding column whose table it shares with the other columns of its
    shared_embedding_columns call, through the graph collection named `collection_name`."""

    def __init__(self, categorical_column, dimension, combiner, initializer, max_norm, trainable,
                 collection_name):
        super().__init__(categorical_column, dimension, combiner, initializer, max_norm,
                         trainable)
        self.collection_name = collection_name

    name = property(lambda self: f"{self.categorical_column.name}_shared_embedding")
    # The table is made under the collection's name, as TensorFlow names it.
    var_scope_name = property(lambda self: self.collection_name)

    def table(self):
        shape = [self.categorical_column.num_buckets, self.dimension]
        existing = tf.get_collection(self.collection_name)
        if existing:
            table = existing[0]
            if table.shape.as_list() != shape:
                raise ValueError(f"Shape of shared embedding weights {table.shape} does not "
                                 f"match the columns' {shape} (collection "
                                 f"{self.collection_name}).")
            return table
        table = super().table()
        tf.add_to_collection(self.collection_name, table)
        return table


@tf_export("feature_column.shared_embedding_columns")
def shared_embedding_columns(categorical_columns, dimension, combiner="mean", initializer=None,
                             shared_embedding_collection_name=None, ckpt_to_load_from=None,
                             tensor_name_in_ckpt=None, max_norm=None, trainable=True):
    """Embedding columns of categorical columns with the same number of buckets, all looking
    their ids up in one table."""
    columns = list(categorical_columns)
    if not columns:
        raise ValueError("categorical_columns must not be empty.")
    first = embedding_column(columns[0], dimension, combiner, initializer, ckpt_to_load_from,
                             tensor_name_in_ckpt, max_norm, trainable)
    for column in columns:
        if not isinstance(column, CategoricalColumn):
            raise ValueError(f"All categorical_columns must be subclasses of "
                             f"_CategoricalColumn. Given: {column}")
        if column.num_buckets != columns[0].num_buckets:
            raise ValueError(f"To use shared_embedding_column, all categorical_columns must have "
                             f"the same number of buckets. Given column: {columns[0]} with "
                             f"buckets: {columns[0].num_buckets} does not match column: {column} "
                             f"with buckets: {column.num_buckets}")
    name = shared_embedding_collection_name or (
        "_".join(sorted(c.name for c in columns)) + "_shared_embedding")
    return [SharedEmbeddingColumn(c, first.dimension, first.combiner, first.initializer,
                                  first.max_norm, first.trainable, name) for c in columns]

