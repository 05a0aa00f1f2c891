"""orthogonal / uniform_unit_scaling initializers by their defining properties, and the
variable partitioners against the partitions TensorFlow computes (written down from TF 2's
tf.compat.v1 for these shapes)."""

import numpy as np
import pytest

import flowstone as tf


def test_orthogonal_initializer():
    tall = tf.get_variable("tall", [6, 3], initializer=tf.orthogonal_initializer(gain=2.0),
                           dtype=tf.float64)
    wide = tf.get_variable("wide", [2, 2, 5], initializer=tf.initializers.orthogonal(),
                           dtype=tf.float64)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        t, w = sess.run([tall, wide])
    np.testing.assert_allclose(t.T @ t, 4.0 * np.eye(3), atol=1e-10)
    flat = w.reshape(4, 5)
    np.testing.assert_allclose(flat @ flat.T, np.eye(4), atol=1e-10)
    with pytest.raises(ValueError, match="at least two-dimensional"):
        tf.orthogonal_initializer()([3])


def test_uniform_unit_scaling_initializer():
    init = tf.uniform_unit_scaling_initializer(factor=1.5, seed=3)
    values = init([40, 30, 25])
    with tf.Session() as sess:
        v = sess.run(values)
    limit = 1.5 * np.sqrt(3.0 / (40 * 30))
    assert np.abs(v).max() <= limit and np.abs(v).max() > 0.95 * limit
    assert abs(v.mean()) < 0.05 * limit


# shape, dtype, variable_axis_size_partitioner(4096), (100000, max_shards=3),
# min_max_variable_partitioner(8, min_slice_size=1024), (3, axis=1): TensorFlow's results.
EXPECTED = [
    ([1000, 64], tf.float32, [63, 1], [3, 1], [8, 1], [1, 1]),
    ([1000, 64], tf.float64, [125, 1], [3, 1], [8, 1], [1, 2]),
    ([7, 3], tf.float32, [1, 1], [1, 1], [1, 1], [1, 1]),
    ([100000, 128], tf.float64, [25000, 1], [3, 1], [8, 1], [1, 3]),
    ([50, 10, 4], tf.float64, [5, 1, 1], [1, 1, 1], [8, 1, 1], [1, 1, 1]),
]


@pytest.mark.parametrize("shape,dtype,by_size,capped,min_max,min_max_axis1", EXPECTED)
def test_partitioners(shape, dtype, by_size, capped, min_max, min_max_axis1):
    shape = tf.TensorShape(shape)
    assert tf.variable_axis_size_partitioner(4096)(shape, dtype) == by_size
    assert tf.variable_axis_size_partitioner(100000, max_shards=3)(shape, dtype) == capped
    assert tf.min_max_variable_partitioner(8, min_slice_size=1024)(shape, dtype) == min_max
    assert tf.min_max_variable_partitioner(3, axis=1)(shape, dtype) == min_max_axis1


def test_partitioner_errors():
    with pytest.raises(ValueError, match="max_shard_bytes and bytes_per_string_element must be"):
        tf.variable_axis_size_partitioner(0)
    with pytest.raises(ValueError, match="Can not partition variable along axis 2"):
        tf.min_max_variable_partitioner(2, axis=2)(tf.TensorShape([3, 4]), tf.float32)
