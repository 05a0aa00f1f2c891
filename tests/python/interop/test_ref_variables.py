"""TF1 reference variables (VariableV2, Assign, AssignAdd, AssignSub, IsVariableInitialized) in
imported graphs: the importer makes them resource variables under the same names."""

import numpy as np

import flowstone as tf
from tf_oracle import requires_tensorflow, run_tensorflow

DT_FLOAT = 1


def ref_variable_graph():
    """v = VariableV2 [2] initialized to [1, 2] by v/Assign; add = AssignAdd(v, [10, 20]);
    init = IsVariableInitialized(v); out = Identity(v)."""
    graph_def = tf.GraphDef()
    v = graph_def.node.add(name="v", op="VariableV2")
    v.attr["dtype"].type = DT_FLOAT
    v.attr["shape"].shape.dim.add().size = 2
    initial = graph_def.node.add(name="v/initial_value", op="Const")
    initial.attr["dtype"].type = DT_FLOAT
    initial.attr["value"].tensor.dtype = DT_FLOAT
    initial.attr["value"].tensor.tensor_shape.dim.add().size = 2
    initial.attr["value"].tensor.float_val.extend([1.0, 2.0])
    graph_def.node.add(name="v/Assign", op="Assign", input=["v", "v/initial_value"]) \
        .attr["T"].type = DT_FLOAT
    delta = graph_def.node.add(name="delta", op="Const")
    delta.attr["dtype"].type = DT_FLOAT
    delta.attr["value"].tensor.dtype = DT_FLOAT
    delta.attr["value"].tensor.tensor_shape.dim.add().size = 2
    delta.attr["value"].tensor.float_val.extend([10.0, 20.0])
    graph_def.node.add(name="add", op="AssignAdd", input=["v", "delta"]).attr["T"].type = DT_FLOAT
    graph_def.node.add(name="is_init", op="IsVariableInitialized", input=["v"]) \
        .attr["dtype"].type = DT_FLOAT
    graph_def.node.add(name="out", op="Identity", input=["v"]).attr["T"].type = DT_FLOAT
    return graph_def


def test_ref_variable_ops_run_as_resource_variables():
    with tf.Graph().as_default() as graph:
        tf.import_graph_def(ref_variable_graph(), name="")
        assert graph.get_operation_by_name("v/_handle").type == "VarHandleOp"
        with tf.Session() as sess:
            assert not sess.run("is_init:0")
            np.testing.assert_array_equal(sess.run("v/Assign:0"), [1.0, 2.0])
            assert sess.run("is_init:0")
            np.testing.assert_array_equal(sess.run("add:0"), [11.0, 22.0])
            np.testing.assert_array_equal(sess.run("out:0"), [11.0, 22.0])
            with tf.Session() as other:  # values live per session, as for any variable
                try:
                    other.run("out:0")
                    raise AssertionError("expected an uninitialized-variable error")
                except tf.errors.FailedPreconditionError as e:
                    assert "uninitialized" in str(e)


@requires_tensorflow
def test_tf1_ref_variable_model_trains_state_across_systems(tmp_path):
    np.save(tmp_path / "feed.npy", np.array([[1.0, 2.0, 3.0]], np.float32))
    run_tensorflow("""
        import numpy as np
        import tensorflow as tf
        tf1 = tf.compat.v1
        tf1.disable_eager_execution()
        tf1.disable_resource_variables()
        x = tf1.placeholder(tf.float32, [None, 3], name="x")
        w = tf1.Variable(np.arange(6, dtype=np.float32).reshape(3, 2) / 5, name="w")
        step = tf1.Variable(0, name="step")
        bump = tf1.assign_add(step, 1, name="bump")
        y = tf1.identity(tf1.matmul(x, w), name="y")
        assert w.op.type == "VariableV2"
        with tf1.Session() as sess:
            sess.run(tf1.global_variables_initializer())
            sess.run(tf1.assign(w, w * 2.0))
            sess.run(bump)
            np.save("expected.npy", sess.run(y, {x: np.load("feed.npy")}))
            tf1.train.Saver().save(sess, "./model.ckpt")
    """, tmp_path)
    with tf.Graph().as_default() as graph:
        saver = tf.train.import_meta_graph(str(tmp_path / "model.ckpt.meta"))
        assert sorted(v.name for v in tf.global_variables()) == ["step:0", "w:0"]
        with tf.Session() as sess:
            saver.restore(sess, str(tmp_path / "model.ckpt"))
            feed = np.load(tmp_path / "feed.npy")
            np.testing.assert_allclose(sess.run("y:0", {"x:0": feed}),
                                       np.load(tmp_path / "expected.npy"), rtol=1e-6)
            assert sess.run("bump:0") == 2
            sess.run(tf.global_variables_initializer())
            assert sess.run(graph.get_tensor_by_name("step:0")) == 0
