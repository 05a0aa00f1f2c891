"""The categorical columns: ids from a raw feature's values (hash buckets, vocabularies,
identity), weighted ids, and hashed crosses of features and columns."""

import flowstone as tf
from flowstone.feature_column import sparse_util
from flowstone.feature_column.columns import CategoricalColumn, IdsAndWeights
from flowstone.util.tf_export import tf_export


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
