"""Graph building: names, scopes, lookups, collections, finalize, static shape errors."""

import numpy as np
import pytest

import flowstone as tf


def test_unique_names_and_tensor_names():
    a = tf.constant(1.0, name="Add")
    b = tf.constant(2.0, name="Add")
    c = tf.identity(a)
    d = tf.identity(a)
    assert a.name == "Add:0"
    assert b.name == "Add_1:0"
    assert c.op.name == "Identity" and d.op.name == "Identity_1"
    assert a.op.type == "Const"
    assert c.op.inputs[0] is a


def test_name_scopes_nest_and_are_unique():
    with tf.name_scope("layer") as scope:
        assert scope == "layer/"
        a = tf.constant(1.0, name="w")
        with tf.name_scope("inner"):
            b = tf.constant(1.0, name="w")
    with tf.name_scope("layer") as scope2:
        c = tf.constant(1.0, name="w")
    assert (a.op.name, b.op.name, c.op.name) == ("layer/w", "layer/inner/w", "layer_1/w")
    assert scope2 == "layer_1/"
    with tf.name_scope("layer/"):  # re-entering an existing scope exactly
        d = tf.constant(1.0, name="v")
    assert d.op.name == "layer/v"


def test_get_tensor_and_operation_by_name():
    g = tf.get_default_graph()
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    assert g.get_tensor_by_name("x:0") is x
    assert g.get_operation_by_name("x") is x.op
    with pytest.raises(KeyError, match="does not exist"):
        g.get_tensor_by_name("nope:0")
    with pytest.raises(KeyError, match="exists but only has 1 outputs"):
        g.get_tensor_by_name("x:3")
    with pytest.raises(ValueError, match="refers to an Operation, not a Tensor"):
        g.get_tensor_by_name("x")
    with pytest.raises(ValueError, match="appears to refer to a Tensor"):
        g.get_operation_by_name("x:0")


def test_graph_as_default_and_reset():
    g = tf.Graph()
    with g.as_default():
        a = tf.constant(1.0)
        assert tf.get_default_graph() is g
        with pytest.raises(AssertionError):
            tf.reset_default_graph()
    assert a.graph is g
    assert tf.get_default_graph() is not g
    before = tf.get_default_graph()
    tf.reset_default_graph()
    assert tf.get_default_graph() is not before


def test_tensors_from_different_graphs_cannot_mix():
    g = tf.Graph()
    with g.as_default():
        a = tf.constant(1.0)
    b = tf.constant(2.0)
    from flowstone.framework.ops import apply_op
    with pytest.raises(ValueError, match="same graph"):
        apply_op("AddV2", [a, b])


def test_finalize_blocks_growth():
    g = tf.Graph()
    with g.as_default():
        tf.constant(1.0)
        g.finalize()
        assert g.finalized
        with pytest.raises(RuntimeError, match="finalized"):
            tf.constant(2.0)


def test_collections():
    a = tf.constant(1.0)
    tf.add_to_collection("mine", a)
    tf.add_to_collections(["x", "y"], a)
    assert tf.get_collection("mine") == [a]
    assert tf.get_collection("y") == [a]
    assert tf.get_collection_ref("mine") is tf.get_collection_ref("mine")


def test_static_shapes_and_set_shape():
    x = tf.placeholder(tf.float32, [None, 224, 224, 3])
    assert x.shape.as_list() == [None, 224, 224, 3]
    assert str(x.shape) == "(None, 224, 224, 3)"
    assert x.get_shape().ndims == 4
    u = tf.placeholder(tf.float32)
    assert u.shape.ndims is None
    u.set_shape([2, None])
    assert u.shape.as_list() == [2, None]
    with pytest.raises(ValueError, match="not compatible"):
        u.set_shape([3])



def test_set_shape_informs_the_shapes_of_ops_built_afterwards():
    # TensorFlow records set_shape in the graph: downstream shape inference uses it (as when a
    # decoded image gets its static shape before a convolution).
    x = tf.placeholder(tf.float32)
    x.set_shape([None, 5, 3])
    assert tf.transpose(x, [1, 0, 2]).shape.as_list() == [5, None, 3]
    y = tf.reshape(x, [-1, 15])
    assert y.shape.as_list() == [None, 15]
    assert tf.reduce_sum(x, axis=1).shape.as_list() == [None, 3]
    # The refinement is the graph's: another Tensor object for the same output sees it.
    same = tf.get_default_graph().get_tensor_by_name(x.name)
    assert same.shape.as_list() == [None, 5, 3]
    with tf.Session() as sess:
        assert sess.run(y, {x: np.ones((2, 5, 3))}).shape == (2, 15)

def test_constant_dtype_inference_follows_tensorflow():
    assert tf.constant(1.0).dtype == tf.float32
    assert tf.constant(1).dtype == tf.int32
    assert tf.constant(2**40).dtype == tf.int64
    assert tf.constant(True).dtype == tf.bool
    assert tf.constant(np.float64(1.0)).dtype == tf.float64
    assert tf.constant(np.zeros(3, np.uint8)).dtype == tf.uint8
    assert tf.constant([1, 2], dtype=tf.float64).dtype == tf.float64
    assert tf.constant(0.5, shape=[2, 3]).shape.as_list() == [2, 3]
    with pytest.raises(TypeError, match="non-integer"):
        tf.constant(1.5, dtype=tf.int32)
    with pytest.raises(TypeError, match="Failed to convert"):
        tf.constant("text")


def test_device_scopes_merge_and_validate():
    with tf.device("/job:localhost/device:GPU:0"):
        with tf.device("/cpu:1"):
            a = tf.constant(1.0)
        with tf.device(None):
            b = tf.constant(1.0)
        c = tf.constant(1.0)
    assert a.device == "/job:localhost/device:CPU:1"
    assert b.device == ""
    assert c.device == "/job:localhost/device:GPU:0"
    with pytest.raises(ValueError, match=r"/job:<name>/replica:<int>/task:<int>/device:<TYPE>:<id>"):
        with tf.device("/gpu:zero"):
            pass


def test_control_dependencies():
    a = tf.constant(1.0)
    with tf.control_dependencies([a]):
        b = tf.constant(2.0)
        with tf.control_dependencies(None):
            c = tf.constant(3.0)
    assert b.op.control_inputs == [a.op]
    assert c.op.control_inputs == []


def test_tensor_is_not_a_bool():
    with pytest.raises(TypeError, match="as a Python `bool`"):
        bool(tf.constant(True))


def test_creation_site_points_at_user_code():
    a = tf.constant(1.0)
    assert "test_graph.py" in a.op._creation_site


def test_scalar_constants_stay_scalars():
    c = tf.constant(1.0)
    assert c.shape.as_list() == []
    with tf.Session() as sess:
        value = sess.run(c)
    assert value.shape == () and value == 1.0
