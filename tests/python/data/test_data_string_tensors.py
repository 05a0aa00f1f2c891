"""tf.string tensors: constants, feeds and fetches (numpy object arrays of bytes, as TensorFlow
returns them) and the array ops that move string elements."""

import numpy as np
import pytest

import flowstone as tf

WORDS = [b"alpha", b"", b"a string well past the sixteen-byte inline buffer", b"nul\x00byte"]


def _run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


def _bytes_array(values):
    return np.array(values, dtype=object)


def test_string_dtype_is_the_core_string_with_an_object_numpy_type():
    assert tf.string.name == "string"
    assert tf.string.as_datatype_enum == 7
    assert tf.string.as_numpy_dtype is np.object_
    assert tf.as_dtype(np.dtype("S3")) == tf.string


def test_constant_of_bytes_and_str_fetches_bytes_objects():
    c = tf.constant([["caf\u00e9", b"x"], ["", b"\xff\x00"]])
    assert c.dtype == tf.string
    assert c.shape.as_list() == [2, 2]
    got = _run(c)
    assert got.dtype == object
    np.testing.assert_array_equal(got, _bytes_array([["caf\u00e9".encode("utf-8"), b"x"],
                                                     [b"", b"\xff\x00"]]))
    assert all(type(v) is bytes for v in got.flat)
    # A scalar string is fetched as bytes, as TensorFlow returns it.
    scalar = _run(tf.constant("hello"))
    assert type(scalar) is bytes and scalar == b"hello"


def test_constant_with_string_dtype_rejects_numbers():
    with pytest.raises(TypeError, match="Failed to convert elements"):
        tf.constant([1, 2], dtype=tf.string)
    with pytest.raises(TypeError, match="Failed to convert"):
        tf.constant([b"a", 1])


def test_placeholder_feeds_bytes_str_and_numpy_string_arrays():
    p = tf.placeholder(tf.string, [None])
    doubled = tf.concat([p, p], axis=0)
    for feed in (WORDS, np.array(["a", "bb"]), np.array([b"a", b"bb"]),
                 _bytes_array(["\u00e9", b"x"])):
        expected = [v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in feed]
        got = _run(doubled, {p: feed})
        assert list(got) == expected * 2


def test_feeding_a_number_to_a_string_placeholder_names_the_element():
    p = tf.placeholder(tf.string, [2])
    with pytest.raises(tf.errors.InvalidArgumentError, match="element 1 is of type int"):
        _run(tf.identity(p), {p: _bytes_array([b"a", 3])})


def test_array_ops_move_string_elements():
    grid = tf.constant(np.array(WORDS, dtype=object).reshape(2, 2))
    results = _run({
        "gather": tf.gather(grid, [1, 0, 1]),
        "gather_axis1": tf.gather(grid, [1, 1], axis=1),
        "reshape": tf.reshape(grid, [4]),
        "expand": tf.expand_dims(grid, 0),
        "squeeze": tf.squeeze(tf.reshape(grid, [1, 4, 1])),
        "stack": tf.stack([grid[0], grid[1]], axis=1),
        "unstack": tf.unstack(grid, axis=1),
        "tile": tf.tile(grid, [1, 2]),
        "fill": tf.fill([2, 3], "fill value longer than the small string buffer"),
        "where": tf.where(tf.constant([[True, False], [False, True]]), grid,
                          tf.fill([2, 2], "no")),
        "split": tf.split(grid, 2, axis=0),
    })
    g = np.array(WORDS, dtype=object).reshape(2, 2)
    np.testing.assert_array_equal(results["gather"], g[[1, 0, 1]])
    np.testing.assert_array_equal(results["gather_axis1"], g[:, [1, 1]])
    np.testing.assert_array_equal(results["reshape"], g.reshape(4))
    np.testing.assert_array_equal(results["expand"], g[None])
    np.testing.assert_array_equal(results["squeeze"], g.reshape(4))
    np.testing.assert_array_equal(results["stack"], np.stack([g[0], g[1]], axis=1))
    np.testing.assert_array_equal(results["unstack"][1], g[:, 1])
    np.testing.assert_array_equal(results["tile"], np.tile(g, (1, 2)))
    assert set(results["fill"].flat) == {b"fill value longer than the small string buffer"}
    np.testing.assert_array_equal(results["where"], np.array([[g[0, 0], b"no"],
                                                              [b"no", g[1, 1]]], dtype=object))
    np.testing.assert_array_equal(results["split"][1], g[1:])


def test_gather_of_strings_checks_indices():
    grid = tf.constant([b"a", b"b"])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[1\] = 5 is not in \[0, 2\)"):
        _run(tf.gather(grid, [0, 5]))


def test_values_stay_intact_when_buffers_are_reused_across_runs():
    # A fed string tensor goes through ops that may reuse its buffer for their output; the fetched
    # values and a second run must both be exact.
    p = tf.placeholder(tf.string, [3])
    out = tf.where(tf.constant([True, False, True]), tf.identity(p), tf.fill([3], "other"))
    with tf.Session() as sess:
        for i in range(3):
            feed = [f"value {i} {'x' * (i * 20)}".encode(), b"b", b"c" * 40]
            got = sess.run(out, {p: feed})
            assert list(got) == [feed[0], b"other", feed[2]]

