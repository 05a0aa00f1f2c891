"""tf.train.export_meta_graph / import_meta_graph and the .meta file Saver.save writes, with
round trips through real TensorFlow."""

import numpy as np
import pytest

import flowstone as tf
from tf_oracle import requires_tensorflow, run_tensorflow


def build_model():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    with tf.variable_scope("dense"):
        w = tf.get_variable("kernel", initializer=np.arange(6, dtype=np.float32).reshape(3, 2))
        b = tf.get_variable("bias", initializer=np.array([0.5, -0.5], np.float32))
    y = tf.identity(tf.matmul(x, w) + b, name="y")
    tf.add_to_collection("outputs", y)
    tf.add_to_collection("labels", "text label")
    tf.add_to_collection("sizes", 7)
    step = tf.Variable(0, trainable=False, name="step")
    return x, y, w, b, step


FEED = np.array([[1.0, 2.0, 3.0], [0.0, -1.0, 0.5]], np.float32)


def test_export_holds_the_graph_collections_and_variable_defs():
    build_model()
    meta = tf.train.export_meta_graph()
    assert isinstance(meta, tf.MetaGraphDef)
    assert {n.name for n in meta.graph_def.node} >= {"x", "y", "dense/kernel", "step"}
    assert list(meta.collection_def["outputs"].node_list.value) == ["y:0"]
    assert list(meta.collection_def["labels"].bytes_list.value) == [b"text label"]
    assert list(meta.collection_def["sizes"].int64_list.value) == [7]
    trainable = meta.collection_def["trainable_variables"].bytes_list.value
    assert len(trainable) == 2
    from flowstone.framework.tf_protos import VariableDef
    kernel = VariableDef.FromString(trainable[0])
    assert kernel.variable_name == "dense/kernel:0" and kernel.is_resource and kernel.trainable
    assert kernel.initializer_name.startswith("dense/kernel/")
    assert len(meta.collection_def["variables"].bytes_list.value) == 3


def test_saver_writes_meta_unless_asked_not_to(tmp_path):
    build_model()
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        saver.save(sess, str(tmp_path / "a.ckpt"))
        saver.save(sess, str(tmp_path / "b.ckpt"), write_meta_graph=False)
    assert (tmp_path / "a.ckpt.meta").exists() and not (tmp_path / "b.ckpt.meta").exists()


def test_import_meta_graph_restores_variables_collections_and_values(tmp_path):
    x, y, _, _, step = build_model()
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(step.assign(5))
        expected = sess.run(y, {x: FEED})
        prefix = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=5)

    with tf.Graph().as_default() as graph:
        restorer = tf.train.import_meta_graph(prefix + ".meta")
        assert [v.name for v in tf.trainable_variables()] == ["dense/kernel:0", "dense/bias:0"]
        assert [v.name for v in tf.global_variables()] == [
            "dense/kernel:0", "dense/bias:0", "step:0"]
        assert tf.get_collection("labels") == [b"text label"]
        assert tf.get_collection("sizes") == [7]
        (y2,) = tf.get_collection("outputs")
        with tf.Session() as sess:
            restorer.restore(sess, prefix)
            np.testing.assert_array_equal(sess.run(y2, {"x:0": FEED}), expected)
            assert sess.run(tf.global_variables()[2]) == 5
            # The imported variables keep working: initializers and assignment.
            sess.run(tf.global_variables_initializer())
            assert sess.run(tf.global_variables()[2]) == 0
        assert graph.get_tensor_by_name("y:0") is y2


def test_import_scope_and_text_format(tmp_path):
    build_model()
    path = str(tmp_path / "graph.meta.txt")
    tf.train.export_meta_graph(filename=path, as_text=True)
    assert 'op: "MatMul"' in open(path).read()
    with tf.Graph().as_default():
        tf.train.import_meta_graph(path, import_scope="imported")
        assert [v.name for v in tf.trainable_variables()] == [
            "imported/dense/kernel:0", "imported/dense/bias:0"]
        assert tf.get_collection("outputs")[0].name == "imported/y:0"


def test_meta_graph_without_variables_returns_no_saver():
    tf.constant(1.0, name="c")
    meta = tf.train.export_meta_graph()
    with tf.Graph().as_default():
        assert tf.train.import_meta_graph(meta) is None


def test_unparsable_meta_file(tmp_path):
    path = tmp_path / "bad.meta"
    path.write_bytes(b"\xff\xfe not a proto {{{")
    with pytest.raises(IOError, match="Cannot parse file"):
        tf.train.import_meta_graph(str(path))


@requires_tensorflow
def test_meta_graph_and_checkpoint_written_by_tensorflow(tmp_path):
    np.save(tmp_path / "feed.npy", FEED)
    run_tensorflow("""
        import numpy as np
        import tensorflow as tf
        tf1 = tf.compat.v1
        tf1.disable_eager_execution()
        x = tf1.placeholder(tf.float32, [None, 3], name="x")
        w = tf1.get_variable("w", initializer=np.arange(6, dtype=np.float32).reshape(3, 2) / 5)
        b = tf1.Variable([0.5, -0.5], name="b")
        y = tf1.identity(tf1.nn.relu(tf1.matmul(x, w) + b), name="y")
        tf1.add_to_collection("outputs", y)
        with tf1.Session() as sess:
            sess.run(tf1.global_variables_initializer())
            np.save("expected.npy", sess.run(y, {x: np.load("feed.npy")}))
            tf1.train.Saver().save(sess, "./model.ckpt", global_step=3)
    """, tmp_path)
    with tf.Graph().as_default():
        saver = tf.train.import_meta_graph(str(tmp_path / "model.ckpt-3.meta"))
        assert [v.name for v in tf.global_variables()] == ["w:0", "b:0"]
        (y,) = tf.get_collection("outputs")
        with tf.Session() as sess:
            saver.restore(sess, tf.train.latest_checkpoint(str(tmp_path)))
            np.testing.assert_allclose(sess.run(y, {"x:0": FEED}),
                                       np.load(tmp_path / "expected.npy"), rtol=1e-6)


@requires_tensorflow
def test_meta_graph_and_checkpoint_written_by_flowstone_load_in_tensorflow(tmp_path):
    x, y, _, _, _ = build_model()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.save(tmp_path / "expected.npy", sess.run(y, {x: FEED}))
        tf.train.Saver().save(sess, str(tmp_path / "model.ckpt"))
    np.save(tmp_path / "feed.npy", FEED)
    out = run_tensorflow("""
        import numpy as np
        import tensorflow as tf
        tf1 = tf.compat.v1
        tf1.disable_eager_execution()
        saver = tf1.train.import_meta_graph("model.ckpt.meta")
        print(sorted(v.name for v in tf1.trainable_variables()))
        (y,) = tf1.get_collection("outputs")
        with tf1.Session() as sess:
            saver.restore(sess, "model.ckpt")
            got = sess.run(y, {"x:0": np.load("feed.npy")})
        assert np.allclose(got, np.load("expected.npy"), rtol=1e-6), got
        print("ok")
    """, tmp_path)
    assert out.splitlines() == ["['dense/bias:0', 'dense/kernel:0']", "ok"]


def test_global_step_and_metric_variables_round_trip_without_a_warning(tmp_path, caplog):
    # TensorFlow stores these collections as VariableDefs too; a training program's .meta file
    # has a global step.
    step = tf.train.get_or_create_global_step()
    tf.metrics.mean(tf.constant([1.0, 3.0]))
    with caplog.at_level("WARNING"):
        tf.train.export_meta_graph(str(tmp_path / "m.meta"))
    assert "Issue encountered" not in caplog.text
    with tf.Graph().as_default():
        tf.train.import_meta_graph(str(tmp_path / "m.meta"))
        assert tf.train.get_global_step().name == step.name
        assert len(tf.get_collection(tf.GraphKeys.METRIC_VARIABLES)) == 2
        assert tf.get_collection(tf.GraphKeys.GLOBAL_STEP)[0] in tf.global_variables()
