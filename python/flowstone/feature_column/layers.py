"""input_layer and linear_model: feature columns applied to a features dict, in variable
scopes named as TensorFlow names them (input_layer/<column>/embedding_weights,
linear_model/<column>/weights, linear_model/bias_weights), so checkpoints line up."""

import flowstone as tf
from flowstone.feature_column import sparse_util
from flowstone.feature_column.columns import (CategoricalColumn, DenseColumn, FeatureColumn,
                                              TransformCache)
from flowstone.util.tf_export import tf_export


def _sorted_columns(feature_columns, kind, message):
    if isinstance(feature_columns, FeatureColumn):
        feature_columns = [feature_columns]
    feature_columns = list(feature_columns or [])
    if not feature_columns:
        raise ValueError("feature_columns must not be empty.")
    for column in feature_columns:
        if not isinstance(column, kind):
            raise ValueError(f"{message} Given: {column}")
    names = [c.name for c in feature_columns]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"Duplicate feature column name found for columns: {duplicates}.")
    return sorted(feature_columns, key=lambda c: c.name)


@tf_export("feature_column.input_layer")
def input_layer(features, feature_columns, weight_collections=None, trainable=True,
                cols_to_vars=None, cols_to_output_tensors=None):
    """The dense columns of `features` side by side: a float [batch, sum of sizes] tensor, the
    columns ordered by name."""
    del weight_collections
    columns = _sorted_columns(
        feature_columns, DenseColumn,
        "Items of feature_columns must be a _DenseColumn. You can wrap a categorical column "
        "with an embedding_column or indicator_column.")
    cache = TransformCache(features)
    outputs = []
    with tf.variable_scope(None, default_name="input_layer"):
        for column in columns:
            with tf.variable_scope(None, default_name=column.var_scope_name) as scope:
                before = set(tf.global_variables())
                value = tf.reshape(column.dense(cache), [-1, column.variable_size])
                if not trainable:
                    _untrain([v for v in tf.global_variables() if v not in before])
                if cols_to_vars is not None:
                    cols_to_vars[column] = [v for v in tf.global_variables()
                                            if v.op.name.startswith(scope.name + "/")]
            if cols_to_output_tensors is not None:
                cols_to_output_tensors[column] = value
            outputs.append(value)
        return tf.concat(outputs, 1)


def _untrain(variables):
    trainable = tf.get_collection_ref(tf.GraphKeys.TRAINABLE_VARIABLES)
    for v in variables:
        if v in trainable:
            trainable.remove(v)


@tf_export("feature_column.linear_model")
def linear_model(features, feature_columns, units=1, sparse_combiner="sum",
                 weight_collections=None, trainable=True, cols_to_vars=None):
    """A linear prediction [batch, units]: each column times its weights (zeros at first), plus
    a bias. Categorical columns look their ids' weights up, combined by `sparse_combiner`."""
    del weight_collections
    columns = _sorted_columns(
        feature_columns, (DenseColumn, CategoricalColumn),
        "Items of feature_columns must be either a _DenseColumn or _CategoricalColumn.")
    cache = TransformCache(features)
    predictions = []
    with tf.variable_scope(None, default_name="linear_model"):
        for column in columns:
            with tf.variable_scope(None, default_name=column.name):
                if isinstance(column, CategoricalColumn):
                    weights = tf.get_variable("weights", [column.num_buckets, units],
                                              initializer=tf.zeros_initializer(),
                                              trainable=trainable)
                    ids, id_weights = column.sparse_ids(cache)
                    predictions.append(sparse_util.safe_embedding_lookup_sparse(
                        weights, ids, id_weights, sparse_combiner))
                else:
                    weights = tf.get_variable("weights", [column.variable_size, units],
                                              initializer=tf.zeros_initializer(),
                                              trainable=trainable)
                    dense = tf.reshape(column.dense(cache), [-1, column.variable_size])
                    predictions.append(tf.matmul(dense, weights))
                if cols_to_vars is not None:
                    cols_to_vars[column] = [weights]
        bias = tf.get_variable("bias_weights", [units], initializer=tf.zeros_initializer(),
                               trainable=trainable)
        if cols_to_vars is not None:
            cols_to_vars["bias"] = [bias]
        return tf.nn.bias_add(tf.add_n(predictions), bias, name="weighted_sum")
