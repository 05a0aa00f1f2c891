"""`for element in dataset:` while executing eagerly (ops/eager_iterator.py)."""

import numpy as np
import pytest

import flowstone as tf
from flowstone.framework.eager import EagerTensor


def test_iteration_yields_eager_tensors_of_the_pipeline():
    dataset = tf.data.Dataset.from_tensor_slices(np.arange(6, dtype=np.int32))
    dataset = dataset.map(lambda x: x * 2).batch(4)
    batches = list(dataset)
    assert all(isinstance(b, EagerTensor) for b in batches)
    assert [b.numpy().tolist() for b in batches] == [[0, 2, 4, 6], [8, 10]]
    assert repr(batches[1]) == "<tf.Tensor: shape=(2,), dtype=int32, numpy=array([ 8, 10], dtype=int32)>"


def test_eager_tensors_read_by_the_pipeline_and_its_functions():
    values = tf.constant([1.0, 2.0, 3.0, 4.0])
    scale = tf.constant(10.0)
    dataset = tf.data.Dataset.from_tensor_slices(values).map(lambda x: x * scale)
    dataset = dataset.filter(lambda x: x > scale * 1.5)
    assert [float(x) for x in dataset] == [20.0, 30.0, 40.0]


def test_nested_elements_keep_their_structure():
    features = {"a": np.arange(3, dtype=np.float32), "b": np.array([b"x", b"y", b"z"])}
    labels = np.array([0, 1, 0], dtype=np.int64)
    dataset = tf.data.Dataset.from_tensor_slices((features, labels))
    elements = list(dataset)
    assert len(elements) == 3
    first_features, first_label = elements[1]
    assert set(first_features) == {"a", "b"}
    assert float(first_features["a"]) == 1.0
    assert first_features["b"].numpy() == b"y"
    assert first_label.dtype == tf.int64 and int(first_label) == 1


def test_each_iteration_starts_over_and_the_end_is_stop_iteration():
    dataset = tf.data.Dataset.range(3)
    assert [int(x) for x in dataset] == [0, 1, 2]
    assert [int(x) for x in dataset] == [0, 1, 2]
    iterator = iter(dataset)
    assert [int(next(iterator)) for _ in range(3)] == [0, 1, 2]
    with pytest.raises(StopIteration):
        next(iterator)
    with pytest.raises(StopIteration):
        next(iterator)


def test_one_shot_iterator_get_next_raises_out_of_range_at_the_end():
    iterator = tf.data.Dataset.range(2).make_one_shot_iterator()
    assert int(iterator.get_next()) == 0
    assert int(iterator.get_next()) == 1
    with pytest.raises(tf.errors.OutOfRangeError, match="End of sequence"):
        iterator.get_next()
    assert iterator.element_spec.dtype == tf.int64


def test_initializable_iterator_is_refused_as_in_tensorflow():
    with pytest.raises(RuntimeError, match="not supported when eager execution is enabled"):
        tf.data.Dataset.range(2).make_initializable_iterator()


def test_element_spec_of_traced_transformations_is_known_before_iterating():
    dataset = tf.data.Dataset.range(3).interleave(
        lambda x: tf.data.Dataset.from_tensors(x).repeat(2), cycle_length=2)
    assert dataset.element_spec.dtype == tf.int64
    assert [int(x) for x in dataset] == [0, 1, 0, 1, 2, 2]
    mapped = tf.data.Dataset.range(2).map(lambda x: (tf.cast(x, tf.float32), x))
    assert [s.dtype for s in mapped.element_spec] == [tf.float32, tf.int64]


def test_shuffle_with_a_seed_repeats_its_order():
    dataset = tf.data.Dataset.range(10).shuffle(10, seed=7, reshuffle_each_iteration=False)
    first = [int(x) for x in dataset]
    assert sorted(first) == list(range(10)) and first != list(range(10))
    assert [int(x) for x in dataset] == first


def test_errors_in_the_pipeline_are_typed_and_the_iterator_stays_usable():
    dataset = tf.data.Dataset.from_tensor_slices(np.array([1.0, np.inf, 3.0], np.float32))
    dataset = dataset.map(lambda x: tf.debugging.check_numerics(x, "bad value"))
    iterator = iter(dataset)
    assert float(next(iterator)) == 1.0
    with pytest.raises(tf.errors.InvalidArgumentError, match="bad value"):
        next(iterator)
    assert float(next(iterator)) == 3.0


def test_a_training_loop_over_a_dataset_with_gradient_tape():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 3)).astype(np.float32)
    true_w = np.array([[1.0], [-2.0], [0.5]], np.float32)
    y = x @ true_w
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)
    w = tf.Variable(tf.zeros([3, 1]))
    optimizer = tf.train.GradientDescentOptimizer(0.1)
    losses = []
    for _ in range(20):
        for batch_x, batch_y in dataset:
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(tf.matmul(batch_x, w) - batch_y))
            optimizer.apply_gradients(zip(tape.gradient(loss, [w]), [w]))
            losses.append(float(loss))
    assert losses[-1] < 1e-3 * losses[0]
    np.testing.assert_allclose(w.numpy(), true_w, atol=1e-2)
