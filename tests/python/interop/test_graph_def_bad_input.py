"""A GraphDef is untrusted input: every malformed part is a clear error naming what is wrong,
never a crash or a huge allocation, and a failed import adds nothing to the graph."""

import numpy as np
import pytest

import flowstone as tf

DT_FLOAT, DT_INT32, DT_STRING = 1, 3, 7


def const_node(graph_def, name, values=(1.0,), dims=None):
    node = graph_def.node.add(name=name, op="Const")
    node.attr["dtype"].type = DT_FLOAT
    tensor = node.attr["value"].tensor
    tensor.dtype = DT_FLOAT
    for d in ([len(values)] if dims is None else dims):
        tensor.tensor_shape.dim.add().size = d
    tensor.float_val.extend(values)
    return node


def identity_node(graph_def, name, *inputs):
    node = graph_def.node.add(name=name, op="Identity", input=list(inputs))
    node.attr["T"].type = DT_FLOAT
    return node


def import_into_fresh_graph(graph_def, expected_error, match):
    with tf.Graph().as_default() as graph:
        with pytest.raises(expected_error, match=match) as info:
            tf.import_graph_def(graph_def, name="")
        assert graph.get_operations() == []
    return info.value


def test_unsupported_ops_are_all_listed_with_tensorflows_not_found_text():
    graph_def = tf.GraphDef()
    const_node(graph_def, "c")
    graph_def.node.add(name="n1", op="FancyOp", input=["c"])
    graph_def.node.add(name="n2", op="AnotherOp", input=["n1"])
    graph_def.node.add(name="n3", op="FancyOp", input=["n2"])
    error = import_into_fresh_graph(graph_def, tf.errors.NotFoundError,
                                    "Op type not registered 'AnotherOp' in binary running on ")
    assert "(node 'n2')" in str(error)
    assert "Flowstone lacks these ops of the GraphDef: AnotherOp, FancyOp" in str(error)


def test_duplicate_names():
    graph_def = tf.GraphDef()
    const_node(graph_def, "c")
    const_node(graph_def, "c")
    import_into_fresh_graph(graph_def, ValueError, "two nodes named 'c'")


def test_empty_name():
    graph_def = tf.GraphDef()
    const_node(graph_def, "")
    import_into_fresh_graph(graph_def, ValueError, "empty name")


def test_dangling_input():
    graph_def = tf.GraphDef()
    identity_node(graph_def, "out", "missing")
    import_into_fresh_graph(graph_def, ValueError, "Node 'out': Unknown input node 'missing'")


def test_cycle():
    graph_def = tf.GraphDef()
    const_node(graph_def, "c")
    identity_node(graph_def, "a", "b")
    identity_node(graph_def, "b", "a")
    import_into_fresh_graph(graph_def, ValueError, "GraphDef contains a cycle .*'a', 'b'")


@pytest.mark.parametrize("bad_input", ["c:abc", "c:", ":0", "^", "", "c:99999999999"])
def test_malformed_input_names(bad_input):
    graph_def = tf.GraphDef()
    const_node(graph_def, "c")
    identity_node(graph_def, "out", bad_input)
    import_into_fresh_graph(graph_def, ValueError, "malformed input")


def test_output_index_past_the_producers_outputs():
    graph_def = tf.GraphDef()
    const_node(graph_def, "c")
    identity_node(graph_def, "out", "c:3")
    import_into_fresh_graph(graph_def, ValueError, "refers to output 3 of 'c', which has 1")


def test_control_input_before_a_data_input():
    graph_def = tf.GraphDef()
    const_node(graph_def, "c")
    identity_node(graph_def, "out", "^c", "c")
    import_into_fresh_graph(graph_def, ValueError, "follows a control input")


def test_attr_of_the_wrong_form():
    graph_def = tf.GraphDef()
    node = graph_def.node.add(name="x", op="Placeholder")
    node.attr["dtype"].i = 1
    import_into_fresh_graph(graph_def, tf.errors.InvalidArgumentError,
                            "attr 'dtype' must be type but the GraphDef has int")


def test_invalid_dtype_number():
    graph_def = tf.GraphDef()
    node = graph_def.node.add(name="x", op="Placeholder")
    node.attr["dtype"].type = 77
    import_into_fresh_graph(graph_def, tf.errors.InvalidArgumentError,
                            "invalid DataType value 77")


def test_string_constant_is_unimplemented_until_the_string_dtype_lands():
    graph_def = tf.GraphDef()
    node = graph_def.node.add(name="s", op="Const")
    node.attr["dtype"].type = DT_STRING
    node.attr["value"].tensor.dtype = DT_STRING
    node.attr["value"].tensor.string_val.append(b"hello")
    import_into_fresh_graph(graph_def, tf.errors.UnimplementedError, "DT_STRING")


def test_negative_dimension():
    graph_def = tf.GraphDef()
    const_node(graph_def, "c", dims=[-5])
    import_into_fresh_graph(graph_def, tf.errors.InvalidArgumentError, "dimension -5")


def test_huge_shape_from_one_value_is_refused_without_allocating():
    graph_def = tf.GraphDef()
    const_node(graph_def, "c", values=[1.0], dims=[1 << 20, 1 << 20])
    import_into_fresh_graph(graph_def, tf.errors.InvalidArgumentError,
                            "larger than the 268435456 bytes Flowstone expands")


def test_shape_product_overflow():
    graph_def = tf.GraphDef()
    const_node(graph_def, "c", values=[1.0], dims=[1 << 40, 1 << 40])
    import_into_fresh_graph(graph_def, tf.errors.InvalidArgumentError, "overflows int64")


def test_rank_above_tensorflows_limit():
    graph_def = tf.GraphDef()
    const_node(graph_def, "c", values=[1.0], dims=[1] * 255)
    import_into_fresh_graph(graph_def, tf.errors.InvalidArgumentError, "maximum of 254")


def test_tensor_content_that_does_not_match_the_shape():
    graph_def = tf.GraphDef()
    node = const_node(graph_def, "c", values=[], dims=[4])
    node.attr["value"].tensor.tensor_content = b"\x00" * 12
    import_into_fresh_graph(graph_def, tf.errors.InvalidArgumentError,
                            "tensor_content has 12 bytes but a float32 tensor of shape .4. needs 16")


def test_more_values_than_elements():
    graph_def = tf.GraphDef()
    const_node(graph_def, "c", values=[1.0, 2.0, 3.0], dims=[2])
    import_into_fresh_graph(graph_def, tf.errors.InvalidArgumentError, "holds 3 values")


def test_fewer_values_repeat_the_last_one_as_in_tensorflow():
    graph_def = tf.GraphDef()
    const_node(graph_def, "c", values=[1.0, 2.0], dims=[2, 2])
    with tf.Graph().as_default():
        (c,) = tf.import_graph_def(graph_def, return_elements=["c:0"], name="")
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(c), [[1.0, 2.0], [2.0, 2.0]])


def test_type_mismatch_between_nodes_adds_nothing():
    graph_def = tf.GraphDef()
    const_node(graph_def, "c")
    node = graph_def.node.add(name="i", op="Identity", input=["c"])
    node.attr["T"].type = DT_INT32
    import_into_fresh_graph(graph_def, TypeError, "Node 'i' \\(Identity\\) of the GraphDef")


def test_unknown_attr_with_a_non_default_value_is_refused_and_a_neutral_one_dropped():
    graph_def = tf.GraphDef()
    const_node(graph_def, "c", values=[1.0, 2.0, 3.0, 4.0], dims=[2, 2])
    matmul = graph_def.node.add(name="m", op="MatMul", input=["c", "c"])
    matmul.attr["T"].type = DT_FLOAT
    matmul.attr["grad_a"].b = False  # added to MatMul by TensorFlow 2.12, default false
    with tf.Graph().as_default():
        (m,) = tf.import_graph_def(graph_def, return_elements=["m:0"], name="")
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(m), [[7.0, 10.0], [15.0, 22.0]])
    matmul.attr["fancy_mode"].i = 3
    import_into_fresh_graph(graph_def, ValueError,
                            "attr 'fancy_mode' is not an attr of Flowstone's MatMul op")


def test_name_clash_with_the_destination_graph():
    graph_def = tf.GraphDef()
    const_node(graph_def, "c")
    with tf.Graph().as_default() as graph:
        tf.constant(1.0, name="c")
        with pytest.raises(ValueError, match="already has a node of that name"):
            tf.import_graph_def(graph_def, name="")
        assert len(graph.get_operations()) == 1


def test_session_still_works_after_a_failed_import():
    with tf.Graph().as_default():
        x = tf.constant(3.0)
        bad = tf.GraphDef()
        identity_node(bad, "out", "missing")
        with pytest.raises(ValueError):
            tf.import_graph_def(bad)
        with tf.Session() as sess:
            assert sess.run(x * 2.0) == 6.0


def test_error_quoting_bytes_that_are_not_utf8_is_still_a_clear_error():
    # Found by tests/fuzz/fuzz_formats.py: the message quoted the attr's bytes and its
    # conversion to str failed with a bare RuntimeError.
    graph_def = tf.GraphDef()
    x = graph_def.node.add(name="x", op="Placeholder")
    x.attr["dtype"].type = DT_FLOAT
    conv = graph_def.node.add(name="c", op="Conv2D", input=["x", "x"])
    conv.attr["T"].type = DT_FLOAT
    conv.attr["strides"].list.i.extend([1, 1, 1, 1])
    conv.attr["padding"].s = b"\xff\xfe"
    error = import_into_fresh_graph(graph_def, ValueError, "padding")
    assert "\\xff\\xfe" in str(error)
