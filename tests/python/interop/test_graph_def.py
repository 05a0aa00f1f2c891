"""Graph.as_graph_def, tf.import_graph_def and tf.io.write_graph: TensorFlow's GraphDef format."""

import os

import numpy as np
import pytest
from google.protobuf import text_format

import flowstone as tf
from tf_oracle import requires_tensorflow, run_tensorflow


def build_model():
    """x -> matmul (transpose_b) -> split in two -> (a, b + 1 after a), with a colocated op."""
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    w = tf.constant([[1.0, 2.0], [3.0, 4.0]], name="w")
    y = tf.matmul(x, w, transpose_b=True, name="y")
    a, b = tf.split(y, 2, axis=1, name="s")
    with tf.control_dependencies([a.op]):
        z = tf.add(b, 1.0, name="z")
    with tf.colocate_with(w):
        tf.identity(w, name="w_copy")
    return x, a, z


def node(graph_def, name):
    return next(n for n in graph_def.node if n.name == name)


def test_as_graph_def_writes_names_inputs_and_attrs_in_tensorflows_forms():
    build_model()
    graph_def = tf.get_default_graph().as_graph_def()
    assert isinstance(graph_def, tf.GraphDef)
    assert [n.name for n in graph_def.node][:3] == ["x", "w", "y"]
    y = node(graph_def, "y")
    assert y.op == "MatMul"
    assert list(y.input) == ["x", "w"]
    assert y.attr["transpose_b"].b is True and y.attr["transpose_a"].b is False
    assert y.attr["T"].type == 1  # DT_FLOAT
    z = node(graph_def, "z")
    assert list(z.input) == ["s:1", "z/y", "^s"]
    x = node(graph_def, "x")
    assert [d.size for d in x.attr["shape"].shape.dim] == [-1, 2]
    w = node(graph_def, "w").attr["value"].tensor
    assert [d.size for d in w.tensor_shape.dim] == [2, 2]
    np.testing.assert_array_equal(np.frombuffer(w.tensor_content, np.float32), [1, 2, 3, 4])
    assert list(node(graph_def, "w_copy").attr["_class"].list.s) == [b"loc:@w"]
    assert graph_def.versions.producer > 0


def test_add_shapes_and_from_version():
    tf.constant(1.0, name="first")
    version = tf.get_default_graph().version
    tf.zeros([2, 3], name="second")
    graph = tf.get_default_graph()
    graph_def = graph.as_graph_def(from_version=version, add_shapes=True)
    assert "first" not in [n.name for n in graph_def.node]
    shapes = node(graph_def, "second").attr["_output_shapes"].list.shape
    assert [[d.size for d in s.dim] for s in shapes] == [[2, 3]]


def test_round_trip_runs_the_same_and_keeps_names():
    x, a, z = build_model()
    feed = np.array([[1.0, 2.0], [-3.0, 0.5]], np.float32)
    with tf.Session() as sess:
        expected = sess.run([a, z], {x: feed})
    graph_def = tf.get_default_graph().as_graph_def()

    with tf.Graph().as_default() as graph:
        a2, z2, w_copy = tf.import_graph_def(graph_def, return_elements=["s:0", "z:0", "w_copy"])
        assert a2.name == "import/s:0" and z2.name == "import/z:0"
        assert isinstance(w_copy, tf.Operation) and w_copy.name == "import/w_copy"
        assert w_copy.colocation_groups() == [b"loc:@import/w".decode()]
        assert [op.name for op in z2.op.control_inputs] == ["import/s"]
        with tf.Session() as sess:
            got = sess.run([a2, z2], {graph.get_tensor_by_name("import/x:0"): feed})
    for want, have in zip(expected, got):
        np.testing.assert_array_equal(want, have)
    # Exporting the imported graph gives the same nodes under the prefix.
    again = graph.as_graph_def()
    assert [n.name for n in again.node] == ["import/" + n.name for n in graph_def.node]


def test_import_with_empty_name_and_input_map():
    x, _, z = build_model()
    graph_def = tf.get_default_graph().as_graph_def()
    with tf.Graph().as_default():
        replacement = tf.constant([[2.0, 0.0]], name="replacement")
        (z2,) = tf.import_graph_def(graph_def, input_map={"x:0": replacement},
                                    return_elements=["z:0"], name="")
        assert z2.name == "z:0"
        with tf.Session() as sess:
            # b = x . w[1] = 2 * 3 = 6, plus 1.
            np.testing.assert_array_equal(sess.run(z2), [[7.0]])


def test_import_twice_uniquifies_the_scope_and_returns_none_without_return_elements():
    build_model()
    graph_def = tf.get_default_graph().as_graph_def()
    with tf.Graph().as_default() as graph:
        assert tf.import_graph_def(graph_def) is None
        tf.import_graph_def(graph_def)
        names = [op.name for op in graph.get_operations()]
        assert "import/z" in names and "import_1/z" in names


def test_input_map_key_missing_from_the_graph_def_is_a_value_error():
    build_model()
    graph_def = tf.get_default_graph().as_graph_def()
    with tf.Graph().as_default():
        c = tf.constant([[1.0, 1.0]])
        with pytest.raises(ValueError, match=r"not found in graph_def: \[nope:0\]"):
            tf.import_graph_def(graph_def, input_map={"nope:0": c})


def test_return_element_missing_is_a_value_error_and_adds_nothing():
    build_model()
    graph_def = tf.get_default_graph().as_graph_def()
    with tf.Graph().as_default() as graph:
        with pytest.raises(ValueError, match="Requested return node 'missing'"):
            tf.import_graph_def(graph_def, return_elements=["missing:0"])
        assert graph.get_operations() == []


def test_write_graph_text_and_binary(tmp_path):
    build_model()
    graph = tf.get_default_graph()
    logdir = str(tmp_path / "new" / "dir")
    text_path = tf.io.write_graph(graph, logdir, "graph.pbtxt")
    binary_path = tf.train.write_graph(graph.as_graph_def(), logdir, "graph.pb", as_text=False)
    assert text_path == os.path.join(logdir, "graph.pbtxt")
    with open(text_path) as f:
        from_text = text_format.Parse(f.read(), tf.GraphDef())
    with open(binary_path, "rb") as f:
        from_binary = tf.GraphDef.FromString(f.read())
    assert from_text == from_binary == graph.as_graph_def()
    assert 'op: "MatMul"' in open(text_path).read()


def test_import_graph_def_rejects_a_non_proto():
    with pytest.raises(TypeError, match="graph_def must be a GraphDef proto"):
        tf.import_graph_def(b"\x0a\x00")


# --- TensorFlow both ways ------------------------------------------------------------------------


@requires_tensorflow
def test_graph_written_by_tensorflow_runs_in_flowstone(tmp_path):
    run_tensorflow("""
        import numpy as np
        import tensorflow as tf
        tf1 = tf.compat.v1
        tf1.disable_eager_execution()
        x = tf1.placeholder(tf.float32, [None, 3], name="x")
        w = tf1.constant(np.arange(6, dtype=np.float32).reshape(3, 2) / 7, name="w")
        b = tf1.constant([0.5, -0.25], name="b")
        h = tf1.nn.relu(tf1.nn.bias_add(tf1.matmul(x, w), b), name="h")
        s = tf1.reduce_sum(tf1.square(h), axis=1, name="s")
        out = tf1.identity(s * 2.0, name="out")
        feed = np.array([[1, 2, 3], [-4, 5, 0.5]], np.float32)
        with tf1.Session() as sess:
            np.save("expected.npy", sess.run(out, {x: feed}))
        np.save("feed.npy", feed)
        tf1.train.write_graph(tf1.get_default_graph(), ".", "graph.pb", as_text=False)
        tf1.train.write_graph(tf1.get_default_graph(), ".", "graph.pbtxt", as_text=True)
    """, tmp_path)
    for name, parse in [("graph.pb", lambda b: tf.GraphDef.FromString(b)),
                        ("graph.pbtxt", lambda b: text_format.Parse(b.decode(), tf.GraphDef()))]:
        with tf.Graph().as_default():
            graph_def = parse((tmp_path / name).read_bytes())
            x, out = tf.import_graph_def(graph_def, return_elements=["x:0", "out:0"], name="")
            with tf.Session() as sess:
                got = sess.run(out, {x: np.load(tmp_path / "feed.npy")})
            np.testing.assert_allclose(got, np.load(tmp_path / "expected.npy"), rtol=1e-6)


@requires_tensorflow
def test_graph_written_by_flowstone_runs_in_tensorflow(tmp_path):
    x, a, z = build_model()
    feed = np.array([[1.0, 2.0], [-3.0, 0.5]], np.float32)
    with tf.Session() as sess:
        expected = sess.run(z, {x: feed})
    tf.io.write_graph(tf.get_default_graph(), str(tmp_path), "graph.pb", as_text=False)
    np.save(tmp_path / "feed.npy", feed)
    run_tensorflow("""
        import numpy as np
        import tensorflow as tf
        tf1 = tf.compat.v1
        tf1.disable_eager_execution()
        graph_def = tf1.GraphDef.FromString(open("graph.pb", "rb").read())
        x, z = tf1.import_graph_def(graph_def, return_elements=["x:0", "z:0"], name="")
        with tf1.Session() as sess:
            np.save("got.npy", sess.run(z, {x: np.load("feed.npy")}))
    """, tmp_path)
    np.testing.assert_array_equal(np.load(tmp_path / "got.npy"), expected)
