"""tf.lookup tables in eager mode: built and initialized at once, used directly, in tf.function
and in Dataset.map."""

import numpy as np
import pytest

import flowstone as tf


def _table():
    return tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(["a", "b"], tf.constant([1, 2], tf.int64)), -1)


def test_static_table_is_ready_at_once():
    table = _table()
    assert table.lookup(tf.constant(["b", "z", "a"])).numpy().tolist() == [2, -1, 1]
    assert table.size().numpy() == 2
    keys, values = table.export()
    assert keys.numpy().tolist() == [b"a", b"b"] and values.numpy().tolist() == [1, 2]
    # Two tables are two resources, however they are named.
    other = tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(["a"], tf.constant([9], tf.int64)), -1)
    assert other.lookup(tf.constant(["a"])).numpy().tolist() == [9]
    assert table.lookup(tf.constant(["a"])).numpy().tolist() == [1]


def test_vocabulary_table_in_function_and_dataset(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("red\ngreen\nblue\n")
    table = tf.lookup.StaticVocabularyTable(
        tf.lookup.TextFileInitializer(str(vocab), tf.string, -2, tf.int64, -1), 1)

    @tf.function
    def ids(words):
        return table.lookup(words)

    assert ids(tf.constant(["blue", "red", "pink"])).numpy().tolist() == [2, 0, 3]
    dataset = tf.data.Dataset.from_tensor_slices(["green", "pink"]).map(table.lookup)
    assert [int(x) for x in dataset] == [1, 3]


def test_mutable_table_and_errors():
    table = tf.lookup.experimental.MutableHashTable(tf.int64, tf.float32, [0.0, 0.0])
    table.insert(tf.constant([4], tf.int64), tf.constant([[1.0, 2.0]]))
    np.testing.assert_array_equal(table.lookup(tf.constant([4, 5], tf.int64)).numpy(),
                                  [[1.0, 2.0], [0.0, 0.0]])
    with pytest.raises(TypeError, match="must be int64"):
        table.lookup(tf.constant(["x"]))
    with pytest.raises(tf.errors.FailedPreconditionError, match="different value for same key"):
        tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(tf.constant([1, 1], tf.int64), [1.0, 2.0]), 0.0)
