"""tf.autograph without a converter: do_not_convert leaves a function as it is (traced by
tf.function as written), verbosity round-trips, and the converting entry points raise
NotImplementedError naming tf.cond / tf.while_loop."""

import numpy as np
import pytest

import flowstone as tf


def test_do_not_convert_with_and_without_parentheses_keeps_the_function():
    @tf.autograph.experimental.do_not_convert
    def double(x):
        return x * 2.0

    @tf.autograph.experimental.do_not_convert()
    def triple(x):
        return x * 3.0

    assert double.__name__ == "double" and triple.__name__ == "triple"
    assert tf.autograph.do_not_convert is tf.autograph.experimental.do_not_convert
    traced = tf.function(lambda x: double(x) + triple(x))
    x = tf.placeholder(tf.float32, [2])
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(traced(x), {x: [1.0, 2.0]}), [5.0, 10.0])


def test_verbosity_and_feature_flags():
    before = tf.autograph.get_verbosity()
    tf.autograph.set_verbosity(3)
    assert tf.autograph.get_verbosity() == 3
    tf.autograph.set_verbosity(before)
    assert tf.autograph.experimental.Feature.ALL.value == "ALL"
    tf.autograph.experimental.set_loop_options(maximum_iterations=3)


@pytest.mark.parametrize("convert", ["to_graph", "to_code"])
def test_converting_raises_naming_the_replacement(convert):
    with pytest.raises(NotImplementedError, match="tf.cond / tf.while_loop"):
        getattr(tf.autograph, convert)(lambda x: x)
