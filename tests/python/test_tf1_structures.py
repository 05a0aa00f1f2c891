"""tf.IndexedSlices, required_space_to_batch_paddings, batch_scatter_update and
tf.resource_loader. (Values were compared with TensorFlow's when written.)"""

import os

import numpy as np
import pytest

import flowstone as tf


def test_indexed_slices_fetch_and_conversion():
    slices = tf.IndexedSlices(tf.constant([[1.0, 2.0], [3.0, 4.0]]), tf.constant([0, 3]),
                              tf.constant([5, 2], tf.int64))
    assert slices.dtype == tf.float32 and slices.shape.as_list() == [5, 2]
    with tf.Session() as sess:
        value = sess.run(slices)
    np.testing.assert_array_equal(value.values, [[1.0, 2.0], [3.0, 4.0]])
    assert value.indices.tolist() == [0, 3] and value.dense_shape.tolist() == [5, 2]
    assert tf.convert_to_tensor_or_indexed_slices(slices) is slices
    assert isinstance(tf.convert_to_tensor_or_indexed_slices([1.0]), tf.Tensor)
    with pytest.raises(ValueError, match="Incompatible tensor conversion requested to dtype "
                                         "int32 for IndexedSlices with dtype float32"):
        tf.convert_to_tensor_or_indexed_slices(slices, dtype=tf.int32)
    with pytest.raises(TypeError, match="indices must be integers"):
        tf.IndexedSlices(tf.constant([1.0]), tf.constant([0.5]))


def test_indexed_slices_convert_to_their_dense_tensor_as_in_tensorflow():
    slices = tf.IndexedSlices(tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]),
                              tf.constant([0, 3, 0]), tf.constant([5, 2]))
    dense = tf.convert_to_tensor(slices)
    doubled = tf.multiply(slices, 2.0)  # any op's input converts it
    with tf.Session() as sess:
        got, got_doubled = sess.run([dense, doubled])
    expected = np.zeros([5, 2], np.float32)
    np.add.at(expected, [0, 3, 0], [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])  # repeated rows add
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(got_doubled, 2 * expected)
    with pytest.raises(ValueError, match="requested to `dtype` int32 for IndexedSlices"):
        tf.convert_to_tensor(slices, dtype=tf.int32)
    with pytest.raises(ValueError, match="IndexedSlices for argument `value` without "
                                         "dense_shape"):
        tf.convert_to_tensor(tf.IndexedSlices(tf.ones([2, 2]), tf.constant([0, 1])))


def test_required_space_to_batch_paddings():
    paddings, crops = tf.required_space_to_batch_paddings([5, 7], [2, 3], [[1, 0], [0, 2]])
    plain = tf.required_space_to_batch_paddings([5, 7], [2, 3])
    with tf.Session() as sess:
        p, c, (p2, c2) = sess.run([paddings, crops, plain])
    assert p.tolist() == [[1, 0], [0, 2]] and c.tolist() == [[0, 0], [0, 0]]
    # 5 -> 6 (multiple of 2) and 7 -> 9 (multiple of 3)
    assert p2.tolist() == [[0, 1], [0, 2]] and c2.tolist() == [[0, 1], [0, 2]]


def test_batch_scatter_update():
    ref = tf.Variable(np.zeros((2, 4)))
    update = tf.batch_scatter_update(ref, [[0, 2], [3, 1]], [[1.0, 2.0], [3.0, 4.0]])
    flat = tf.Variable(np.zeros(3))
    flat_update = tf.batch_scatter_update(flat, [2], [5.0])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run([update, flat_update])
        np.testing.assert_array_equal(sess.run(ref), [[1, 0, 2, 0], [0, 4, 0, 3]])
        np.testing.assert_array_equal(sess.run(flat), [0, 0, 5])


def test_resource_loader_paths_are_beside_the_caller():
    here = os.path.dirname(os.path.abspath(__file__))
    assert tf.resource_loader.get_data_files_path() == here
    assert tf.resource_loader.get_path_to_datafile("data/x.txt") == os.path.join(here,
                                                                                 "data/x.txt")
    assert tf.resource_loader.readahead_file_path("/a/b") == "/a/b"
    source = tf.resource_loader.load_resource("platform/resource_loader.py")
    assert b"def load_resource" in source


def test_lists_holding_tensors_are_stacked_as_tensorflow_does():
    x = tf.constant(2.0)
    s = tf.placeholder(tf.float32, [2])
    pair = tf.convert_to_tensor([x, 3])  # the int becomes a float32 constant
    nested = tf.convert_to_tensor([[x, 1.0], [2.0, x]])
    joined = tf.concat([s, [x * x]], 0)  # TF1 code writes this
    assert (pair.name, nested.name) == ("packed:0", "packed_1:0")  # TensorFlow's names
    assert nested.shape.as_list() == [2, 2]
    with tf.Session() as sess:
        got = sess.run([pair, nested, joined], {s: [1.0, 5.0]})
    assert got[0].tolist() == [2.0, 3.0] and got[1].tolist() == [[2.0, 1.0], [2.0, 2.0]]
    assert got[2].tolist() == [1.0, 5.0, 4.0]
    with pytest.raises(TypeError, match="Cannot convert a list containing a tensor of dtype "
                                        "tf.int32 to tf.float32"):
        tf.convert_to_tensor([x, tf.constant(1)])
