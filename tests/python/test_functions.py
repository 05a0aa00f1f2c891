"""Graph functions: tracing a Python callable into a function of the graph's library, calling it
with PartitionedCall, captures, nesting, gradients through calls, and calls that do not match the
function's signature. Also tf.nest, which structures the functions' inputs and outputs."""

import collections

import numpy as np
import pytest

import flowstone as tf
from flowstone import _C
from flowstone.framework.func_graph import FuncGraph
from flowstone.framework.ops import apply_op


def _define(graph, name, fn, arg_specs):
    """Traces fn over Placeholders of `arg_specs` [(dtype, shape)] into function `name`; returns
    the tensors of `graph` it captured."""
    body = FuncGraph(name, graph)
    args = [body.add_input(dtype, shape) for dtype, shape in arg_specs]
    with body.as_default():
        outputs = fn(*args)
    captured = [outer for outer, _ in body.captures]
    body.add_to_library(args + [inner for _, inner in body.captures], outputs)
    assert body.name == name
    return captured


def _call(name, inputs, tout, op="PartitionedCall"):
    return apply_op(op, [inputs], {"f": name, "Tout": tout}).outputs


def test_partitioned_call_runs_the_function_with_its_captures():
    graph = tf.get_default_graph()
    scale = tf.placeholder(tf.float32, [], name="scale")
    captured = _define(graph, "affine", lambda x, b: [x * scale + b, x - b],
                       [(tf.float32, [2]), (tf.float32, [])])
    assert captured == [scale]
    x = tf.constant([1.0, 2.0])
    y, z = _call("affine", [x, tf.constant(0.5), scale], [tf.float32, tf.float32])
    assert y.shape.as_list() == [2]  # the function's output shapes
    with tf.Session() as sess:
        got_y, got_z = sess.run([y, z], {scale: 3.0})
        np.testing.assert_array_equal(got_y, [3.5, 6.5])
        np.testing.assert_array_equal(got_z, [0.5, 1.5])
        # A second call reuses the compiled function.
        np.testing.assert_array_equal(sess.run(y, {scale: -1.0}), [-0.5, -1.5])


def test_functions_nest_and_find_each_other_in_the_shared_library():
    graph = tf.get_default_graph()
    _define(graph, "square", lambda x: [x * x], [(tf.float64, [])])

    def outer(x):
        (sq,) = _call("square", [x], [tf.float64])
        return [sq + 1.0]

    _define(graph, "square_plus_one", outer, [(tf.float64, [])])
    (y,) = _call("square_plus_one", [tf.constant(3.0, tf.float64)], [tf.float64],
                 op="StatefulPartitionedCall")
    with tf.Session() as sess:
        assert sess.run(y) == 10.0


def test_gradient_through_a_call_matches_finite_differences():
    graph = tf.get_default_graph()
    _define(graph, "f", lambda x, w: [tf.reduce_sum(tf.tanh(x * w)), tf.shape(x)],
            [(tf.float64, [3]), (tf.float64, [3])])
    x = tf.placeholder(tf.float64, [3])
    w = tf.constant([0.5, -1.0, 2.0], tf.float64)
    y, _ = _call("f", [x, w], [tf.float64, tf.int32])
    gx, gw = tf.gradients(y, [x, w])
    xv = np.array([0.1, 0.4, -0.3])
    wv = np.array([0.5, -1.0, 2.0])
    d = 1 - np.tanh(xv * wv) ** 2
    with tf.Session() as sess:
        got_x, got_w = sess.run([gx, gw], {x: xv})
    np.testing.assert_allclose(got_x, d * wv, rtol=1e-12)
    np.testing.assert_allclose(got_w, d * xv, rtol=1e-12)


def test_calls_that_do_not_match_the_signature_fail_at_construction():
    graph = tf.get_default_graph()
    _define(graph, "g", lambda x: [x + 1.0], [(tf.float32, [])])
    with pytest.raises(ValueError, match=r"function 'g' \(1 input, 1 output\).*takes 1 inputs, "
                                         r"but PartitionedCall passes 2"):
        _call("g", [tf.constant(1.0), tf.constant(2.0)], [tf.float32])
    with pytest.raises(TypeError, match=r"takes inputs of types \[float32\], but "
                                        r"PartitionedCall passes \[int32\]"):
        _call("g", [tf.constant(1)], [tf.float32])
    with pytest.raises(ValueError, match=r"returns 1 outputs, but PartitionedCall expects 2"):
        _call("g", [tf.constant(1.0)], [tf.float32, tf.float32])
    with pytest.raises(ValueError, match="'missing'.*is not in the graph's library"):
        _call("missing", [tf.constant(1.0)], [tf.float32])
    body = FuncGraph("g", graph)
    arg = body.add_input(tf.float32, [])
    with pytest.raises(_C.StatusError, match="a different function with the same name already"):
        graph._c.add_function("g", body._c, [arg._as_node_output()], [arg._as_node_output()])


def test_error_in_a_nested_function_names_each_function():
    graph = tf.get_default_graph()
    _define(graph, "inner", lambda x: [tf.reshape(x, [4], name="inner_reshape")],
            [(tf.float32, None)])
    _define(graph, "outer", lambda x: _call("inner", [x], [tf.float32]), [(tf.float32, None)])
    x = tf.placeholder(tf.float32, None)
    (y,) = _call("outer", [x], [tf.float32])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            sess.run(y, {x: np.zeros(3, np.float32)})
        message = str(info.value)
        assert "inner_reshape" in message
        assert message.index("in function inner") < message.index("in function outer")
        assert info.value.op is y.op
        np.testing.assert_array_equal(sess.run(y, {x: np.ones(4, np.float32)}), np.ones(4))


# --- tf.nest -----------------------------------------------------------------------------------

def test_nest_flatten_and_pack_round_trip():
    Point = collections.namedtuple("Point", "x y")
    structure = {"b": [1, (2, 3)], "a": Point(4, {"z": 5, "y": 6})}
    flat = tf.nest.flatten(structure)
    assert flat == [4, 6, 5, 1, 2, 3]  # dicts in sorted key order
    packed = tf.nest.pack_sequence_as(structure, [10, 60, 50, 1, 2, 3])
    assert packed == {"b": [1, (2, 3)], "a": Point(10, {"z": 50, "y": 60})}
    assert isinstance(packed["a"], Point)
    assert tf.nest.flatten(7) == [7]
    assert tf.nest.map_structure(lambda a, b: a + b, (1, [2]), (10, [20])) == (11, [22])


def test_nest_structure_errors():
    with pytest.raises(ValueError, match="Structure had 2 atoms, but flat_sequence had 3 items"):
        tf.nest.pack_sequence_as([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="don't have the same nested structure"):
        tf.nest.assert_same_structure([1, [2]], [1, 2])
    with pytest.raises(TypeError, match="same sequence type"):
        tf.nest.assert_same_structure([1, 2], (1, 2))
    tf.nest.assert_same_structure([1, 2], (1, 2), check_types=False)
