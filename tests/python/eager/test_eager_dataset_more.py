"""Dataset.as_numpy_iterator, cardinality, len and get_single_element while executing eagerly,
and the stateful transformations iterated eagerly; numpy results as TensorFlow's
(tf.data.NumpyIterator) where its peer venv is installed."""

import json
import os
import sys

import numpy as np
import pytest

import flowstone as tf
from flowstone.framework.eager import EagerTensor

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from peers import requires_tensorflow, run_tensorflow  # noqa: E402

Dataset = tf.data.Dataset


def test_as_numpy_iterator_yields_numpy_values_in_the_element_structure():
    dataset = Dataset.from_tensor_slices(({"a": np.arange(6, dtype=np.float32).reshape(3, 2)},
                                          [b"x", b"y", b"z"], [1, 2, 3]))
    iterator = dataset.as_numpy_iterator()
    assert isinstance(iterator, tf.data.NumpyIterator)
    elements = list(iterator)
    assert len(elements) == 3
    features, word, label = elements[1]
    assert isinstance(features["a"], np.ndarray) and features["a"].tolist() == [2.0, 3.0]
    assert not features["a"].flags.writeable
    assert word == b"y" and isinstance(word, bytes)
    assert label == 2 and label.dtype == np.int32
    assert [int(x) for x in Dataset.range(3).as_numpy_iterator()] == [0, 1, 2]
    with pytest.raises(StopIteration):
        next(iterator)


def test_as_numpy_iterator_refuses_window_elements():
    with pytest.raises(TypeError, match="not supported for datasets that produce values of type"):
        Dataset.range(4).window(2).as_numpy_iterator()


def test_cardinality_and_len():
    card = Dataset.range(10).batch(3).cardinality()
    assert isinstance(card, EagerTensor) and int(card) == 4
    assert len(Dataset.range(10).batch(3)) == 4
    assert int(tf.data.experimental.cardinality(Dataset.range(2).repeat())) == -1
    with pytest.raises(TypeError, match="The dataset is infinite"):
        len(Dataset.range(2).repeat())
    with pytest.raises(TypeError, match="The dataset length is unknown"):
        len(Dataset.range(5).filter(lambda x: x > 1))
    assert bool(Dataset.range(0))


def test_get_single_element_eagerly():
    values = tf.constant([1.5, 2.5])
    element = Dataset.from_tensors((values, tf.constant(3))).get_single_element()
    assert isinstance(element[0], EagerTensor)
    assert element[0].numpy().tolist() == [1.5, 2.5] and int(element[1]) == 3
    with pytest.raises(tf.errors.InvalidArgumentError, match="Dataset had more than one element"):
        Dataset.range(3).get_single_element()
    with pytest.raises(tf.errors.InvalidArgumentError, match="Dataset was empty"):
        tf.data.experimental.get_single_element(Dataset.range(0))


def test_stateful_transformations_iterate_eagerly():
    step = tf.constant(2, tf.int64)
    sums = Dataset.range(4).scan(tf.constant(0, tf.int64), lambda s, x: (s + x * step, s))
    assert list(sums.as_numpy_iterator()) == [0, 0, 2, 6]
    assert list(Dataset.counter(1).take(3).as_numpy_iterator()) == [1, 2, 3]
    assert list(Dataset.range(9).take_while(lambda x: x < 3).as_numpy_iterator()) == [0, 1, 2]
    words = Dataset.from_tensor_slices([b"a", b"b", b"a"]).unique()
    assert list(words.as_numpy_iterator()) == [b"a", b"b"]


@requires_tensorflow
def test_numpy_values_equal_tensorflows():
    pipelines = [
        "D.from_tensor_slices(([[1.5, 2.0], [3.0, 4.5]], [b'p', b'q'])).map(lambda x, s: (x * 2, s))",
        "D.range(4).batch(3)",
        "D.from_tensor_slices({'k': [1, 2]}).map(lambda d: {'k': d['k'], 'sq': d['k'] ** 2})",
    ]

    def plain(value):
        if isinstance(value, dict):
            return {k: plain(v) for k, v in sorted(value.items())}
        if isinstance(value, (tuple, list)):
            return [plain(v) for v in value]
        if isinstance(value, bytes):
            return [value.decode(), "bytes"]
        return [np.asarray(value).tolist(), str(np.asarray(value).dtype), type(value).__name__]

    ours = {}
    for source in pipelines:
        ours[source] = [plain(e) for e in eval(source, {"D": Dataset, "tf": tf, "np": np}).as_numpy_iterator()]  # noqa: S307
    theirs = json.loads(run_tensorflow(f"""
        import json
        import numpy as np
        import tensorflow as tf
        D = tf.data.Dataset

        def plain(value):
            if isinstance(value, dict):
                return {{k: plain(v) for k, v in sorted(value.items())}}
            if isinstance(value, (tuple, list)):
                return [plain(v) for v in value]
            if isinstance(value, bytes):
                return [value.decode(), "bytes"]
            return [np.asarray(value).tolist(), str(np.asarray(value).dtype), type(value).__name__]

        print(json.dumps({{s: [plain(e) for e in eval(s).as_numpy_iterator()]
                          for s in {pipelines!r}}}))
    """).strip().splitlines()[-1])
    assert ours == theirs


def test_reduce_runs_eagerly():
    total = Dataset.range(5).reduce(tf.constant(0, tf.int64), lambda s, x: s + x)
    assert isinstance(total, EagerTensor) and int(total) == 10
    scale = tf.constant(2.0)
    pair = Dataset.from_tensor_slices([1.0, 2.0]).reduce(
        (tf.constant(0.0), tf.constant(1.0)), lambda s, x: (s[0] + x * scale, s[1] * x))
    assert [float(v) for v in pair] == [6.0, 2.0]
