"""tf.io.serialize_tensor / parse_tensor: round trips of every dtype and shape, bytes that
TensorFlow parses and writes, and errors for bad input."""

import numpy as np
import pytest

import flowstone as tf
from peers import HAVE_PEER, SKIP_REASON, run_tensorflow

VALUES = [
    np.arange(6, dtype=np.float32).reshape(2, 3), np.array([1.5, -np.inf, np.nan]),
    np.array([[1, -2]], np.int32), np.array(7, np.int64), np.array([True, False]),
    np.array([3, 255], np.uint8), np.zeros([0, 4], np.float32),
    np.array([[b"ab", b""], [b"\xff\x00", b"xyz"]], dtype=object),
    np.array([1 + 2j, -3j], np.complex64), np.array([0.5, -1.0], np.float16),
]


@pytest.mark.parametrize("value", VALUES, ids=lambda v: f"{v.dtype}{list(v.shape)}")
def test_round_trip(value):
    dtype = tf.as_dtype(value.dtype) if value.dtype != object else tf.string
    serialized = tf.io.serialize_tensor(tf.constant(value, dtype=dtype))
    assert serialized.dtype == tf.string and serialized.shape.as_list() == []
    parsed = tf.io.parse_tensor(serialized, dtype)
    with tf.Session() as sess:
        got = sess.run(parsed)
    got = np.asarray(got)
    assert got.shape == value.shape
    if value.dtype.kind == "f":
        np.testing.assert_array_equal(got, value)  # NaN == NaN for array_equal on floats
    else:
        assert got.tolist() == value.tolist()


def test_errors_and_the_session_survives():
    serialized = tf.placeholder(tf.string)
    as_int = tf.io.parse_tensor(serialized, tf.int32)
    with tf.Session() as sess:
        float_bytes = sess.run(tf.io.serialize_tensor(tf.constant([1.0])))
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"Type mismatch between parsed tensor \(float32\) and dtype "
                                 r"\(int32\)"):
            sess.run(as_int, {serialized: float_bytes})
        with pytest.raises(tf.errors.InvalidArgumentError, match="Could not parse `serialized`"):
            sess.run(as_int, {serialized: b"\xff\xff\xff garbage"})
        with pytest.raises(tf.errors.InvalidArgumentError, match="to be a scalar"):
            sess.run(as_int, {serialized: [b"a", b"b"]})
        int_bytes = sess.run(tf.io.serialize_tensor(tf.constant([4, 5])))
        assert sess.run(as_int, {serialized: int_bytes}).tolist() == [4, 5]
    with pytest.raises(ValueError, match="must be rank 0|rank 0"):
        tf.io.parse_tensor(tf.constant([b"a", b"b"]), tf.int32)


@pytest.mark.skipif(not HAVE_PEER, reason=SKIP_REASON)
def test_bytes_cross_with_tensorflow(tmp_path):
    with tf.Session() as sess:
        ours = sess.run(tf.io.serialize_tensor(tf.constant([[1.5, 2.5]], tf.float64)))
    (tmp_path / "ours.bin").write_bytes(ours)
    printed = run_tensorflow(f"""
        import tensorflow as tf
        ours = open({str(tmp_path / 'ours.bin')!r}, 'rb').read()
        print(tf.io.parse_tensor(ours, tf.float64).numpy().tolist())
        theirs = tf.io.serialize_tensor(tf.constant([[b"x", b"yz"]])).numpy()
        open({str(tmp_path / 'theirs.bin')!r}, 'wb').write(theirs)
    """)
    assert printed.strip().splitlines()[-1] == "[[1.5, 2.5]]"
    with tf.Session() as sess:
        got = sess.run(tf.io.parse_tensor((tmp_path / "theirs.bin").read_bytes(), tf.string))
    assert got.tolist() == [[b"x", b"yz"]]


def test_sparse_tensors_through_serialized_rows_and_a_queue():
    # TF1 pipelines batch SparseTensors by serializing them for a queue.
    batch = tf.SparseTensor([[0, 0, 1], [1, 2, 0], [1, 2, 3]], [1.0, 2.0, 3.0], [2, 3, 4])
    rows = tf.io.serialize_many_sparse(batch)
    queue = tf.FIFOQueue(4, [tf.string], shapes=[[3]])
    enqueue = queue.enqueue_many([rows])
    restored = tf.io.deserialize_many_sparse(queue.dequeue_many(2), tf.float32, rank=3)
    single = tf.io.deserialize_many_sparse(
        tf.stack([tf.io.serialize_sparse(tf.SparseTensor([[0]], [1.0], [2])),
                  tf.io.serialize_sparse(tf.SparseTensor([[2]], [5.0], [4]))]), tf.float32)
    assert restored.dense_shape.shape.as_list() == [3]
    with tf.Session() as sess:
        sess.run(enqueue)
        got, two = sess.run([restored, single])
    assert got.indices.tolist() == [[0, 0, 1], [1, 2, 0], [1, 2, 3]]
    assert got.values.tolist() == [1.0, 2.0, 3.0] and got.dense_shape.tolist() == [2, 3, 4]
    # The first dimension is the row; the others the largest of the rows' shapes.
    assert two.indices.tolist() == [[0, 0], [1, 2]] and two.dense_shape.tolist() == [2, 4]
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Requested SparseTensor of type int32"):
            sess.run(tf.io.deserialize_many_sparse(rows, tf.int32))
        with pytest.raises(tf.errors.InvalidArgumentError, match="Could not parse"):
            sess.run(tf.io.deserialize_many_sparse([[b"x", b"y", b"z"]], tf.float32))
    with pytest.raises(TypeError, match="must be a SparseTensor"):
        tf.io.serialize_sparse(tf.constant([1.0]))
