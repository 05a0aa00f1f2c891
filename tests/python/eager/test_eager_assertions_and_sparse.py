"""Assertions, ensure_shape and sparse ops executing eagerly: tf.debugging.assert_* check at once
and give TensorFlow's eager messages (shapes and dtypes where graphs give names), ensure_shape
fails as TensorFlow's EnsureShape does, and sparse ops whose graph versions read static shapes or
tensor names work on eager values. Compared with real TensorFlow where it is installed."""

import numpy as np
import pytest

import flowstone as tf
from peers import requires_tensorflow, run_tensorflow

FAILING_ASSERTIONS = """
checks = [
    lambda: tf.debugging.assert_equal(tf.constant([1, 2]), tf.constant([1, 3])),
    lambda: tf.debugging.assert_positive(tf.constant([1.0, -2.0]), message="neg"),
    lambda: tf.debugging.assert_less(tf.constant([1.0, 3.0]), 2.0),
    lambda: tf.debugging.assert_greater_equal(tf.constant([[5, 1], [0, 7]]),
                                              tf.constant([[1, 2], [3, 4]]), summarize=1),
]
messages = []
for check in checks:
    try:
        check()
        messages.append("held")
    except tf.errors.InvalidArgumentError as e:
        messages.append(e.message)
"""


def _failing_assertions():
    scope = {"tf": tf}
    exec(FAILING_ASSERTIONS, scope)
    return scope["messages"]


def test_failed_assertions_raise_at_once_with_the_differing_values():
    equal, positive, less, greater_equal = _failing_assertions()
    assert equal == ("Condition x == y did not hold.\nIndices of first 1 different values:\n"
                     "[[1]]\nCorresponding x values:\n[2]\nCorresponding y values:\n[3]\n"
                     "First 2 elements of x:\n[1 2]\nFirst 2 elements of y:\n[1 3]")
    assert positive == ("neg.  \nCondition x > 0 did not hold element-wise:\n"
                        "x (shape=(2,) dtype=float32) = \n['1.0', '-2.0']")
    assert less == ("Condition x < y did not hold.\nFirst 2 elements of x:\n[1. 3.]\n"
                    "First 1 elements of y:\n[2.]")
    assert greater_equal.startswith("Condition x >= y did not hold.\nIndices of first 1 "
                                    "different values:\n[[0 1]]\nCorresponding x values:\n[1]")


@requires_tensorflow
def test_the_messages_are_tensorflows():
    want = run_tensorflow("import tensorflow as tf\n" + FAILING_ASSERTIONS
                          + "\nprint(repr(messages))")
    assert repr(_failing_assertions()) == want.strip()


def test_passing_assertions_return_none_and_static_rank_errors_name_shape_and_dtype():
    assert tf.debugging.assert_equal(tf.constant([1, 2]), tf.constant([1, 2])) is None
    assert tf.debugging.assert_non_negative(tf.constant([0.0, 2.0])) is None
    with pytest.raises(ValueError, match=r"Tensor shape=\(2,\) dtype=float32 must have rank 2"):
        tf.debugging.assert_rank(tf.constant([1.0, 2.0]), 2)
    with pytest.raises(TypeError, match="shape=\\(\\) dtype=int32 must be of type"):
        tf.debugging.assert_type(tf.constant(1), tf.float32)


def test_sparse_ops_on_eager_values():
    st = tf.sparse.SparseTensor([[0, 1], [1, 0]], [1.0, 2.0], [2, 3])
    assert st.shape.as_list() == [2, 3]
    np.testing.assert_array_equal(tf.sparse.to_dense(st).numpy(), [[0, 1, 0], [2, 0, 0]])
    np.testing.assert_array_equal(tf.sparse.to_dense(tf.sparse.add(st, st)).numpy(),
                                  [[0, 2, 0], [4, 0, 0]])
    np.testing.assert_array_equal(tf.sparse.maximum(st, st).values.numpy(), [1.0, 2.0])


def test_ensure_shape_passes_a_compatible_tensor_and_rejects_another_as_tensorflow_does():
    x = tf.ones([2, 3])
    assert tf.ensure_shape(x, [None, 3]) is x
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"Shape of tensor input \[2\] is not compatible with expected shape "
                             r"\[3\]\."):
        tf.ensure_shape(tf.ones([2]), [3])
