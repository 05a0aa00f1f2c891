"""tf.disable_v2_tensorshape / enable_v2_tensorshape (and disable_v2_behavior, which calls the
first): TF 1.x programs index shapes to Dimension objects and read `.value`; TensorFlow 2's
behaviour, the default, gives ints and None."""

import numpy as np
import pytest

import flowstone as tf
from flowstone.framework.tensor_shape import Dimension


@pytest.fixture(autouse=True)
def v1_shapes():
    tf.reset_default_graph()
    tf.disable_v2_tensorshape()
    yield
    tf.enable_v2_tensorshape()
    tf.reset_default_graph()


def test_tf1_programs_read_dimension_values():
    x = tf.compat.v1.placeholder(tf.float32, [None, 3, 4])
    assert isinstance(x.shape[1], Dimension) and x.get_shape()[1].value == 3
    assert x.shape[0].value is None
    assert [d.value for d in x.shape] == [None, 3, 4]
    assert x.shape.as_list() == [None, 3, 4]  # as_list stays ints
    assert tf.TensorShape(None)[0].value is None
    flat = tf.reshape(x, [-1, x.shape[1] * x.shape[2]])  # Dimensions inside a shape list
    weights = tf.compat.v1.get_variable("w", [x.shape[2].value, 5])
    dense = tf.compat.v1.layers.dense(flat, x.shape[1])  # a layer given a Dimension
    assert flat.shape.as_list() == [None, 12] and weights.shape.as_list() == [4, 5]
    assert dense.shape.as_list() == [None, 3]
    with tf.Session() as sess:
        sess.run(tf.compat.v1.global_variables_initializer())
        out = sess.run(flat, {x: np.ones([2, 3, 4], np.float32)})
    assert out.shape == (2, 12)


def test_dimension_arithmetic_and_comparisons_follow_tensorflow():
    three, unknown = Dimension(3), Dimension(None)
    assert (three + 1).value == 4 and (2 * three).value == 6 and (three - 1).value == 2
    assert (7 // three).value == 2 and (three % 2).value == 1
    assert (three + unknown).value is None and (unknown * 2).value is None
    assert three < 4 and three >= 3 and (unknown < 4) is None
    assert three == 3 and three != 4 and (unknown == 3) is None
    assert list(range(three)) == [0, 1, 2] and int(three) == 3
    with pytest.raises(ValueError, match="Cannot convert an unknown Dimension to a Tensor: ?"):
        tf.constant([unknown, 2])


def test_v2_behavior_and_the_default_give_ints():
    x = tf.compat.v1.placeholder(tf.float32, [None, 3])
    tf.enable_v2_tensorshape()
    assert x.shape[1] == 3 and type(x.shape[1]) is int and x.shape[0] is None
    tf.compat.v1.disable_v2_behavior()
    assert isinstance(x.shape[1], Dimension)
