"""tf.TensorArray over TensorLists: values against numpy, TensorFlow's op names, value semantics,
gradients against float64 finite differences, and the error paths."""

import numpy as np
import pytest

import flowstone as tf


def _run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def test_write_read_stack_and_tensorflow_names():
    ta = tf.TensorArray(tf.float32, size=3)
    written = ta.write(0, [1.0, 2.0]).write(2, [5.0, 6.0])
    first = written.read(0)
    stacked = written.stack()
    assert ta.flow.name == "TensorArrayV2:0"
    assert first.name == "TensorArrayV2Read/TensorListGetItem:0"
    assert stacked.name == "TensorArrayV2Stack/TensorListStack:0"
    assert first.shape.as_list() == [2]
    assert stacked.shape.as_list() == [3, 2]
    got_first, got_stacked = _run([first, stacked])
    np.testing.assert_array_equal(got_first, [1.0, 2.0])
    # The element never written reads as zeros.
    np.testing.assert_array_equal(got_stacked, [[1, 2], [0, 0], [5, 6]])
    assert got_stacked.dtype == np.float32


def test_unstack_gather_concat_split_scatter():
    x = np.arange(12, dtype=np.float64).reshape(4, 3)
    ta = tf.TensorArray(tf.float64, size=4).unstack(x)
    gathered = ta.gather([3, 1])
    concatenated = ta.concat()
    split = tf.TensorArray(tf.float64, size=2).split(x, [1, 3])
    scattered = tf.TensorArray(tf.float64, size=3, element_shape=[3]).scatter([2, 0], x[:2])
    got = _run([gathered, concatenated, split.read(1), scattered.stack(), ta.size(),
                split.size()])
    np.testing.assert_array_equal(got[0], x[[3, 1]])
    np.testing.assert_array_equal(got[1], x.reshape(-1))
    np.testing.assert_array_equal(got[2], x[1:])
    np.testing.assert_array_equal(got[3], [x[1], np.zeros(3), x[0]])
    assert got[4] == 4 and got[5] == 2


def test_dynamic_size_grows_and_reports_its_length():
    ta = tf.TensorArray(tf.int32, size=0, dynamic_size=True)
    for i in range(3):
        ta = ta.write(i, [i, i * i])
    stacked, size = _run([ta.stack(), ta.size()])
    np.testing.assert_array_equal(stacked, [[0, 0], [1, 1], [2, 4]])
    assert size == 3


def test_writes_have_value_semantics():
    ta = tf.TensorArray(tf.float32, size=2, element_shape=[1])
    one = ta.write(0, [1.0])
    two = ta.write(0, [2.0])
    # Reads of the same list several times (clear_after_read is accepted and has no effect).
    again = tf.TensorArray(tf.float32, size=1, clear_after_read=True).write(0, [3.0])
    got = _run([one.stack(), two.stack(), ta.stack(), again.read(0), again.read(0)])
    np.testing.assert_array_equal(got[0], [[1], [0]])
    np.testing.assert_array_equal(got[1], [[2], [0]])
    np.testing.assert_array_equal(got[2], [[0], [0]])
    np.testing.assert_array_equal(got[3], got[4])


def test_gradients_match_finite_differences():
    x0 = np.random.default_rng(3).uniform(-1, 1, size=(3, 2))
    x = tf.placeholder(tf.float64, [3, 2])
    ta = tf.TensorArray(tf.float64, size=3).unstack(x)
    ta = ta.write(1, ta.read(0) * ta.read(2))
    loss = tf.reduce_sum(ta.stack() * np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])) + \
        tf.reduce_sum(tf.square(ta.gather([2, 0])))
    grad = tf.gradients(loss, x)[0]
    with tf.Session() as sess:
        symbolic = sess.run(grad, {x: x0})
        numeric = np.zeros_like(x0)
        eps = 1e-6
        for idx in np.ndindex(x0.shape):
            up, down = x0.copy(), x0.copy()
            up[idx] += eps
            down[idx] -= eps
            numeric[idx] = (sess.run(loss, {x: up}) - sess.run(loss, {x: down})) / (2 * eps)
    np.testing.assert_allclose(symbolic, numeric, rtol=1e-6, atol=1e-7)


def test_gradient_of_split_and_concat():
    x0 = np.random.default_rng(4).uniform(-1, 1, size=(5, 2))
    x = tf.placeholder(tf.float64, [5, 2])
    ta = tf.TensorArray(tf.float64, size=2).split(x, [2, 3])
    loss = tf.reduce_sum(ta.read(1) * 3.0) + tf.reduce_sum(tf.square(ta.concat()))
    grad = _run(tf.gradients(loss, x)[0], {x: x0})
    expected = 2 * x0
    expected[2:] += 3.0
    np.testing.assert_allclose(grad, expected)


def test_out_of_range_indices_name_the_index_and_the_range():
    ta = tf.TensorArray(tf.float32, size=3)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"Trying to modify element 5 in a list with 3 elements; valid "
                                 r"indices are 0 to 2"):
            sess.run(ta.write(5, [1.0]).stack())
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"Trying to access element -1 in a list with 3 elements"):
            sess.run(ta.write(0, [1.0]).read(-1))
        # The session stays usable.
        np.testing.assert_array_equal(sess.run(ta.write(1, [4.0]).read(1)), [4.0])


def test_shape_and_dtype_mismatches_are_build_errors():
    ta = tf.TensorArray(tf.float32, size=2)
    ta = ta.write(0, [1.0, 2.0])
    with pytest.raises(ValueError, match=r"Inconsistent shapes: saw \(3,\) but expected \(2,\)"):
        ta.write(1, [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="TensorArray dtype is float32 but Op is trying to "
                                         "write dtype int32"):
        ta.write(1, tf.constant([1, 2]))
    with pytest.raises(ValueError, match="Size must be provided"):
        tf.TensorArray(tf.float32)


def test_reading_an_unwritten_element_of_unknown_shape_fails_clearly():
    ta = tf.TensorArray(tf.float32, size=2, infer_shape=False)
    with pytest.raises(tf.errors.InvalidArgumentError, match="was never set"):
        _run(ta.read(1))


def test_variant_tensors_cannot_be_fetched():
    ta = tf.TensorArray(tf.float32, size=2)
    with pytest.raises(TypeError, match="TensorArrayV2:0 .* has dtype variant"):
        _run(ta.flow)
    assert ta.flow.dtype == tf.variant


def test_identity_and_close():
    ta = tf.TensorArray(tf.float32, size=1).write(0, 7.0)
    same = ta.identity()
    assert same.flow.op.type == "Identity"
    closed = ta.close()
    got, _ = _run([same.read(0), closed])
    assert got == 7.0
