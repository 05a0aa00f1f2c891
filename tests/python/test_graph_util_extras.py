"""tf.graph_util.remove_training_nodes, tensor_shape_from_node_def_name and must_run_on_cpu,
against TensorFlow's results on the same GraphDefs."""

import json

import numpy as np
import pytest

import flowstone as tf
from peers import requires_tensorflow, run_tensorflow


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def _training_graph():
    x = tf.compat.v1.placeholder(tf.float32, [None, 2], name="x")
    check = tf.debugging.check_numerics(x, "bad input", name="check")
    with tf.control_dependencies([check]):  # as tf.add_check_numerics_ops wires them
        checked = tf.identity(x, name="checked")
    first = tf.identity(checked, name="id1")
    second = tf.identity(first, name="id2")
    kept = tf.identity(second, name="kept")
    with tf.control_dependencies([first]):
        guarded = tf.identity(x, name="guarded")
    y = tf.add(kept * 2.0, guarded, name="y")
    return y


def _edges(graph_def):
    return {n.name: list(n.input) for n in graph_def.node}


def test_remove_training_nodes_splices_identities_and_drops_checks():
    y = _training_graph()
    pruned = tf.graph_util.remove_training_nodes(tf.get_default_graph().as_graph_def(),
                                                 protected_nodes=["kept"])
    edges = _edges(pruned)
    assert "check" not in edges and "id2" not in edges
    # id1 feeds a control input, so it stays; kept is protected; guarded has a control input.
    # `checked` lost its control input from the check, so it was spliced out too.
    assert "checked" not in edges and edges["id1"] == ["x"] and edges["kept"] == ["id1"]
    assert edges["guarded"] == ["x", "^id1"]
    with tf.Graph().as_default():
        tf.import_graph_def(pruned, name="")
        with tf.Session() as sess:
            out = sess.run("y:0", {"x:0": np.array([[1.0, 2.0]], np.float32)})
    np.testing.assert_allclose(out, [[3.0, 6.0]])
    with pytest.raises(TypeError, match="graph_def must be a graph_pb2.GraphDef proto"):
        tf.graph_util.remove_training_nodes("not a graph")


@requires_tensorflow
def test_remove_training_nodes_equals_tensorflows():
    _training_graph()
    graph_def = tf.get_default_graph().as_graph_def()
    ours = _edges(tf.graph_util.remove_training_nodes(graph_def, protected_nodes=["kept"]))
    theirs = json.loads(run_tensorflow(f"""
        import json
        import tensorflow.compat.v1 as tf
        graph_def = tf.GraphDef.FromString({graph_def.SerializeToString()!r})
        pruned = tf.graph_util.remove_training_nodes(graph_def, protected_nodes=["kept"])
        print(json.dumps({{n.name: list(n.input) for n in pruned.node}}))
    """).splitlines()[-1])
    assert ours == theirs


def test_shape_lookup_and_cpu_placement_rule():
    x = tf.compat.v1.placeholder(tf.float32, [None, 3], name="x")
    assert tf.graph_util.tensor_shape_from_node_def_name(tf.get_default_graph(),
                                                         "x").as_list() == [None, 3]
    words = tf.constant(["a"], name="words")
    ints = tf.constant([1], name="ints")
    floats = tf.constant([1.0], name="floats")
    cast = tf.cast(ints, tf.float32)
    v = tf.Variable(1.0)
    rule = tf.graph_util.must_run_on_cpu
    assert rule(words.op) and rule(ints.op) and rule(cast.op) and not rule(floats.op)
    assert rule(v.op, pin_variables_on_cpu=True) and not rule(v.op)
    graph_def = tf.get_default_graph().as_graph_def()
    by_name = {n.name: n for n in graph_def.node}
    assert rule(by_name["words"]) and not rule(by_name["floats"])
