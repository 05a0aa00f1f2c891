"""tf.io.parse_example (batches), VarLenFeature (SparseTensor), SparseFeature,
FixedLenSequenceFeature and the SequenceExample parsers, against values written out here and,
where TensorFlow is installed, against TensorFlow parsing the same records."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import flowstone as tf

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from peers import HAVE_PEER, PEER_PYTHON, SKIP_REASON  # noqa: E402


def _feature(values):
    """A tf.train.Feature: a list of bytes, of floats, or of ints (by the first value); no list
    at all when there are no values (an empty feature of any type)."""
    if not values:
        return tf.train.Feature()
    if isinstance(values[0], bytes):
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=values))
    if isinstance(values[0], float):
        return tf.train.Feature(float_list=tf.train.FloatList(value=values))
    return tf.train.Feature(int64_list=tf.train.Int64List(value=values))


def _features(d):
    return tf.train.Features(feature={k: _feature(v) for k, v in d.items()})


def example(**features):
    return tf.train.Example(features=_features(features)).SerializeToString()


def sequence_example(context, feature_lists):
    lists = tf.train.FeatureLists(feature_list={
        k: tf.train.FeatureList(feature=[_feature(step) for step in steps])
        for k, steps in feature_lists.items()})
    return tf.train.SequenceExample(context=_features(context),
                                    feature_lists=lists).SerializeToString()


RECORDS = [
    example(label=[1], tokens=[b"a", b"b"], frames=[0.5, 1.5, 2.5, 3.5], idx=[3, 0],
            val=[10.0, 20.0]),
    example(label=[2], frames=[4.5, 5.5], idx=[1], val=[30.0]),
    example(tokens=[b"c", b"d", b"e"]),
]


def _run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


def test_parse_example_dense_sparse_and_sequence_features():
    got = _run(tf.io.parse_example(RECORDS, {
        "label": tf.io.FixedLenFeature([], tf.int64, default_value=-1),
        "tokens": tf.io.VarLenFeature(tf.string),
        "frames": tf.io.FixedLenSequenceFeature([2], tf.float32, allow_missing=True),
    }))
    np.testing.assert_array_equal(got["label"], np.array([1, 2, -1], np.int64))
    tokens = got["tokens"]
    np.testing.assert_array_equal(tokens.indices, [[0, 0], [0, 1], [2, 0], [2, 1], [2, 2]])
    assert tokens.values.tolist() == [b"a", b"b", b"c", b"d", b"e"]
    np.testing.assert_array_equal(tokens.dense_shape, [3, 3])
    frames = np.zeros([3, 2, 2], np.float32)
    frames[0] = [[0.5, 1.5], [2.5, 3.5]]
    frames[1, 0] = [4.5, 5.5]
    np.testing.assert_array_equal(got["frames"], frames)


def test_sparse_feature_puts_values_at_their_indices():
    got = _run(tf.io.parse_example(RECORDS, {
        "s": tf.io.SparseFeature("idx", "val", tf.float32, size=4)}))["s"]
    np.testing.assert_array_equal(got.indices, [[0, 0], [0, 3], [1, 1]])  # reordered
    np.testing.assert_array_equal(got.values, np.array([20.0, 10.0, 30.0], np.float32))
    np.testing.assert_array_equal(got.dense_shape, [3, 4])


def test_parse_single_example_sparse_and_sequence():
    serialized = tf.placeholder(tf.string, [])
    parsed = tf.io.parse_single_example(serialized, {
        "tokens": tf.io.VarLenFeature(tf.string),
        "frames": tf.io.FixedLenSequenceFeature([], tf.float32, allow_missing=True,
                                                default_value=-1.0),
    })
    assert parsed["frames"].shape.as_list() == [None]
    got = _run(parsed, {serialized: RECORDS[0]})
    np.testing.assert_array_equal(got["tokens"].indices, [[0], [1]])
    np.testing.assert_array_equal(got["tokens"].dense_shape, [2])
    np.testing.assert_array_equal(got["frames"], np.array([0.5, 1.5, 2.5, 3.5], np.float32))


def test_sequence_feature_pads_with_its_default():
    got = _run(tf.io.parse_example(RECORDS[:2], {"frames": tf.io.FixedLenSequenceFeature(
        [], tf.float32, allow_missing=True, default_value=-1.0)}))["frames"]
    np.testing.assert_array_equal(got, np.array([[0.5, 1.5, 2.5, 3.5], [4.5, 5.5, -1, -1]],
                                                np.float32))


def test_parse_example_errors():
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Feature: label \\(data type: int64\\) is required"):
        _run(tf.io.parse_example(RECORDS, {"label": tf.io.FixedLenFeature([], tf.int64)}))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Key: frames.  Can't parse serialized Example: 2 values.*multiple"):
        _run(tf.io.parse_example(RECORDS, {"frames": tf.io.FixedLenSequenceFeature(
            [4], tf.float32, allow_missing=True)}))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Data types don't match"):
        _run(tf.io.parse_example(RECORDS, {"tokens": tf.io.VarLenFeature(tf.int64)}))
    with pytest.raises(tf.errors.InvalidArgumentError, match="record 1 of the batch"):
        _run(tf.io.parse_example([RECORDS[0], b"\xff\xff"], {"t": tf.io.VarLenFeature(tf.int64)}))
    with pytest.raises(ValueError, match="allow_missing to be True"):
        tf.io.parse_example(RECORDS, {"f": tf.io.FixedLenSequenceFeature([], tf.float32)})


SEQUENCES = [
    sequence_example({"length": [3], "name": [b"x"]},
                     {"frames": [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]],
                      "words": [[b"a"], [], [b"b", b"c"]]}),
    sequence_example({"length": [1]}, {"frames": [[7.0, 8.0]], "words": [[b"d"]]}),
]


def test_parse_single_sequence_example():
    context, lists = _run(tf.io.parse_single_sequence_example(
        SEQUENCES[0],
        context_features={"length": tf.io.FixedLenFeature([], tf.int64),
                          "name": tf.io.VarLenFeature(tf.string)},
        sequence_features={"frames": tf.io.FixedLenSequenceFeature([2], tf.float32),
                           "words": tf.io.VarLenFeature(tf.string)}))
    assert context["length"] == 3
    assert context["name"].values.tolist() == [b"x"]
    np.testing.assert_array_equal(lists["frames"], [[1, 2], [3, 4], [5, 6]])
    np.testing.assert_array_equal(lists["words"].indices, [[0, 0], [2, 0], [2, 1]])
    np.testing.assert_array_equal(lists["words"].dense_shape, [3, 2])
    assert lists["words"].values.tolist() == [b"a", b"b", b"c"]


def test_parse_sequence_example_batch_pads_and_gives_lengths():
    context, lists, lengths = _run(tf.io.parse_sequence_example(
        SEQUENCES,
        context_features={"length": tf.io.FixedLenFeature([], tf.int64)},
        sequence_features={"frames": tf.io.FixedLenSequenceFeature([2], tf.float32),
                           "missing": tf.io.FixedLenSequenceFeature([], tf.int64,
                                                                    allow_missing=True),
                           "words": tf.io.VarLenFeature(tf.string)}))
    np.testing.assert_array_equal(context["length"], [3, 1])
    expected = np.zeros([2, 3, 2], np.float32)
    expected[0] = [[1, 2], [3, 4], [5, 6]]
    expected[1, 0] = [7, 8]
    np.testing.assert_array_equal(lists["frames"], expected)
    np.testing.assert_array_equal(lengths["frames"], [3, 1])
    assert lists["missing"].shape == (2, 0)
    np.testing.assert_array_equal(lists["words"].indices,
                                  [[0, 0, 0], [0, 2, 0], [0, 2, 1], [1, 0, 0]])
    np.testing.assert_array_equal(lists["words"].dense_shape, [2, 3, 2])


def test_missing_required_feature_list():
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Feature list 'absent' is required"):
        _run(tf.io.parse_single_sequence_example(SEQUENCES[0], sequence_features={
            "absent": tf.io.FixedLenSequenceFeature([], tf.float32)}))


@pytest.mark.skipif(not HAVE_PEER, reason=SKIP_REASON)
def test_parse_example_matches_tensorflow():
    program = textwrap.dedent(f"""
        import json, tensorflow as tf
        records = [bytes.fromhex(h) for h in {[r.hex() for r in RECORDS]!r}]
        got = tf.io.parse_example(records, {{
            "label": tf.io.FixedLenFeature([], tf.int64, default_value=-1),
            "tokens": tf.io.VarLenFeature(tf.string),
            "frames": tf.io.FixedLenSequenceFeature([2], tf.float32, allow_missing=True),
            "s": tf.io.SparseFeature("idx", "val", tf.float32, size=4),
        }})
        out = {{"label": got["label"].numpy().tolist(), "frames": got["frames"].numpy().tolist()}}
        for k in ("tokens", "s"):
            v = got[k].values.numpy().tolist()
            out[k] = [got[k].indices.numpy().tolist(),
                      [x.decode() if isinstance(x, bytes) else x for x in v],
                      got[k].dense_shape.numpy().tolist()]
        print(json.dumps(out))
    """)
    proc = subprocess.run([PEER_PYTHON, "-c", program], capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    want = json.loads(proc.stdout.strip().splitlines()[-1])
    got = _run(tf.io.parse_example(RECORDS, {
        "label": tf.io.FixedLenFeature([], tf.int64, default_value=-1),
        "tokens": tf.io.VarLenFeature(tf.string),
        "frames": tf.io.FixedLenSequenceFeature([2], tf.float32, allow_missing=True),
        "s": tf.io.SparseFeature("idx", "val", tf.float32, size=4),
    }))
    assert got["label"].tolist() == want["label"]
    assert got["frames"].tolist() == want["frames"]
    for k in ("tokens", "s"):
        values = [x.decode() if isinstance(x, bytes) else x for x in got[k].values.tolist()]
        assert [got[k].indices.tolist(), values, got[k].dense_shape.tolist()] == want[k]
