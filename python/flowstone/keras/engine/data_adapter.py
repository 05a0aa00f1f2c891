"""The data fit/evaluate/predict accept: numpy arrays (single, lists, dicts by input name),
Python generators, keras.utils.Sequence and tf.data datasets, turned into batches of numpy
arrays."""

import math

import numpy as np

import flowstone as tf
from flowstone.keras import backend as K
from flowstone.util import nest


def as_list(data, names, what):
    """[array per input/output] from an array, a list/tuple of arrays, or a dict by name."""
    if data is None:
        return None
    if isinstance(data, dict):
        missing = [n for n in names if n not in data]
        if missing:
            raise ValueError(f"No data provided for {what} {missing[0]!r}. Need data for "
                             f"each key in: {names}")
        return [np.asarray(data[n]) for n in names]
    if isinstance(data, (list, tuple)):
        return [np.asarray(d) for d in data]
    return [np.asarray(data)]


def num_samples(xs, ys=None, sample_weights=None):
    """The one sample count all arrays share, or Keras's "cardinality is ambiguous" error."""
    groups = [("x", xs), ("y", ys), ("sample_weight", sample_weights)]
    sizes = {len(a) for _, arrays in groups for a in arrays or [] if a is not None}
    if len(sizes) > 1:
        lines = [f"  {label} sizes: {', '.join(str(len(a)) for a in arrays if a is not None)}"
                 for label, arrays in groups if arrays]
        raise ValueError("Data cardinality is ambiguous:\n" + "\n".join(lines) +
                         "\nMake sure all arrays contain the same number of samples.")
    return sizes.pop() if sizes else 0


def is_dataset(data):
    return isinstance(data, tf.data.Dataset)


class DatasetBatches:
    """A dataset's elements one at a time as numpy structures, None at its end: eagerly through
    the dataset's eager iterator; in graph mode through one initializable iterator in the
    default graph, run by Keras's session (the input pipeline itself runs in C++ either way).
    `restart` begins the dataset again (a new epoch without steps_per_epoch)."""

    def __init__(self, dataset):
        self._dataset = dataset
        self._eager = tf.executing_eagerly()
        self._errors = tf.errors
        if self._eager:
            self._iterator = iter(dataset)
        else:
            iterator = dataset.make_initializable_iterator()
            self._initializer, self._next = iterator.initializer, iterator.get_next()
            self._session = K.get_session()
            self._session.run(self._initializer)

    def restart(self):
        if self._eager:
            self._iterator = iter(self._dataset)
        else:
            self._session.run(self._initializer)

    def next(self):
        try:
            if self._eager:
                return nest.map_structure(lambda t: t.numpy(), next(self._iterator))
            return self._session.run(self._next)
        except (StopIteration, self._errors.OutOfRangeError):
            return None


def is_generator_like(data):
    return hasattr(data, "__next__") or (hasattr(data, "__getitem__") and
                                         hasattr(data, "__len__") and
                                         hasattr(data, "on_epoch_end"))


def is_sequence(data):
    from flowstone.keras.utils.data_utils import Sequence
    return isinstance(data, Sequence)


def unpack(batch):
    """(x, y, sample_weight) from what a generator yields."""
    if isinstance(batch, tuple):
        if len(batch) == 1:
            return batch[0], None, None
        if len(batch) == 2:
            return batch[0], batch[1], None
        if len(batch) == 3:
            return batch
    if isinstance(batch, list) and len(batch) in (2, 3):
        return (tuple(batch) + (None,))[:3]
    return batch, None, None


def array_batches(num, batch_size, shuffle, rng=np.random):
    """Index slices for one epoch: all samples, in order or shuffled."""
    steps = int(math.ceil(num / batch_size)) if num else 0
    if shuffle == "batch":
        order = rng.permutation(steps)
        return [np.arange(i * batch_size, min(num, (i + 1) * batch_size)) for i in order]
    if shuffle:
        permutation = rng.permutation(num)
        return [permutation[i * batch_size:(i + 1) * batch_size] for i in range(steps)]
    return [slice(i * batch_size, min(num, (i + 1) * batch_size)) for i in range(steps)]


def take(arrays, index):
    if arrays is None:
        return None
    return [None if a is None else a[index] for a in arrays]


def class_weights_for(y, class_weight):
    """Per-sample weights from {class: weight}; a class is the label, or argmax of one-hot."""
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] > 1:
        classes = np.argmax(y, axis=1)
    elif y.ndim == 2 and y.shape[1] == 1:
        classes = np.round(y[:, 0]).astype(np.int64)
    else:
        classes = np.round(y).astype(np.int64)
    weights = np.ones(len(classes), dtype=np.float32)
    for cls, weight in class_weight.items():
        weights[classes == int(cls)] = weight
    return weights
