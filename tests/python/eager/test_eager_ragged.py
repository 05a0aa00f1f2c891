"""tf.RaggedTensor in eager mode: components are EagerTensors, to_list() and the repr read their
values, and the ragged functions and string ops run at once."""

import numpy as np
import pytest

import flowstone as tf


def test_repr_to_list_and_numpy():
    rt = tf.ragged.constant([[1, 2], [3]])
    assert repr(rt) == "<tf.RaggedTensor [[1, 2], [3]]>"
    assert rt.to_list() == [[1, 2], [3]]
    rows = rt.numpy()
    assert [r.tolist() for r in rows] == [[1, 2], [3]]
    assert rt.row_lengths().numpy().tolist() == [2, 1]


def test_ops_run_eagerly():
    rt = tf.ragged.constant([[1.0, 2.0], [], [3.0]])
    assert (rt * 2.0).to_list() == [[2.0, 4.0], [], [6.0]]
    np.testing.assert_array_equal(rt.to_tensor().numpy(), [[1, 2], [0, 0], [3, 0]])
    np.testing.assert_allclose(tf.reduce_sum(rt, axis=1).numpy(), [3.0, 0.0, 3.0])
    assert tf.gather(rt, [2, 0]).to_list() == [[3.0], [1.0, 2.0]]
    assert rt[1:].to_list() == [[], [3.0]]
    assert tf.ragged.range([2, 1]).to_list() == [[0, 1], [0]]
    words = tf.strings.unicode_split(["hé", "x"], "UTF-8")
    assert words.to_list() == [[b"h", "é".encode()], [b"x"]]


def test_gradient_tape_through_to_tensor():
    values = tf.constant([1.0, 2.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(values)
        dense = tf.RaggedTensor.from_row_splits(values, [0, 1, 3]).to_tensor()
        loss = tf.reduce_sum(dense * tf.constant([[1.0, 10.0], [100.0, 1000.0]]))
    np.testing.assert_allclose(tape.gradient(loss, values).numpy(), [1.0, 100.0, 1000.0])


def test_bad_splits_fail_at_once():
    with pytest.raises(tf.errors.InvalidArgumentError, match="not decrease"):
        tf.RaggedTensor.from_row_splits([1, 2], [0, 2, 1]).to_tensor()
