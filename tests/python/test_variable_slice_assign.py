"""Assigning to a slice of a variable (`v[1:3].assign(x)`, ResourceStridedSliceAssign), in graph
mode and eagerly, against numpy's `a[spec] = x`: strides, negative steps, ellipsis, new axes and
single indices, strings, a value of the wrong shape (an InvalidArgumentError that leaves the
variable as it was), and a fetched value that does not change when the variable is written."""

import numpy as np
import pytest

import flowstone as tf

SPECS = [
    (np.s_[0], lambda shape: shape[1:]),
    (np.s_[:, 1:], None),
    (np.s_[1, ::-1], None),
    (np.s_[::2, 2], None),
    (np.s_[..., 0], None),
    (np.s_[-1:, None, 1:3], None),
]


def _expected(start, spec, value):
    out = start.copy()
    out[spec] = np.reshape(value, np.shape(out[spec]))
    return out


@pytest.mark.parametrize("spec", [s for s, _ in SPECS], ids=repr)
def test_graph_slice_assign_matches_numpy(spec):
    start = np.arange(12.0).reshape(3, 4)
    value = -np.arange(start[spec].size, dtype=np.float64).reshape(start[spec].shape) - 1
    v = tf.Variable(start)
    assigned = v[spec].assign(value)
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(assigned), _expected(start, spec, value))
        np.testing.assert_array_equal(sess.run(v), _expected(start, spec, value))


def test_a_slice_of_a_variable_is_a_tensor_of_its_value():
    v = tf.Variable(np.arange(6.0).reshape(2, 3))
    row = v[1]
    assert isinstance(row, tf.Tensor)
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(row * 2), [6.0, 8.0, 10.0])


def test_a_wrong_shape_is_an_error_that_leaves_the_variable_and_the_session_usable():
    v = tf.Variable(np.arange(6.0).reshape(2, 3))
    bad = v[0].assign([1.0, 2.0])
    with tf.Session() as sess:
        sess.run(v.initializer)
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"sliced l-value shape \[3\] does not match r-value shape \[2\] "
                                 "in assigning to a slice of variable 'Variable'"):
            sess.run(bad)
        np.testing.assert_array_equal(sess.run(v), np.arange(6.0).reshape(2, 3))
        sess.run(v[1].assign([0.0, 0.0, 0.0]))
        np.testing.assert_array_equal(sess.run(v), [[0, 1, 2], [0, 0, 0]])


def test_string_variables_and_fetched_values_that_stay_as_fetched():
    w = tf.Variable(np.array([b"a", b"b", b"c"], dtype=object))
    read = w.read_value()
    with tf.Session() as sess:
        sess.run(w.initializer)
        before = sess.run(read)
        sess.run(w[::2].assign([b"x", b"z"]))
        assert sess.run(w).tolist() == [b"x", b"b", b"z"]
        assert before.tolist() == [b"a", b"b", b"c"]


def test_eager_slice_assign():
    tf.enable_eager_execution()
    try:
        v = tf.Variable(np.arange(6.0).reshape(2, 3))
        result = v[1, ::-1].assign([1.0, 2.0, 3.0])
        np.testing.assert_array_equal(result.numpy(), [[0, 1, 2], [3, 2, 1]])
        np.testing.assert_array_equal(v.numpy(), [[0, 1, 2], [3, 2, 1]])
        np.testing.assert_array_equal(v[0].numpy(), [0, 1, 2])
        with pytest.raises(tf.errors.InvalidArgumentError, match="does not match r-value shape"):
            v[:, 0].assign([1.0, 2.0, 3.0])
    finally:
        tf.disable_eager_execution()
