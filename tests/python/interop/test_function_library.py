"""Function libraries in GraphDefs: graphs with tf.cond / tf.while_loop (If / While over library
functions) export with their FunctionDefLibrary and import from it, in Flowstone and from and
to TensorFlow (TF 2's control flow in graph mode writes the same ops)."""

import numpy as np
import pytest

import flowstone as tf
from tf_oracle import requires_tensorflow, run_tensorflow

POSITIVE = np.array([1.0, 2.0], np.float32)
NEGATIVE = np.array([-1.0, -2.0], np.float32)


def build_model():
    x = tf.placeholder(tf.float32, [None], name="x")
    y = tf.cond(tf.reduce_sum(x) > 0, lambda: x * 2.0, lambda: x - 1.0, name="c")
    _, acc = tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a + x),
                           [0, tf.zeros_like(x)], name="w")
    return x, tf.identity(y, name="y"), tf.identity(acc, name="acc")


def test_library_round_trip_in_flowstone():
    x, y, acc = build_model()
    graph_def = tf.get_default_graph().as_graph_def()
    names = sorted(f.signature.name for f in graph_def.library.function)
    assert names == ["c_false", "c_true", "w_body", "w_cond"]
    body = next(f for f in graph_def.library.function if f.signature.name == "c_true")
    assert [a.name for a in body.signature.input_arg] == ["input_0"]
    assert ":" in body.ret["output_0"]  # "node:output_arg:index", TensorFlow's function format
    with tf.Session() as sess:
        expected = [sess.run([y, acc], {x: v}) for v in (POSITIVE, NEGATIVE)]
    with tf.Graph().as_default():
        y2, acc2 = tf.import_graph_def(graph_def, return_elements=["y:0", "acc:0"], name="m")
        with tf.Session() as sess:
            for value, want in zip((POSITIVE, NEGATIVE), expected):
                got = sess.run([y2, acc2], {"m/x:0": value})
                for w, g in zip(want, got):
                    np.testing.assert_array_equal(w, g)


def test_function_body_errors_name_the_function():
    build_model()
    graph_def = tf.get_default_graph().as_graph_def()
    body = next(f for f in graph_def.library.function if f.signature.name == "c_true")
    body.node_def[0].input.append("missing_node:output:0")
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="in function 'c_true'"):
            tf.import_graph_def(graph_def)


@requires_tensorflow
def test_tensorflow_control_flow_v2_graph_runs_in_flowstone(tmp_path):
    run_tensorflow("""
        import numpy as np
        import tensorflow as tf
        tf1 = tf.compat.v1
        tf1.disable_eager_execution()
        x = tf1.placeholder(tf.float32, [None], name="x")
        y = tf1.cond(tf1.reduce_sum(x) > 0, lambda: x * 2.0, lambda: tf1.square(x) - 1.0)
        y = tf1.identity(y, name="y")
        _, acc = tf1.while_loop(lambda i, a: i < 4, lambda i, a: (i + 1, a * 1.5 + x),
                                [0, tf1.zeros_like(x)])
        acc = tf1.identity(acc, name="acc")
        graph_def = tf1.get_default_graph().as_graph_def()
        assert len(graph_def.library.function) >= 2, "expected control flow v2"
        with tf1.Session() as sess:
            for name, v in (("pos", [1.0, 2.0]), ("neg", [-1.0, -2.0])):
                np.save(name + ".npy", np.stack(sess.run([y, acc], {x: v})))
        open("graph.pb", "wb").write(graph_def.SerializeToString())
    """, tmp_path)
    graph_def = tf.GraphDef.FromString((tmp_path / "graph.pb").read_bytes())
    with tf.Graph().as_default():
        y, acc = tf.import_graph_def(graph_def, return_elements=["y:0", "acc:0"], name="")
        with tf.Session() as sess:
            for name, value in (("pos", POSITIVE), ("neg", NEGATIVE)):
                got = np.stack(sess.run([y, acc], {"x:0": value}))
                np.testing.assert_allclose(got, np.load(tmp_path / f"{name}.npy"), rtol=1e-6)


@requires_tensorflow
def test_flowstone_control_flow_graph_runs_in_tensorflow(tmp_path):
    x, y, acc = build_model()
    with tf.Session() as sess:
        for name, value in (("pos", POSITIVE), ("neg", NEGATIVE)):
            np.save(tmp_path / f"{name}.npy", np.stack(sess.run([y, acc], {x: value})))
    tf.io.write_graph(tf.get_default_graph(), str(tmp_path), "graph.pb", as_text=False)
    out = run_tensorflow("""
        import numpy as np
        import tensorflow as tf
        tf1 = tf.compat.v1
        tf1.disable_eager_execution()
        graph_def = tf1.GraphDef.FromString(open("graph.pb", "rb").read())
        y, acc = tf1.import_graph_def(graph_def, return_elements=["y:0", "acc:0"], name="")
        with tf1.Session() as sess:
            for name, v in (("pos", [1.0, 2.0]), ("neg", [-1.0, -2.0])):
                got = np.stack(sess.run([y, acc], {"x:0": v}))
                assert np.allclose(got, np.load(name + ".npy"), rtol=1e-6), (name, got)
        print("ok")
    """, tmp_path)
    assert out.strip() == "ok"
