"""tf.io.parse_single_example: dense features of tf.train.Example records that TensorFlow
serialized (a fixed record below, and TFRecord files TensorFlow writes where it is installed)."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import flowstone as tf

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from peers import HAVE_PEER, PEER_PYTHON, SKIP_REASON  # noqa: E402

# tf.train.Example(features={image: bytes_list [b"\x89PNG raw"], label: int64_list [7],
# box: float_list [0.25, 0.5, 1.5]}).SerializeToString(), as TensorFlow 2 wrote it.
EXAMPLE = bytes.fromhex(
    "0a400a150a05696d616765120c0a0a0a0889504e47207261770a170a03626f781210120e0a0c0000803e000000"
    "3f0000c03f0a0e0a056c6162656c12051a030a0107")


def _parse(features, serialized=EXAMPLE):
    with tf.Session() as sess:
        return sess.run(tf.io.parse_single_example(serialized, features))


def test_dense_features_and_defaults():
    got = _parse({
        "image": tf.io.FixedLenFeature([], tf.string),
        "label": tf.FixedLenFeature([], tf.int64),
        "box": tf.io.FixedLenFeature([3], tf.float32),
        "weight": tf.io.FixedLenFeature([2], tf.float32, default_value=[0.5, 2.0]),
    })
    assert got["image"] == b"\x89PNG raw"
    assert got["label"] == 7 and got["label"].dtype == np.int64
    np.testing.assert_array_equal(got["box"], np.array([0.25, 0.5, 1.5], np.float32))
    np.testing.assert_array_equal(got["weight"], np.array([0.5, 2.0], np.float32))


@pytest.mark.parametrize("features, message", [
    ({"nope": tf.io.FixedLenFeature([2], tf.float32)},
     "Feature: nope \\(data type: float\\) is required but could not be found."),
    ({"label": tf.io.FixedLenFeature([], tf.float32)},
     "Key: label.  Data types don't match. Data type: int64 but expected type: float"),
    ({"box": tf.io.FixedLenFeature([2], tf.float32)},
     "Key: box.  Can't parse serialized Example: 3 values"),
])
def test_parse_errors_are_tensorflows(features, message):
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        _parse(features)


def test_garbage_is_not_an_example():
    with pytest.raises(tf.errors.InvalidArgumentError, match="Could not parse example input"):
        _parse({"label": tf.io.FixedLenFeature([], tf.int64)}, serialized=b"\xff\xff\xff")


def test_unknown_feature_kinds_are_refused():
    class Ragged:  # a feature kind the parser does not know
        pass

    with pytest.raises(ValueError, match="Unsupported feature type Ragged for key 'label'"):
        tf.io.parse_single_example(EXAMPLE, {"label": Ragged()})


@pytest.mark.skipif(not HAVE_PEER, reason=SKIP_REASON)
def test_pipeline_over_examples_tensorflow_wrote(tmp_path):
    path = tmp_path / "examples.tfrecord"
    program = textwrap.dedent(f"""
        import tensorflow as tf
        with tf.io.TFRecordWriter({str(path)!r}) as w:
            for i in range(10):
                feature = {{
                    "x": tf.train.Feature(float_list=tf.train.FloatList(value=[i, i * 0.5])),
                    "y": tf.train.Feature(int64_list=tf.train.Int64List(value=[i * 3])),
                    "name": tf.train.Feature(bytes_list=tf.train.BytesList(
                        value=[("item%d" % i).encode()])),
                }}
                w.write(tf.train.Example(features=tf.train.Features(feature=feature))
                        .SerializeToString())
    """)
    proc = subprocess.run([PEER_PYTHON, "-c", program], capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    spec = {"x": tf.io.FixedLenFeature([2], tf.float32), "y": tf.io.FixedLenFeature([], tf.int64),
            "name": tf.io.FixedLenFeature([], tf.string)}
    batches = (tf.data.TFRecordDataset(str(path))
               .map(lambda record: tf.io.parse_single_example(record, spec))
               .batch(4).make_one_shot_iterator().get_next())
    seen = []
    with tf.Session() as sess:
        while True:
            try:
                seen.append(sess.run(batches))
            except tf.errors.OutOfRangeError:
                break
    assert [len(b["y"]) for b in seen] == [4, 4, 2]
    x = np.concatenate([b["x"] for b in seen])
    np.testing.assert_array_equal(x, np.array([[i, i * 0.5] for i in range(10)], np.float32))
    assert np.concatenate([b["y"] for b in seen]).tolist() == [i * 3 for i in range(10)]
    assert np.concatenate([b["name"] for b in seen]).tolist() == [
        f"item{i}".encode() for i in range(10)]


def test_tfrecord_digits_example_trains_from_its_own_records(tmp_path):
    pytest.importorskip("sklearn")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))
    script = os.path.join(root, "examples", "tfrecord_digits.py")
    proc = subprocess.run([sys.executable, script, "--epochs", "8", "--data_dir", str(tmp_path)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "over 360 records" in proc.stdout and proc.stdout.rstrip().endswith("OK")
    assert (tmp_path / "train.tfrecord.gz").stat().st_size > 0
