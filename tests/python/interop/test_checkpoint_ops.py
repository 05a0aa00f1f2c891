"""The checkpoint ops TensorFlow's graphs carry (SaveV2, RestoreV2, MergeV2Checkpoints,
DisableCopyOnRead): round trips, merging shards, and errors; reading TensorFlow 2's
checkpoints, whose object graph is a string tensor, through RestoreV2."""

import os

import numpy as np
import pytest

import flowstone as tf
from flowstone.framework.ops import apply_op
from tf_oracle import requires_tensorflow, run_tensorflow


def save(prefix, named):
    names = list(named)
    return apply_op("SaveV2", [tf.constant(prefix), tf.constant(names),
                               tf.constant([""] * len(names)),
                               [tf.constant(v) for v in named.values()]], {})


def restore(prefix, names, dtypes, slices=None):
    return apply_op("RestoreV2", [tf.constant(prefix), tf.constant(names),
                                  tf.constant(slices or [""] * len(names))],
                    {"dtypes": dtypes}).outputs


def test_save_restore_and_merge(tmp_path):
    a, b = str(tmp_path / "a" / "part"), str(tmp_path / "b" / "part")
    os.makedirs(tmp_path / "a")
    os.makedirs(tmp_path / "b")
    merged = str(tmp_path / "model")
    with tf.Session() as sess:
        sess.run(save(a, {"w": np.arange(6, dtype=np.float32).reshape(2, 3)}))
        sess.run(save(b, {"step": np.int64(7), "flags": np.array([True, False])}))
        sess.run(apply_op("MergeV2Checkpoints", [tf.constant([a, b]), tf.constant(merged)], {}))
        w, step, flags = sess.run(restore(merged, ["w", "step", "flags"],
                                          [tf.float32, tf.int64, tf.bool]))
    np.testing.assert_array_equal(w, np.arange(6).reshape(2, 3))
    assert step == 7 and flags.tolist() == [True, False]
    assert sorted(tf.train.list_variables(merged)) == [("flags", [2]), ("step", []),
                                                       ("w", [2, 3])]
    # The shards and their (now empty) directories are gone.
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_restore_errors_leave_the_session_usable(tmp_path):
    prefix = str(tmp_path / "ckpt")
    with tf.Session() as sess:
        sess.run(save(prefix, {"w": np.ones(2, np.float32)}))
        with pytest.raises(tf.errors.NotFoundError, match="Key missing not found in checkpoint"):
            sess.run(restore(prefix, ["missing"], [tf.float32]))
        with pytest.raises(tf.errors.InvalidArgumentError, match="is float32, but the graph "
                                                                 "expects int32"):
            sess.run(restore(prefix, ["w"], [tf.int32]))
        with pytest.raises(tf.errors.UnimplementedError, match="slices"):
            sess.run(restore(prefix, ["w"], [tf.float32], slices=["2 0,1"]))
        strings = np.array([b"x", b"", b"\xff" * 300], dtype=object)
        sess.run(save(prefix + "-s", {"s": strings}))
        assert sess.run(restore(prefix + "-s", ["s"], [tf.string]))[0].tolist() == list(strings)
        assert sess.run(restore(prefix, ["w"], [tf.float32]))[0].tolist() == [1.0, 1.0]


def test_disable_copy_on_read_is_accepted():
    v = tf.Variable([1.0, 2.0])
    op = apply_op("DisableCopyOnRead", [v.handle], {})
    with tf.Session() as sess:
        sess.run(v.initializer)
        sess.run(op)
        assert sess.run(v).tolist() == [1.0, 2.0]


@requires_tensorflow
def test_tensorflow2_checkpoint_with_its_object_graph(tmp_path):
    run_tensorflow("""
        import tensorflow as tf
        ckpt = tf.train.Checkpoint(v=tf.Variable([1.5, -2.0]))
        ckpt.write("ckpt")
    """, tmp_path)
    prefix = str(tmp_path / "ckpt")
    with tf.Session() as sess:
        graph, value = sess.run(restore(prefix, ["_CHECKPOINTABLE_OBJECT_GRAPH",
                                                 "v/.ATTRIBUTES/VARIABLE_VALUE"],
                                        [tf.string, tf.float32]))
    assert isinstance(graph, bytes) and len(graph) > 10  # a serialized TrackableObjectGraph
    assert value.tolist() == [1.5, -2.0]
    # list_variables names the object graph too, as TensorFlow's does.
    assert tf.train.list_variables(prefix) == [("_CHECKPOINTABLE_OBJECT_GRAPH", []),
                                               ("v/.ATTRIBUTES/VARIABLE_VALUE", [2])]
