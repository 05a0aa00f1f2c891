"""tf.graph_util.extract_sub_graph and convert_variables_to_constants (frozen graphs), with
frozen graphs crossing to and from real TensorFlow."""

import numpy as np
import pytest

import flowstone as tf
from tf_oracle import requires_tensorflow, run_tensorflow

FEED = np.array([[1.0, 2.0, 3.0], [0.0, -1.0, 0.5]], np.float32)


def build_model():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    w = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2) / 5, name="w")
    b = tf.Variable(np.array([0.5, -0.5], np.float32), name="b")
    y = tf.nn.relu(tf.matmul(x, w) + b, name="y")
    tf.identity(y * 2.0, name="unused")
    return x, y, w


def test_extract_sub_graph_keeps_what_the_outputs_need_in_order():
    build_model()
    graph_def = tf.get_default_graph().as_graph_def()
    sub = tf.graph_util.extract_sub_graph(graph_def, ["y"])
    names = [n.name for n in sub.node]
    assert "unused" not in names and "y" in names and "x" in names and "w" in names
    assert names == [n.name for n in graph_def.node if n.name in set(names)]
    with pytest.raises(AssertionError, match="nope is not in graph"):
        tf.graph_util.extract_sub_graph(graph_def, ["nope"])
    with pytest.raises(TypeError, match="must be a graph_pb2.GraphDef"):
        tf.graph_util.extract_sub_graph("graph", ["y"])


def test_frozen_graph_has_no_variables_and_computes_the_same():
    x, y, w = build_model()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(w.assign(w * 3.0))  # the frozen value is the session's, not the initial one
        expected = sess.run(y, {x: FEED})
        frozen = tf.graph_util.convert_variables_to_constants(
            sess, sess.graph.as_graph_def(), ["y"])
    ops = {n.op for n in frozen.node}
    assert not ops & {"VarHandleOp", "ReadVariableOp", "AssignVariableOp"}
    assert {n.name for n in frozen.node if n.op == "Const"} >= {"w", "b"}
    with tf.Graph().as_default():
        (y2,) = tf.import_graph_def(frozen, return_elements=["y:0"], name="")
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(y2, {"x:0": FEED}), expected)


def test_blacklisted_variable_stays_a_variable():
    x, y, _ = build_model()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        frozen = tf.graph_util.convert_variables_to_constants(
            sess, sess.graph.as_graph_def(), ["y"], variable_names_blacklist=["b"])
    kinds = {n.name: n.op for n in frozen.node}
    assert kinds["w"] == "Const" and kinds["b"] == "VarHandleOp"


@requires_tensorflow
def test_graph_frozen_by_tensorflow_runs_in_flowstone(tmp_path):
    np.save(tmp_path / "feed.npy", FEED)
    run_tensorflow("""
        import numpy as np
        import tensorflow as tf
        tf1 = tf.compat.v1
        tf1.disable_eager_execution()
        x = tf1.placeholder(tf.float32, [None, 3], name="x")
        w = tf1.get_variable("w", initializer=np.arange(6, dtype=np.float32).reshape(3, 2) / 5)
        b = tf1.Variable([0.5, -0.5], name="b")
        h = tf1.nn.relu6(tf1.matmul(x, w, transpose_b=False) + b)
        y = tf1.reduce_mean(tf1.square(h), axis=1, name="y")
        with tf1.Session() as sess:
            sess.run(tf1.global_variables_initializer())
            np.save("expected.npy", sess.run(y, {x: np.load("feed.npy")}))
            frozen = tf1.graph_util.convert_variables_to_constants(
                sess, sess.graph.as_graph_def(), ["y"])
        open("frozen.pb", "wb").write(frozen.SerializeToString())
    """, tmp_path)
    frozen = tf.GraphDef.FromString((tmp_path / "frozen.pb").read_bytes())
    with tf.Graph().as_default():
        (y,) = tf.import_graph_def(frozen, return_elements=["y:0"], name="")
        with tf.Session() as sess:
            got = sess.run(y, {"x:0": FEED})
    np.testing.assert_allclose(got, np.load(tmp_path / "expected.npy"), rtol=1e-6)


@requires_tensorflow
def test_graph_frozen_by_flowstone_runs_in_tensorflow(tmp_path):
    x, y, _ = build_model()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.save(tmp_path / "expected.npy", sess.run(y, {x: FEED}))
        frozen = tf.graph_util.convert_variables_to_constants(
            sess, sess.graph.as_graph_def(), ["y"])
    tf.io.write_graph(frozen, str(tmp_path), "frozen.pb", as_text=False)
    np.save(tmp_path / "feed.npy", FEED)
    out = run_tensorflow("""
        import numpy as np
        import tensorflow as tf
        tf1 = tf.compat.v1
        tf1.disable_eager_execution()
        graph_def = tf1.GraphDef.FromString(open("frozen.pb", "rb").read())
        (y,) = tf1.import_graph_def(graph_def, return_elements=["y:0"], name="")
        with tf1.Session() as sess:
            got = sess.run(y, {"x:0": np.load("feed.npy")})
        assert np.array_equal(got, np.load("expected.npy")), got
        print("ok")
    """, tmp_path)
    assert out.strip() == "ok"
