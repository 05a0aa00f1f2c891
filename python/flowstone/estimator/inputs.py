"""tf.estimator.inputs (also tf.compat.v1.estimator.inputs): input functions over numpy arrays
and pandas DataFrames. TensorFlow feeds them through queues; here they are a tf.data pipeline
(from_tensor_slices, shuffle, repeat, batch) read by a one-shot iterator, so `queue_capacity`
and `num_threads` have no effect (see docs/COMPAT.md)."""

import collections

import numpy as np

import flowstone as tf
from flowstone.util.tf_export import tf_export

_DIRECT_INPUT_KEY = "__direct_np_input__"
_TARGET_KEY = "__target_key__"


def _check_shuffle(shuffle):
    if not isinstance(shuffle, bool):
        raise ValueError(f"shuffle must be provided and explicitly set as boolean (it is "
                         f"recommended to set it as True for training); got {shuffle}")


def _features_dict(x):
    if isinstance(x, dict):
        if not x:
            raise ValueError("x cannot be an empty dict")
        return collections.OrderedDict(sorted((k, np.asarray(v)) for k, v in x.items()))
    return collections.OrderedDict([(_DIRECT_INPUT_KEY, np.asarray(x))])


def _batches(data, batch_size, num_epochs, shuffle, seed=None):
    """(the next batch of every array in `data`, keyed as `data`)."""
    dataset = tf.data.Dataset.from_tensor_slices(dict(data))
    if shuffle:
        length = len(next(iter(data.values())))
        dataset = dataset.shuffle(max(length, 1), seed=seed)
    dataset = dataset.repeat(num_epochs).batch(batch_size)
    return tf.data.make_one_shot_iterator(dataset).get_next()


@tf_export("estimator.inputs.numpy_input_fn")
def numpy_input_fn(x, y=None, batch_size=128, num_epochs=1, shuffle=None, queue_capacity=1000,
                   num_threads=1):
    """An input_fn yielding batches of `x` (a dict of arrays, or one array) and `y` (an array
    or a dict of arrays, or None) for `num_epochs` epochs (None: forever); the last batch may be
    smaller."""
    del queue_capacity, num_threads
    _check_shuffle(shuffle)

    def input_fn():
        data = _features_dict(x)
        feature_keys = list(data)
        target_keys = None
        if isinstance(y, dict):
            if not y:
                raise ValueError("y cannot be empty dict, use None instead.")
            target_keys = sorted(y)
            duplicates = set(feature_keys) & set(target_keys)
            if duplicates:
                raise ValueError(f"{len(duplicates)} duplicate keys are found in both x and y: "
                                 f"{duplicates}")
            data.update((k, np.asarray(y[k])) for k in target_keys)
        elif y is not None:
            target_keys = _TARGET_KEY
            data[_TARGET_KEY] = np.asarray(y)
        if len({len(v) for v in data.values()}) != 1:
            x_shapes = {k: data[k].shape for k in feature_keys}
            if target_keys is None:
                y_shapes = None
            elif isinstance(target_keys, str):
                y_shapes = data[_TARGET_KEY].shape
            else:
                y_shapes = {k: data[k].shape for k in target_keys}
            raise ValueError(f"Length of tensors in x and y is mismatched. All elements in x and "
                             f"y must have the same length.\nShapes in x: {x_shapes}\nShapes in "
                             f"y: {y_shapes}\n")
        batch = _batches(data, batch_size, num_epochs, shuffle)
        features = (batch[_DIRECT_INPUT_KEY] if _DIRECT_INPUT_KEY in batch
                    else {k: batch[k] for k in feature_keys})
        if target_keys is None:
            return features
        if isinstance(target_keys, str):
            return features, batch[_TARGET_KEY]
        return features, {k: batch[k] for k in target_keys}

    return input_fn


@tf_export("estimator.inputs.pandas_input_fn")
def pandas_input_fn(x, y=None, batch_size=128, num_epochs=1, shuffle=None, queue_capacity=1000,
                    num_threads=1, target_column="target"):
    """An input_fn over the columns of the DataFrame `x` (features by column name) and the
    Series or DataFrame `y`. Needs pandas."""
    try:
        import pandas as pd
    except ImportError:
        raise TypeError("pandas_input_fn should not be called without pandas installed") \
            from None
    del queue_capacity, num_threads
    _check_shuffle(shuffle)
    if y is not None and target_column in x:
        raise ValueError(f"Cannot use name {target_column} for target column: DataFrame "
                         f"already has a column with that name: {list(x.columns)}")
    if y is not None and not np.array_equal(x.index, y.index):
        raise ValueError(f"Index for x and y are mismatched.\nIndex for x: {x.index}\n"
                         f"Index for y: {y.index}\n")
    features = {str(name): x[name].to_numpy() for name in x.columns}
    if y is None:
        labels = None
    elif isinstance(y, pd.DataFrame):
        labels = {str(name): y[name].to_numpy() for name in y.columns}
    else:
        labels = y.to_numpy()
    return numpy_input_fn(features, labels, batch_size=batch_size, num_epochs=num_epochs,
                          shuffle=shuffle)
