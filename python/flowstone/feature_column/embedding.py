"""Dense columns over categorical ones: indicator_column (multi-hot counts) and
embedding_column / shared_embedding_columns (learned tables looked up by id)."""

import math

import flowstone as tf
from flowstone.feature_column import sparse_util
from flowstone.feature_column.columns import CategoricalColumn, DenseColumn
from flowstone.util.tf_export import tf_export


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
