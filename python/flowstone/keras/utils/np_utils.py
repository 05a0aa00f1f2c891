"""to_categorical and normalize: numpy helpers for labels and features."""

import numpy as np

from flowstone.util.tf_export import tf_export


@tf_export("keras.utils.to_categorical")
def to_categorical(y, num_classes=None, dtype="float32"):
    y = np.array(y, dtype="int")
    shape = y.shape
    if shape and shape[-1] == 1 and len(shape) > 1:
        shape = tuple(shape[:-1])
    y = y.ravel()
    if not num_classes:
        num_classes = int(np.max(y)) + 1
    categorical = np.zeros((y.shape[0], num_classes), dtype=dtype)
    categorical[np.arange(y.shape[0]), y] = 1
    return np.reshape(categorical, shape + (num_classes,))


@tf_export("keras.utils.normalize")
def normalize(x, axis=-1, order=2):
    norms = np.atleast_1d(np.linalg.norm(x, order, axis))
    norms[norms == 0] = 1
    return x / np.expand_dims(norms, axis)
